#include "core/read_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace glia {

result<std::string> read_whole_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) == 0 && S_ISDIR(st.st_mode)) return make_error("{}: is a folder", path);
  std::string out;
  if (::fstat(::fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode)) out.reserve(size_t(st.st_size));
  constexpr size_t chunk = size_t(1) << 24;
  for (;;) {
    const size_t old = out.size();
    out.resize(old + chunk);
    const size_t n = std::fread(out.data() + old, 1, chunk, f.get());
    out.resize(old + n);
    if (n < chunk) break;
  }
  if (std::ferror(f.get())) return make_error("{}: read error: {}", path, std::strerror(errno));
  return out;
}

}  // namespace glia
