#include "core/read_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace glia {

result<std::string> read_whole_file(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) == 0 && S_ISDIR(st.st_mode)) return make_error("{}: is a folder", path);
  // A regular file is read into a buffer of its size (one allocation, no copy); anything after that
  // (a file that grew, a pipe) is read in chunks.
  std::string out;
  size_t filled = 0;
  if (::fstat(::fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode)) {
    out.resize(size_t(st.st_size));
    constexpr size_t step = size_t(64) << 20;
    while (filled < out.size()) {
      const size_t n = std::fread(out.data() + filled, 1, std::min(step, out.size() - filled), f.get());
      if (n == 0) break;
      filled += n;
      if (progress) progress(filled, out.size());
    }
    out.resize(filled);
  }
  constexpr size_t chunk = size_t(1) << 16;
  char buf[chunk];
  for (size_t n; (n = std::fread(buf, 1, chunk, f.get())) > 0;) out.append(buf, n);
  if (std::ferror(f.get())) return make_error("{}: read error: {}", path, std::strerror(errno));
  return out;
}

std::vector<std::filesystem::path> files_with_extension(const std::filesystem::path& dir, std::string_view extension) {
  std::error_code ec;
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == extension && std::filesystem::is_regular_file(e.path(), ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace glia
