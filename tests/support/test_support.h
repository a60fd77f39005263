// Helpers shared by all tests: where the test-data pack is, a scratch folder, decompression.
#pragma once

#include <string>
#include <vector>

namespace glia::test {

// Absolute path of a file in ../shared/testdata, e.g. testdata("models/brown-f32.gguf").
std::string testdata(const std::string& rel);
// Path in the build's scratch folder (created on demand).
std::string scratch(const std::string& name);
// Writes a scratch file (returns its path) aside and renames it into place: the test processes ctest
// runs at once share the folder, and none may read another's half-written file.
std::string write_scratch(const std::string& name, const std::string& text);
// Decompresses a .gz or .xz file of the pack into the scratch folder (once) and returns its path.
std::string decompressed(const std::string& rel);
// Reads a whole file; empty vector if missing.
std::vector<unsigned char> read_file(const std::string& path);
std::string read_text(const std::string& path);
// Writes `bytes` to `path` exactly (no newline translation); throws if it cannot.
void write_text(const std::string& path, const std::string& bytes);
// `s` as a GoogleTest parameter name: every character but letters and digits becomes '_'.
std::string param_name(std::string s);
// Path of the built CLI binary.
std::string cli_path();
// True where the tests run under an emulator (a cross build's, scripts/test_aarch64.sh): many
// times slower than native, which tests bounded by wall time allow for.
inline constexpr bool emulated =
#if defined(GLIA_TEST_EMULATED)
    true;
#else
    false;
#endif
// CPU seconds used so far by the calling thread. Tests that bound how much work a hostile input can
// cause measure this rather than wall time, which a loaded CI runner (or ASan) stretches.
double thread_cpu_seconds();

}  // namespace glia::test
