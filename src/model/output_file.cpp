#include "model/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "model/partial_files.h"

namespace glia {
namespace {

namespace fs = std::filesystem;

// A file descriptor's name (/dev/stdout, /dev/fd/N, /proc/self/fd/N): whatever it leads to is the
// caller's open file, which must be written as it is (/dev/shm and the like are ordinary folders).
bool names_a_descriptor(const fs::path& p) {
  const std::string s = p.lexically_normal().string();
  return s.starts_with("/proc/") || s.starts_with("/dev/fd/") || s == "/dev/stdout" || s == "/dev/stderr";
}

// The path a write to `path` would land on: symlinks followed one hop at a time (a dangling link
// names the file that writing would create), and whether any hop was a descriptor's name.
struct resolved {
  fs::path target;
  bool descriptor = false;
};

result<resolved> resolve(const std::string& path) {
  constexpr int max_hops = 40;  // Linux's own limit
  std::error_code ec0;
  resolved r{fs::absolute(path, ec0), false};
  if (ec0) return make_error("{}: cannot resolve the path: {}", path, ec0.message());
  for (int hop = 0;; ++hop) {
    r.descriptor = r.descriptor || names_a_descriptor(r.target);
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(r.target, ec))) break;
    if (hop == max_hops) return make_error("{}: too many levels of symbolic links", path);
    const fs::path next = fs::read_symlink(r.target, ec);
    if (ec) return make_error("{}: cannot read the symbolic link {}: {}", path, r.target.string(), ec.message());
    r.target = next.is_absolute() ? next : r.target.parent_path() / next;
  }
  std::error_code ec;
  const fs::path parent = fs::weakly_canonical(r.target.parent_path(), ec);
  if (ec) return make_error("{}: cannot resolve the folder: {}", path, ec.message());
  r.target = parent / r.target.filename();
  r.descriptor = r.descriptor || names_a_descriptor(r.target);
  return r;
}

std::string random_suffix() {
  static constexpr char hex[] = "0123456789abcdef";
  std::random_device rd;
  std::string s = ".partial-";
  for (int i = 0; i < 8; ++i) s += hex[rd() % 16];
  return s;
}

}  // namespace

result<output_file> output_file::open(const std::string& path) {
  if (path.empty()) return make_error("the output path is empty");
  if (path.back() == '/') return make_error("{}: names a folder, not a file", path);
  output_file out;
  out.path_ = path;
  auto r = resolve(path);
  if (!r) return r.take_error();
  struct stat st {};
  const bool exists = ::stat(r->target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return make_error("{}: is a folder", path);
  auto open_directly = [&]() -> result<output_file> {
    out.f_ = std::fopen(path.c_str(), "wb");
    if (!out.f_) return make_error("{}: cannot open for writing: {}", path, std::strerror(errno));
    return std::move(out);
  };
  if (r->descriptor || (exists && !S_ISREG(st.st_mode))) return open_directly();
  if (exists) {
    // rename() would replace a file the user may not write to; refuse as opening it would.
    if (::access(r->target.c_str(), W_OK) != 0) return make_error("{}: cannot write: {}", path, std::strerror(errno));
    struct stat dir {};
    if (::stat(r->target.parent_path().c_str(), &dir) != 0) return open_directly();
    const bool mount_point = dir.st_dev != st.st_dev;
    const bool sticky_foreign = (dir.st_mode & S_ISVTX) && st.st_uid != ::geteuid() && ::geteuid() != 0;
    if (mount_point || sticky_foreign) return open_directly();  // rename() could not replace it
  }
  out.target_ = r->target.string();
  // A new file gets what a plain create gives it (the kernel applies the umask and the folder's
  // default ACL); a replaced one keeps its mode.
  const mode_t mode = exists ? (st.st_mode & 07777) : 0666;
  int fd = -1;
  std::string temp;
  int err = 0;
  {
    const partial_files::signals_held held;  // no signal between creating the file and registering it
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
      temp = out.target_ + random_suffix();
      fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
      err = errno;
      if (fd < 0 && err != EEXIST) break;
    }
    if (fd >= 0) out.partial_slot_ = partial_files::add(temp);
  }
  if (fd < 0) {
    // A writable file in a folder that takes no new names: written in place, as before.
    if (exists && (err == EACCES || err == EPERM || err == EROFS || err == ENAMETOOLONG)) return open_directly();
    return make_error("{}: cannot create: {}", path, std::strerror(err));
  }
  out.temp_path_ = temp;
  if (exists) {
    [[maybe_unused]] const int chmod_rc = ::fchmod(fd, mode);  // the umask may have dropped bits
    [[maybe_unused]] const int chown_rc = ::fchown(fd, st.st_uid, st.st_gid);  // allowed for root, or a group of ours
  }
  out.f_ = ::fdopen(fd, "wb");
  if (!out.f_) {
    const int err = errno;
    ::close(fd);
    return make_error("{}: cannot create: {}", path, std::strerror(err));  // the destructor removes the file
  }
  return out;
}

output_file::output_file(output_file&& o) noexcept
    : path_(std::move(o.path_)),
      target_(std::move(o.target_)),
      temp_path_(std::move(o.temp_path_)),
      partial_slot_(o.partial_slot_),
      f_(o.f_) {
  o.f_ = nullptr;
  o.temp_path_.clear();
  o.partial_slot_ = -1;
}

output_file::~output_file() {
  if (f_) std::fclose(f_);
  // Never committed: the partial file is useless (a loader would reject it) and goes; the target
  // keeps what it held. Output written straight to a stream or device cannot be taken back.
  if (!temp_path_.empty()) std::remove(temp_path_.c_str());
  partial_files::drop(partial_slot_);
}

status output_file::commit() {
  if (!f_) return make_error("{}: already closed", path_);
  // On disk before the rename, so that a crash cannot leave an empty file where the old one was.
  const bool synced = temp_path_.empty() || (std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0);
  const int sync_err = errno;
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (!synced) return make_error("{}: write failed: {}", path_, std::strerror(sync_err));
  if (rc != 0) return make_error("{}: close failed: {}", path_, std::strerror(errno));
  if (temp_path_.empty()) return {};
  if (std::rename(temp_path_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    // A target that is a mount point rename() cannot replace (a bind mount on the same file
    // system, which open() could not tell): copied over it in place, as a direct write would.
    if (err != EBUSY && err != EXDEV) return make_error("{}: cannot move {} into place: {}", path_, temp_path_, std::strerror(err));
    std::error_code ec;
    fs::copy_file(temp_path_, target_, fs::copy_options::overwrite_existing, ec);
    if (ec) return make_error("{}: cannot copy {} into place: {}", path_, temp_path_, ec.message());
    std::remove(temp_path_.c_str());
  }
  temp_path_.clear();
  partial_files::drop(partial_slot_);
  partial_slot_ = -1;
  return {};
}

}  // namespace glia
