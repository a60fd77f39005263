#include "child_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace glia::test {
namespace {

void drain(int fd, std::string& dst) {
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) dst.append(buf, size_t(n));
}

}  // namespace

child_process::child_process(const std::vector<std::string>& args) {
  int in[2], out[2], err[2];
  EXPECT_EQ(::pipe(in), 0);
  EXPECT_EQ(::pipe(out), 0);
  EXPECT_EQ(::pipe(err), 0);
  // Built before fork(): the child of a threaded process may only make async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
    // The signals tests send act as in a terminal, whatever the test runner ignores (nohup, a
    // background job): an ignored disposition would survive execv, and glia leaves those alone.
    for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGPIPE}) ::signal(sig, SIG_DFL);
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

child_process::~child_process() {
  if (pid_ > 0 && !waited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  for (int fd : {in_, out_, err_})
    if (fd >= 0) ::close(fd);
}

void child_process::write(const std::string& s) { ASSERT_EQ(::write(in_, s.data(), s.size()), ssize_t(s.size())); }

void child_process::close_input() {
  ::close(in_);
  in_ = -1;
}

void child_process::signal(int sig) { ::kill(pid_, sig); }

void child_process::pump(int ms, const std::string& until_err, const std::string& until_out) {
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

int child_process::wait_exit(int ms) {
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

}  // namespace glia::test
