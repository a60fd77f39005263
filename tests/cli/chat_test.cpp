// glia chat driven through its standard input and output, as a person (or a script) would.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <regex>
#include <thread>

#include "gguf/gguf.h"
#include "test_support.h"

namespace glia {
namespace {

// A child process with pipes on stdin, stdout and stderr.
class child {
 public:
  explicit child(const std::vector<std::string>& args) {
    int in[2], out[2], err[2];
    EXPECT_EQ(::pipe(in), 0);
    EXPECT_EQ(::pipe(out), 0);
    EXPECT_EQ(::pipe(err), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
    ::fcntl(out_, F_SETFL, O_NONBLOCK);
    ::fcntl(err_, F_SETFL, O_NONBLOCK);
  }
  ~child() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    for (int fd : {in_, out_, err_})
      if (fd >= 0) ::close(fd);
  }
  void write(const std::string& s) { ASSERT_EQ(::write(in_, s.data(), s.size()), ssize_t(s.size())); }
  void close_input() {
    ::close(in_);
    in_ = -1;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // Reads what is available for up to `ms` milliseconds, until `until` appears in stderr if given.
  void pump(int ms, const std::string& until_err = "", const std::string& until_out = "") {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
      ::poll(fds, 2, 20);
      drain(out_, out);
      drain(err_, err);
      if (!until_err.empty() && err.find(until_err) != std::string::npos) return;
      if (!until_out.empty() && out.find(until_out) != std::string::npos) return;
    }
  }
  int wait_exit(int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      pump(20);
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        waited_ = true;
        pump(50);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  std::string out, err;

 private:
  static void drain(int fd, std::string& dst) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) dst.append(buf, size_t(n));
  }
  pid_t pid_ = -1;
  bool waited_ = false;
  int in_ = -1, out_ = -1, err_ = -1;
};

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

}  // namespace
}  // namespace glia
