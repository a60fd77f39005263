#include "test_support.h"

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <unistd.h>

namespace glia::test {

std::string testdata(const std::string& rel) { return std::string(GLIA_TESTDATA) + "/" + rel; }

std::string param_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::string scratch(const std::string& name) {
  std::filesystem::create_directories(GLIA_TEST_SCRATCH);
  return std::string(GLIA_TEST_SCRATCH) + "/" + name;
}

std::string write_scratch(const std::string& name, const std::string& text) {
  const std::string path = scratch(name);
  const std::string part = path + "." + std::to_string(::getpid());
  write_text(part, text);
  std::filesystem::rename(part, path);
  return path;
}

std::string decompressed(const std::string& rel) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::string src = testdata(rel);
  std::string tool;
  std::string stem = rel;
  if (rel.ends_with(".xz")) {
    tool = "xz";
    stem = rel.substr(0, rel.size() - 3);
  } else if (rel.ends_with(".gz")) {
    tool = "gzip";
    stem = rel.substr(0, rel.size() - 3);
  } else {
    return src;
  }
  for (auto& c : stem)
    if (c == '/') c = '_';
  std::string out = scratch(stem);
  if (std::filesystem::exists(out)) return out;
  // Decompress to a temporary name first so that concurrent test processes never read half a file.
  std::string tmp = out + ".tmp" + std::to_string(::getpid());
  std::string cmd = tool + " -dc '" + src + "' > '" + tmp + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot decompress " + src);
  std::filesystem::rename(tmp, out);
  return out;
}

void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string cli_path() { return GLIA_CLI; }

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace glia::test
