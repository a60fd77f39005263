// Regex -> GBNF against Python's re.fullmatch: the "regexes" of json_schema_cases.json (written by
// gen_json_schema_cases.py from Python itself) hold patterns with candidate strings and whether
// Python matches them. A candidate marked "subset" is one where Python's Unicode-wide \d \w \s or
// `.` differs from the documented reading both dialects share: it may be rejected, never accepted
// when Python does not match. Then the refusals, with their positions, and hostile sizes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "sampler/grammar/grammar.h"
#include "sampler/grammar/regex_gbnf.h"
#include "test_support.h"

namespace glia::grammar::regex_test {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& regex_corpus() {
  static const ojson doc = [] {
    const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path();
    return ojson::parse(test::read_text((here / "json_schema_cases.json").string()))["regexes"];
  }();
  return doc;
}

std::shared_ptr<const compiled> regex_grammar(std::string_view regex) {
  auto text = regex_to_gbnf(regex);
  EXPECT_TRUE(text.is_ok()) << regex << ": " << text.message();
  if (!text.is_ok()) return nullptr;
  auto g = parse_gbnf(*text);
  EXPECT_TRUE(g.is_ok()) << regex << ": " << g.message() << "\n" << *text;
  return g.is_ok() ? *g : nullptr;
}

TEST(RegexGbnf, AgreesWithPythonFullmatch) {
  size_t checked = 0;
  ASSERT_GE(regex_corpus().size(), 40u);
  for (const auto& r : regex_corpus()) {
    const std::string regex = r["regex"];
    auto g = regex_grammar(regex);
    if (!g) continue;
    for (const auto& c : r["cases"]) {
      const std::string text = c["text"];
      const bool expected = c["match"];
      const bool got = matches(*g, text);
      ++checked;
      if (got && !expected) {
        ADD_FAILURE() << regex << " accepts " << ojson(text).dump() << "\n" << *regex_to_gbnf(regex);
      } else if (!got && expected && !c.contains("subset")) {
        ADD_FAILURE() << regex << " rejects " << ojson(text).dump() << "\n" << *regex_to_gbnf(regex);
      }
    }
  }
  EXPECT_GE(checked, 500u);
}

TEST(RegexGbnf, AnchorsAtTheEndsChangeNothing) {
  for (const char* regex : {"abc", "^abc", "abc$", "^abc$"}) {
    auto g = regex_grammar(regex);
    ASSERT_TRUE(g);
    EXPECT_TRUE(matches(*g, "abc")) << regex;
    EXPECT_FALSE(matches(*g, "xabc")) << regex;
    EXPECT_FALSE(matches(*g, "abc\n")) << regex;
  }
}

// An escape and its complement in one class are every character ([\s\S]); an escaped character that
// is no class escape is itself, however its code point ends (\u0153 is not \S).
TEST(RegexGbnf, ComplementaryClassEscapesAreEveryCharacter) {
  auto any = regex_grammar(R"([\s\S]+)");
  ASSERT_TRUE(any);
  EXPECT_TRUE(matches(*any, "a\n\xC3\xA9\x1C\xEF\xBB\xBF"));
  auto space_or_oe = regex_grammar("[\\s\\\xC5\x93]");  // [\s\œ]
  ASSERT_TRUE(space_or_oe);
  EXPECT_TRUE(matches(*space_or_oe, "\xC5\x93"));
  EXPECT_FALSE(matches(*space_or_oe, "a"));
}

TEST(RegexGbnf, EmptyPatternMatchesTheEmptyString) {
  for (const char* regex : {"", "^$", "()", "(?:)|", "a{0}"}) {
    auto g = regex_grammar(regex);
    ASSERT_TRUE(g);
    EXPECT_TRUE(matches(*g, "")) << regex;
    EXPECT_FALSE(matches(*g, "a")) << regex;
  }
}

struct regex_refusal {
  const char* regex;
  std::vector<const char*> mentions;
};

TEST(RegexGbnf, RefusesWhatItCannotExpressWithThePosition) {
  const std::vector<regex_refusal> cases = {
      {"(a)\\1", {"backreference", "position 3"}},
      {"(?=a)b", {"lookaround", "position 0"}},
      {"x(?!a)", {"lookaround", "position 1"}},
      {"(?<=a)b", {"lookaround"}},
      {"(?<!a)b", {"lookaround"}},
      {"(?P<name>a)", {"named group"}},
      {"(?<name>a)", {"named group"}},
      {"(?i)abc", {"position 0"}},
      {"(?>a)", {"position 0"}},
      {"a\\bc", {"\\b", "position 1"}},
      {"\\Babc", {"\\B"}},
      {"\\Aabc", {"anchor"}},
      {"abc\\Z", {"anchor", "position 3"}},
      {"a^b", {"'^'", "position 1"}},
      {"a$b", {"'$'", "position 1"}},
      {"(^a)", {"'^'", "position 1"}},
      {"(a$)", {"'$'", "position 2"}},
      {"a*+", {"possessive", "position 2"}},
      {"a**", {"multiple repeat", "position 2"}},
      {"a{2}{3}", {"multiple repeat"}},
      {"*a", {"nothing to repeat", "position 0"}},
      {"a|?", {"nothing to repeat", "position 2"}},
      {"{2}", {"nothing to repeat"}},
      {"a{,3}", {"{,n}", "position 1"}},
      {"a{3,2}", {"m > n"}},
      {"[]a]", {"']'", "position 0"}},
      {"[^]", {"']'"}},
      {"[a", {"missing ']'", "position 0"}},
      {"(a", {"missing ')'", "position 0"}},
      {"a)", {"unbalanced ')'", "position 1"}},
      {"[z-a]", {"out of order", "position 1"}},
      {"[\\d-z]", {"class escape"}},
      {"\\", {"trailing backslash", "position 0"}},
      {"\\k<a>", {"named backreference"}},
      {"\\p{L}", {"Unicode property"}},
      {"\\q", {"unknown escape"}},
      {"\\x4", {"hex digits"}},
      {"\\u12G4", {"hex digits"}},
      {"\\ud800", {"surrogate"}},
      {"\\01", {"octal"}},
      {"[^\\x00-\\U0010FFFF]", {"unknown escape"}},
      {"a{100001}", {"limit"}},
  };
  for (const regex_refusal& c : cases) {
    auto r = regex_to_gbnf(c.regex);
    ASSERT_FALSE(r.is_ok()) << c.regex << " -> " << *r;
    const std::string& m = r.message();
    EXPECT_EQ(m.rfind("regex: ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    for (const char* s : c.mentions) EXPECT_NE(m.find(s), std::string::npos) << c.regex << ": '" << s << "' not in: " << m;
  }
}

TEST(RegexGbnf, RefusesHostileSizesQuickly) {
  const double start = test::thread_cpu_seconds();
  EXPECT_FALSE(regex_to_gbnf(std::string(5000, '(') + "a" + std::string(5000, ')')).is_ok());
  EXPECT_FALSE(regex_to_gbnf(std::string(20000, 'a')).is_ok());
  EXPECT_FALSE(regex_to_gbnf("((a{1000}){1000}){1000}").is_ok());
  EXPECT_FALSE(regex_to_gbnf("(((((a*)*)*)*)*){99999}").is_ok());
  EXPECT_FALSE(regex_to_gbnf("a{99999999999999999999999}").is_ok());
  EXPECT_FALSE(regex_to_gbnf("\xff\xfe").is_ok());
  // (x?y?...)* is rewritten without its empty string: quadratic in the optional parts, so bounded.
  std::string optionals = "(";
  for (int i = 0; i < 2000; ++i) optionals += "a?";
  EXPECT_FALSE(regex_to_gbnf(optionals + ")*").is_ok());
  EXPECT_FALSE(regex_to_gbnf(std::string("a\0b", 3) + "\xc3").is_ok());
  // Within the limits: nesting 60 deep, counts up to the limit, a long literal.
  EXPECT_TRUE(regex_grammar(std::string(60, '(') + "a" + std::string(60, ')')));
  EXPECT_TRUE(regex_grammar("[a-z]{0,10000}"));
  EXPECT_TRUE(regex_grammar(std::string(9000, 'x')));
  EXPECT_TRUE(regex_grammar("(a?b?c?d?e?f?g?h?)*z"));
  EXPECT_LT(test::thread_cpu_seconds() - start, 20.0);
}

TEST(RegexGbnf, NulAndNonAsciiCharactersPassThrough) {
  auto g = regex_grammar(std::string("a\0[\xc3\xa9-\xc3\xbf]", 9));
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, std::string("a\0\xc3\xa9", 4)));
  EXPECT_FALSE(matches(*g, std::string("a\0e", 3)));
}

}  // namespace
}  // namespace glia::grammar::regex_test
