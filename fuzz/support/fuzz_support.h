// What every fuzz target shares: the libFuzzer entry point's signature, the testdata path, and
// checks that turn a broken promise (an error message that is not one line, an id outside the
// vocabulary) into a crash that libFuzzer (or the replay driver) reports with the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace glia::fuzz {

// Absolute path of a file in the shared test-data pack (GLIA_FUZZ_TESTDATA is set by fuzz/CMakeLists.txt).
inline std::string testdata(std::string_view rel) { return std::string(GLIA_FUZZ_TESTDATA) + "/" + std::string(rel); }

// A failed invariant: report it and abort, which both libFuzzer and the replay driver treat as a crash.
[[noreturn]] inline void fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz invariant broken: %.*s: %.*s\n", int(what.size()), what.data(), int(detail.size()),
               detail.data());
  std::abort();
}

inline void require(bool ok, std::string_view what, std::string_view detail = {}) {
  if (!ok) fail(what, detail);
}

// Every error the engine returns is one non-empty line (common.md: "Errors are values ... one line").
inline void require_one_line(const std::string& message) {
  require(!message.empty(), "empty error message");
  require(message.find('\n') == std::string::npos && message.find('\r') == std::string::npos,
          "error message spans several lines", message);
}

// Setup that is not input (a missing testdata file) ends the run with a clear message, not a "crash".
[[noreturn]] inline void setup_failed(std::string_view what) {
  std::fprintf(stderr, "fuzz target setup failed: %.*s\n", int(what.size()), what.data());
  std::exit(2);
}

}  // namespace glia::fuzz
