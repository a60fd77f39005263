#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace glia {

result<mapped_file> mapped_file::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer would wait for one forever; it is refused below.
  // A regular file under another process's write lease (a Samba or NFS server's) says EWOULDBLOCK
  // instead of waiting for the lease to be broken: that one is opened again, waiting.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("{}: not a regular file", path);
  }
  mapped_file f;
  if (st.st_size == 0) {
    ::close(fd);
    return f;
  }
  void* m = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file open
  if (m == MAP_FAILED) return make_error("{}: cannot mmap {} bytes: {}", path, st.st_size, std::strerror(err));
  f.mapping_ = m;
  f.size_ = size_t(st.st_size);
  return f;
}

mapped_file::mapped_file(mapped_file&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)), size_(std::exchange(other.size_, 0)) {}

mapped_file& mapped_file::operator=(mapped_file&& other) noexcept {
  if (this != &other) {
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

mapped_file::~mapped_file() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

}  // namespace glia
