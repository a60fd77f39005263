// A glia child process with pipes on its standard input, output and error, for tests that talk to
// it while it runs (chat) or signal it mid-run (Ctrl-C).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace glia::test {

class child_process {
 public:
  explicit child_process(const std::vector<std::string>& args);  // args[0]: the program
  ~child_process();  // kills it if it is still running
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  void write(const std::string& s);
  void close_input();
  void signal(int sig);
  // Reads what is available for up to `ms` milliseconds, until `until_err` appears in stderr or
  // `until_out` in stdout if given.
  void pump(int ms, const std::string& until_err = "", const std::string& until_out = "");
  // The exit code (128 + signal when killed by one), or -1 if it is still running after `ms`.
  int wait_exit(int ms);
  std::string out, err;

 private:
  pid_t pid_ = -1;
  bool waited_ = false;
  int in_ = -1, out_ = -1, err_ = -1;
};

}  // namespace glia::test
