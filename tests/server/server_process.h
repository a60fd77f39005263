// Starts `glia serve --port 0 ...` as a child process, waits for its listening line on stderr and
// parses the port; stops it with SIGTERM (then SIGKILL) when destroyed.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace glia::test {

class server_process {
 public:
  // `args` follow "glia serve"; "--port 0" is added. On failure port() is 0 and log() says why.
  explicit server_process(const std::vector<std::string>& args, int timeout_s = 30);
  ~server_process();
  int port() const { return port_; }
  std::string host() const { return "127.0.0.1"; }
  std::string log() const;  // everything the server wrote on stderr so far
  // Sends SIGTERM and waits; returns the exit status (-1 on timeout, after SIGKILL).
  int terminate(int timeout_s = 20);
  bool alive() const;
  pid_t pid() const { return pid_; }
  httplib::Client client(int read_timeout_s = 30) const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int err_fd_ = -1;
  mutable std::mutex mu_;
  std::string log_;
  std::thread reader_;
  int exit_status_ = -2;
};

std::string test_model();          // brown-q8_0.gguf: tiny, trained, no chat template
std::string llama2_chat_template();  // a real chat template file (Llama-2 chat)

}  // namespace glia::test
