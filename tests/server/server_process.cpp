#include "server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <regex>

#include "test_support.h"

extern char** environ;

namespace glia::test {

std::string test_model() { return std::string(GLIA_TESTDATA) + "/models/brown-q8_0.gguf"; }
std::string llama2_chat_template() {
  return std::string(GLIA_TESTDATA) + "/chat_templates/templates/meta-llama-Llama-2-13b-chat-hf.jinja";
}

server_process::server_process(const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::string> argv_s = {GLIA_CLI, "serve", "--port", "0", "-t", "1"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    pid_ = -1;
    close(fds[0]);
    log_ = std::string("posix_spawn failed: ") + std::strerror(rc);
    return;
  }
  err_fd_ = fds[0];
  // Read stderr until the listening line, then keep draining it in the background.
  const std::regex line_re("glia serve: listening on http://127\\.0\\.0\\.1:([0-9]+)\n");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string buf;
  while (port_ == 0 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{err_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char tmp[4096];
    const ssize_t n = read(err_fd_, tmp, sizeof tmp);
    if (n <= 0) break;
    buf.append(tmp, size_t(n));
    std::smatch m;
    if (std::regex_search(buf, m, line_re)) port_ = std::stoi(m[1]);
  }
  log_ = buf;
  reader_ = std::thread([this] {
    char tmp[4096];
    for (;;) {
      const ssize_t n = read(err_fd_, tmp, sizeof tmp);
      if (n <= 0) return;
      std::lock_guard lock(mu_);
      log_.append(tmp, size_t(n));
    }
  });
}

server_process::~server_process() {
  terminate();
  if (reader_.joinable()) reader_.join();
  if (err_fd_ >= 0) close(err_fd_);
}

std::string server_process::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

bool server_process::alive() const { return pid_ > 0 && exit_status_ == -2 && kill(pid_, 0) == 0; }

int server_process::terminate(int timeout_s) {
  if (pid_ <= 0 || exit_status_ != -2) return exit_status_;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int st = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return exit_status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &st, 0);
  exit_status_ = -1;
  return exit_status_;
}

httplib::Client server_process::client(int read_timeout_s) const {
  httplib::Client c(host(), port_);
  c.set_read_timeout(read_timeout_s, 0);
  c.set_connection_timeout(30, 0);  // generous: the whole suite may run on two busy cores
  return c;
}

}  // namespace glia::test
