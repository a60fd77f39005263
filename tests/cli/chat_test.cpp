// glia chat driven through its standard input and output, as a person (or a script) would.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <regex>
#include <thread>

#include "gguf/gguf.h"
#include "child_process.h"
#include "test_support.h"

namespace glia {
namespace {

using child = test::child_process;

// brown-f32 with `source` written into tokenizer.chat_template: by default a real chat template from
// the pack.
std::string brown_with_template(const std::string& name = "chat", std::optional<std::string> source = std::nullopt) {
  // One file per test process: ctest runs tests in parallel.
  const std::string path = test::scratch("brown-" + name + "-" + std::to_string(::getpid()) + ".gguf");
  auto f = gguf::file::open(test::testdata("models/brown-f32.gguf"));
  EXPECT_TRUE(f.is_ok());
  gguf::writer w;
  w.copy_metadata(**f);
  EXPECT_TRUE(w.copy_tensors(**f).is_ok());
  w.set_string("tokenizer.chat_template",
               source ? *source : test::read_text(test::testdata("chat_templates/templates/Qwen-Qwen2.5-7B-Instruct.jinja")));
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

struct turn_stat {
  int prompt, reused, evaluated, generated;
};

std::vector<turn_stat> turn_stats(const std::string& err) {
  std::vector<turn_stat> out;
  std::regex re(R"(\[turn \d+: (\d+) prompt tokens, (\d+) reused, (\d+) evaluated, (\d+) generated\])");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoi((*it)[3]), std::stoi((*it)[4])});
  return out;
}

TEST(chat, three_turns_with_a_real_template_evaluate_only_new_tokens) {
  child c({test::cli_path(), "chat", "-m", brown_with_template(), "--temp", "0", "-n", "12", "--verbose", "--system",
           "You are a newspaper reporter."});
  c.write("What did the jury say?\nAnd then?\nWhere was the mayor?\n");
  c.close_input();
  ASSERT_EQ(c.wait_exit(60000), 0) << c.err;
  EXPECT_EQ(c.err.find("no chat template"), std::string::npos) << c.err;
  auto turns = turn_stats(c.err);
  ASSERT_EQ(turns.size(), 3u) << c.err;
  EXPECT_EQ(turns[0].reused, 0);
  for (size_t i = 1; i < turns.size(); ++i) {
    // Everything the previous turn put in the cache is reused; only the new turn's text is evaluated.
    EXPECT_GE(turns[i].reused, turns[i - 1].prompt) << c.err;
    EXPECT_EQ(turns[i].reused + turns[i].evaluated, turns[i].prompt);
    EXPECT_LT(turns[i].evaluated, turns[i].prompt - turns[i - 1].prompt + 4) << c.err;
  }
}

TEST(chat, model_without_template_falls_back_to_chatml_with_a_warning) {
  child c({test::cli_path(), "chat", "-m", test::testdata("models/brown-f32.gguf"), "--temp", "0", "-n", "4"});
  c.write("Hello\n/exit\n");
  ASSERT_EQ(c.wait_exit(30000), 0) << c.err;
  EXPECT_NE(c.err.find("warning: the model has no chat template; using ChatML"), std::string::npos) << c.err;
}

// --chat-template-kwargs: template variables for every turn (the server's test shows their effect).
TEST(chat, chat_template_kwargs_must_be_a_json_object) {
  child ok({test::cli_path(), "chat", "-m", brown_with_template(), "--temp", "0", "-n", "2", "--chat-template-kwargs",
            R"({"enable_thinking": false})"});
  ok.write("Hello\n/exit\n");
  EXPECT_EQ(ok.wait_exit(30000), 0) << ok.err;
  child bad({test::cli_path(), "chat", "-m", brown_with_template(), "--chat-template-kwargs", "enable_thinking"});
  bad.write("/exit\n");
  EXPECT_EQ(bad.wait_exit(30000), 1);
  EXPECT_NE(bad.err.find("--chat-template-kwargs must be a JSON object"), std::string::npos) << bad.err;
}

// Text that is not UTF-8 (a Latin-1 file piped in, a --system string) reaches the template with
// U+FFFD for the bad bytes, as the server and `glia run` treat it, instead of ending the chat.
TEST(chat, input_that_is_not_utf8_is_answered) {
  child c({test::cli_path(), "chat", "-m", brown_with_template(), "--temp", "0", "-n", "4", "--verbose", "--system",
           "caf\xe9"});
  c.write("caf\xe9 au lait\nAnd then?\n");
  c.close_input();
  ASSERT_EQ(c.wait_exit(30000), 0) << c.err;
  EXPECT_EQ(turn_stats(c.err).size(), 2u) << c.err;
}

// Input with Windows line ends: the commands still work and no carriage return reaches the model.
TEST(chat, windows_line_ends_are_plain_line_ends) {
  child crlf({test::cli_path(), "chat", "-m", brown_with_template(), "--temp", "0", "-n", "4", "--verbose"});
  crlf.write("One\r\n/clear\r\nOne\r\n/exit\r\nNever sent\r\n");
  ASSERT_EQ(crlf.wait_exit(30000), 0) << crlf.err;
  auto turns = turn_stats(crlf.err);
  ASSERT_EQ(turns.size(), 2u) << crlf.err;
  EXPECT_EQ(turns[1].reused, 0);
  child lf({test::cli_path(), "chat", "-m", brown_with_template(), "--temp", "0", "-n", "4", "--verbose"});
  lf.write("One\n");
  lf.close_input();
  ASSERT_EQ(lf.wait_exit(30000), 0) << lf.err;
  EXPECT_EQ(turn_stats(lf.err)[0].prompt, turns[0].prompt);
  EXPECT_EQ(lf.out, crlf.out.substr(0, lf.out.size()));
}

// A model whose own template does not parse falls back to ChatML with a warning that says why, as
// llama.cpp does (a template given with --chat-template that does not parse is refused: cli_test).
TEST(chat, a_model_template_that_does_not_parse_falls_back_to_chatml) {
  const std::string path = brown_with_template("bad-template", "{% for m in messages %}{{ m.content }");
  child c({test::cli_path(), "chat", "-m", path, "--temp", "0", "-n", "4"});
  c.write("Hello\n/exit\n");
  ASSERT_EQ(c.wait_exit(30000), 0) << c.err;
  EXPECT_NE(c.err.find("warning: the model's chat template does not parse (line 1"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("using ChatML"), std::string::npos) << c.err;
}

// A template that raises for one message: the error is shown, the chat goes on to the next, and the
// exit code says a message went unanswered.
TEST(chat, a_message_the_template_refuses_is_skipped_and_the_exit_code_says_so) {
  const std::string path = brown_with_template(
      "raising-template",
      "{% for m in messages %}{% if m.content == 'bad' %}{{ raise_exception('no bad words') }}{% endif %}"
      "{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:");
  child c({test::cli_path(), "chat", "-m", path, "--temp", "0", "-n", "2", "--verbose"});
  c.write("bad\nHello\n/exit\n");
  EXPECT_EQ(c.wait_exit(30000), 1) << c.err;
  EXPECT_NE(c.err.find("error: chat template: no bad words"), std::string::npos) << c.err;
  EXPECT_EQ(turn_stats(c.err).size(), 1u) << c.err;  // "Hello" was answered
}

// A message for which the template renders nothing is skipped like a refused one (it ended the
// whole chat with "empty prompt").
TEST(chat, a_message_rendered_as_nothing_is_skipped) {
  const std::string path = brown_with_template("empty-template", "{% if messages|length > 1 %}{{ messages[-1].content }}{% endif %}");
  child c({test::cli_path(), "chat", "-m", path, "--temp", "0", "-n", "2", "--verbose"});
  c.write("first\nsecond\n/exit\n");
  EXPECT_EQ(c.wait_exit(30000), 1) << c.err;
  // Both messages were read: "first" was dropped, so "second" alone renders nothing again.
  const std::string msg = "the chat template rendered nothing for this message";
  const size_t at = c.err.find(msg);
  ASSERT_NE(at, std::string::npos) << c.err;
  EXPECT_NE(c.err.find(msg, at + 1), std::string::npos) << c.err;
  EXPECT_EQ(turn_stats(c.err).size(), 0u) << c.err;
}

TEST(chat, clear_forgets_the_conversation) {
  child c({test::cli_path(), "chat", "-m", brown_with_template(), "--temp", "0", "-n", "4", "--verbose"});
  c.write("One\n/clear\nOne\n");
  c.close_input();
  ASSERT_EQ(c.wait_exit(30000), 0) << c.err;
  auto turns = turn_stats(c.err);
  ASSERT_EQ(turns.size(), 2u) << c.err;
  EXPECT_EQ(turns[1].reused, 0);
  EXPECT_EQ(turns[1].prompt, turns[0].prompt);
}

TEST(chat, ctrl_c_stops_the_answer_and_returns_to_the_prompt) {
  // A long answer (-n -1 and a big context), interrupted once output has started.
  child c({test::cli_path(), "chat", "-m", brown_with_template(), "--temp", "0", "-n", "-1", "-c", "4096", "--verbose"});
  c.write("Tell me a long story.\n");
  c.pump(20000, "", " ");
  c.signal(SIGINT);
  c.pump(10000, "(stopped)");
  EXPECT_NE(c.err.find("(stopped)"), std::string::npos) << c.err;
  // Back at the prompt: the next commands are read and obeyed.
  c.write("/clear\n/exit\n");
  ASSERT_EQ(c.wait_exit(60000), 0) << c.err;
  EXPECT_NE(c.err.find("(conversation cleared)"), std::string::npos) << c.err;
  EXPECT_EQ(turn_stats(c.err).size(), 1u) << c.err;
}

// A reasoning budget in the chat, as llama-cli's --reasoning-budget: with a template that opens the
// reasoning (as the R1 distills'), the answer thinks two tokens, then its close tag is forced (here
// plain text: the Brown model has no such token), after the budget's message.
TEST(chat, reasoning_budget_closes_the_thinking) {
  const std::string path = brown_with_template(
      "think-template", "{% for m in messages %}{{ m.role }}: {{ m.content.split('</think>')[-1] }}\n{% endfor %}"
      "{% if add_generation_prompt %}assistant: <think>\n{% endif %}");
  const auto answer = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {test::cli_path(), "chat", "-m", path, "--temp", "0", "-n", "16"};
    args.insert(args.end(), extra.begin(), extra.end());
    child c(args);
    c.write("The jury said\n/exit\n");
    EXPECT_EQ(c.wait_exit(30000), 0) << c.err;
    return c.out;
  };
  const std::string free = answer({});
  EXPECT_EQ(free.find("</think>"), std::string::npos) << free;
  // What came before the forced close: a prefix of the free answer, one token longer for a budget of 2
  // than of 1 (the message's tokens start with the SentencePiece word-start space, as llama.cpp's).
  const auto thought = [&](const std::string& budget) {
    const std::string out = answer({"--reasoning-budget", budget, "--reasoning-budget-message", "\\nDone."});
    const size_t close = out.find("\nDone.</think>");
    EXPECT_NE(close, std::string::npos) << out;
    return close == std::string::npos ? out : out.substr(0, out.find_last_not_of(' ', close - 1) + 1);
  };
  const std::string one = thought("1"), two = thought("2");
  EXPECT_FALSE(one.empty());
  EXPECT_LT(one.size(), two.size());
  EXPECT_TRUE(two.starts_with(one)) << one << " / " << two;
  EXPECT_TRUE(free.starts_with(two)) << two << " / " << free;
}

}  // namespace
}  // namespace glia
