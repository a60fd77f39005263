#include "cli_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "test_support.h"

extern char** environ;

namespace glia::test {

cli_result run_glia(const std::vector<std::string>& args, const std::optional<std::string>& stdin_text) {
  static std::atomic<int> counter{0};
  const std::string stem = "cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string out_path = scratch(stem + ".out"), err_path = scratch(stem + ".err"), in_path = scratch(stem + ".in");
  if (stdin_text) write_text(in_path, *stdin_text);
  const std::string cli = cli_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(cli.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, stdin_text ? in_path.c_str() : "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cli_result r;
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cli.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    r.err = "cannot start " + cli;
    return r;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  if (stdin_text) ::unlink(in_path.c_str());
  return r;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

cli_result run_cli(const std::string& args) {
  static std::atomic<int> counter{0};
  const std::string err_path = scratch("cli_sh_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".err");
  const std::string cmd = quote(cli_path()) + " " + args + " 2>" + quote(err_path);
  cli_result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.err = read_text(err_path);
  ::unlink(err_path.c_str());
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    std::string line = text.substr(i, j - i);
    // The informational "loaded MODEL (...); resident memory ..." line that precedes evaluation is
    // not part of an error report.
    if (line.rfind("loaded ", 0) != 0) out.push_back(std::move(line));
    i = j + 1;
  }
  return out;
}

}  // namespace glia::test
