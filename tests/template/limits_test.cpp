// Hostile templates: each must come back with an error, quickly, instead of hanging, overflowing
// the stack or exhausting memory. Budgets are configurable and the defaults fit real templates
// (the pack test renders all of them with the defaults).
#include <gtest/gtest.h>

#include "template_test_util.h"
#include "test_support.h"

namespace glia {
namespace {

struct hostile {
  const char* name;
  std::string source;
  const char* error;  // a piece of the expected message
};

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::vector<hostile> hostile_templates() {
  return {
      {"infinite_macro_recursion", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro calls nest deeper"},
      {"mutual_recursion", "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}",
       "macro calls nest deeper"},
      {"huge_range", "{% for i in range(10**9) %}{{ i }}{% endfor %}", "Range too big"},
      {"nested_loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps"},
      {"huge_string_repeat", "{{ 'x' * 10**12 }}", "exceeds the limit"},
      {"string_doubling",
       "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
       "LimitExceeded"},
      {"list_doubling",
       "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}",
       "LimitExceeded"},
      {"list_repeat", "{{ ([1] * 10**12)|length }}", "LimitExceeded"},
      {"slice_columns", "{{ [1]|slice(2**40)|list|length }}", "LimitExceeded"},
      {"batch_fill", "{{ [1]|batch(2**40, 0)|list|length }}", "LimitExceeded"},
      {"output_flood", "{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}", "LimitExceeded"},
      {"deep_parentheses", "{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}", "nests deeper"},
      {"deep_lists_literal", "{{ " + repeat("[", 100000) + repeat("]", 100000) + " }}", "nests deeper"},
      {"deep_unary", "{{ " + repeat("not ", 100000) + "1 }}", "nests deeper"},
      {"deep_ifs", repeat("{% if true %}", 20000) + "x" + repeat("{% endif %}", 20000), "nests deeper"},
      {"deep_values",
       "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
       "nest deeper"},
      {"namespace_cycle", "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "namespace inside a namespace"},
      {"namespace_cycle_in_list", "{% set ns = namespace() %}{% set ns.l = [1, [ns]] %}{{ ns }}",
       "namespace inside a namespace"},
      {"replace_blowup",
       "{% set ns = namespace(s='aaaaaaaaaa') %}{% for i in range(50) %}{% set ns.s = ns.s.replace('a', 'aaaaaaaaaa') %}{% endfor %}",
       "LimitExceeded"},
      {"join_blowup", "{{ (range(100000)|map('string')|join('x' * 100000))|length }}", "LimitExceeded"},
  };
}

class hostile_template : public ::testing::TestWithParam<hostile> {};

// Bounded in CPU time: "fails fast" is about the work a template can make the renderer do, not about
// how busy the machine is (wall time under ASan on a loaded 2-core runner went from 3 to 10 s).
TEST_P(hostile_template, fails_fast) {
  const hostile& h = GetParam();
  const double t0 = test::thread_cpu_seconds();
  auto r = test::render_fixed_clock(h.source, jinja::json::object());
  const double secs = test::thread_cpu_seconds() - t0;
  ASSERT_FALSE(r.is_ok()) << "rendered " << r->size() << " bytes";
  EXPECT_NE(r.message().find(h.error), std::string::npos) << r.message();
  EXPECT_LT(secs, 10.0) << "took " << secs << " s of CPU";
}

INSTANTIATE_TEST_SUITE_P(limits, hostile_template, ::testing::ValuesIn(hostile_templates()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(template_limits, budgets_are_configurable) {
  const std::string src = "{% for i in range(1000) %}{{ i }},{% endfor %}";
  ASSERT_TRUE(test::render_fixed_clock(src, jinja::json::object()).is_ok());

  jinja::render_limits small;
  small.max_output_bytes = 100;
  auto out = test::render_fixed_clock(src, jinja::json::object(), small);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.message().find("output exceeds 100 bytes"), std::string::npos) << out.message();

  jinja::render_limits few_steps;
  few_steps.max_steps = 500;
  auto steps = test::render_fixed_clock(src, jinja::json::object(), few_steps);
  ASSERT_FALSE(steps.is_ok());
  EXPECT_NE(steps.message().find("more than 500 steps"), std::string::npos) << steps.message();

  jinja::render_limits shallow;
  shallow.max_call_depth = 3;
  const std::string rec = "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}";
  EXPECT_EQ(*test::render_fixed_clock(rec + "{{ f(2) }}", jinja::json::object(), shallow), "012");
  EXPECT_FALSE(test::render_fixed_clock(rec + "{{ f(3) }}", jinja::json::object(), shallow).is_ok());

  jinja::render_limits tiny_template;
  tiny_template.max_template_bytes = 10;
  EXPECT_FALSE(test::render_fixed_clock(src, jinja::json::object(), tiny_template).is_ok());
}

// Gemma 4's own template rescans the earlier messages for each one (about 4 n^2 steps for n
// messages): a long conversation still renders, as the step budget of a chat grows with the square
// of its length (1500 messages went past the flat 5M steps); a hostile loop still stops.
TEST(template_limits, a_long_conversation_renders_with_a_quadratic_template) {
  jinja::chat_inputs in;
  for (int i = 0; i < 1500; ++i)
    in.messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "message " + std::to_string(i)}});
  in.tokens = {{"bos_token", "<bos>"}};
  auto rendered = jinja::render_chat(test::read_text(test::testdata("chat_templates/templates/google-gemma-4-31B-it.jinja")), in);
  ASSERT_TRUE(rendered.is_ok()) << rendered.message();
  EXPECT_NE(rendered->find("message 1499"), std::string::npos);
  in.messages = jinja::json::array({{{"role", "user"}, {"content", "x"}}});
  auto hostile = jinja::render_chat("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", in);
  ASSERT_FALSE(hostile.is_ok());
  EXPECT_NE(hostile.message().find("steps"), std::string::npos) << hostile.message();
}

TEST(template_limits, deep_json_input_is_refused) {
  jinja::json deep = jinja::json::array();
  for (int i = 0; i < 1000; ++i) deep = jinja::json::array({deep});
  auto r = test::render_fixed_clock("{{ x|length }}", jinja::json{{"x", deep}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("nests deeper"), std::string::npos) << r.message();
}

TEST(template_limits, errors_name_the_line) {
  auto r = test::render_fixed_clock("line one\n{{ 1 }}\n{{ 'a' + 1 }}", jinja::json::object());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.message(), "line 3: TypeError: can only concatenate str (not \"int\") to str");

  auto unsupported = test::render_fixed_clock("a\n{% include 'other.jinja' %}", jinja::json::object());
  ASSERT_FALSE(unsupported.is_ok());
  EXPECT_NE(unsupported.message().find("line 2: unsupported statement 'include'"), std::string::npos)
      << unsupported.message();

  auto recursive = test::render_fixed_clock("{% for x in l recursive %}{% endfor %}", jinja::json::object());
  ASSERT_FALSE(recursive.is_ok());
  EXPECT_NE(recursive.message().find("line 1: unsupported: recursive for loops"), std::string::npos)
      << recursive.message();
}

TEST(template_limits, raise_exception_returns_the_message_exactly) {
  auto r = test::render_fixed_clock("{% for i in [1] %}\n{{ raise_exception('Bad role: ' ~ i) }}{% endfor %}",
                                    jinja::json::object());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.message(), "Bad role: 1");
}

}  // namespace
}  // namespace glia
