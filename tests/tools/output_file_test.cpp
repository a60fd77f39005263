// Where glia quantize and glia synth put their output (model/output_file.h): a failed or interrupted
// run leaves the path as it was, a replaced file keeps its mode, and paths that are not plain files
// (/proc/self/fd/N, as /dev/stdout is when the shell redirects it) are written in place.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "model/output_file.h"
#include "model/quantize.h"
#include "test_support.h"

namespace glia {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = test::scratch(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int entries(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

void write_and_commit(const fs::path& p, const std::string& text) {
  auto out = output_file::open(p.string());
  ASSERT_TRUE(out.is_ok()) << out.message();
  ASSERT_GE(std::fputs(text.c_str(), out->stream()), 0);
  ASSERT_TRUE(out->commit().is_ok());
}

TEST(output_file, a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_umask) {
  const fs::path dir = fresh_dir("output-mode");
  const fs::path kept = dir / "private.gguf", made = dir / "new.gguf";
  { std::ofstream(kept) << "old"; }
  ASSERT_EQ(::chmod(kept.c_str(), 0600), 0);
  write_and_commit(kept, "new");
  struct stat st {};
  ASSERT_EQ(::stat(kept.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(text_of(kept), "new");
  const mode_t mask = ::umask(0);
  ::umask(mask);
  write_and_commit(made, "x");
  ASSERT_EQ(::stat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u & ~mask);
  EXPECT_EQ(entries(dir), 2);
}

TEST(output_file, a_dangling_symlink_gets_its_target_written) {
  const fs::path dir = fresh_dir("output-dangling");
  fs::create_symlink("target.gguf", dir / "link.gguf");
  write_and_commit(dir / "link.gguf", "data");
  EXPECT_TRUE(fs::is_symlink(dir / "link.gguf"));
  EXPECT_EQ(text_of(dir / "target.gguf"), "data");
  EXPECT_EQ(entries(dir), 2);
}

TEST(output_file, empty_paths_and_folders_are_refused_before_any_work) {
  const fs::path dir = fresh_dir("output-refused");
  for (const std::string& p : {std::string(), (dir / "sub/").string(), dir.string()}) {
    auto out = output_file::open(p);
    EXPECT_FALSE(out.is_ok()) << p;
  }
  EXPECT_EQ(entries(dir), 0);
}

// /dev/stdout redirected to a file is /proc/self/fd/1 -> the file: written in place, so the shell's
// file gets the data (a rename would leave it on an unlinked inode), and never removed.
TEST(output_file, a_path_through_proc_is_written_in_place) {
  const fs::path dir = fresh_dir("output-proc");
  const fs::path file = dir / "redirected.gguf";
  { std::ofstream(file) << "before"; }
  const int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  struct stat before {}, after {};
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  const std::string via = "/proc/self/fd/" + std::to_string(fd);
  {
    auto unfinished = output_file::open(via);
    ASSERT_TRUE(unfinished.is_ok()) << unfinished.message();
  }
  EXPECT_TRUE(fs::exists(file));
  write_and_commit(via, "after");
  ::close(fd);
  ASSERT_EQ(::stat(file.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(text_of(file), "after");
  EXPECT_EQ(entries(dir), 1);
}

// /dev/shm (a RAM disk people write models to) is an ordinary folder: a failed run leaves its file.
TEST(output_file, a_file_in_dev_shm_is_replaced_only_when_finished) {
  const fs::path shm = "/dev/shm";
  if (::access(shm.c_str(), W_OK) != 0) GTEST_SKIP() << "no writable /dev/shm";
  const fs::path file = shm / ("glia-output-test-" + std::to_string(::getpid()) + ".gguf");
  { std::ofstream(file) << "previous"; }
  {
    auto unfinished = output_file::open(file.string());
    ASSERT_TRUE(unfinished.is_ok()) << unfinished.message();
    ASSERT_GE(std::fputs("partial", unfinished->stream()), 0);
  }
  EXPECT_EQ(text_of(file), "previous");
  write_and_commit(file, "new");
  EXPECT_EQ(text_of(file), "new");
  fs::remove(file);
}

// Ctrl-C during glia quantize: the run stops between tensors and leaves nothing behind.
TEST(output_file, an_interrupted_quantize_leaves_the_path_as_it_was) {
  const fs::path dir = fresh_dir("output-interrupted");
  const fs::path out = dir / "out.gguf";
  { std::ofstream(out) << "previous model"; }
  std::atomic<bool> interrupted{true};
  quantize_options q;
  q.mix.ftype = file_type::mostly_q8_0;
  q.cancel = &interrupted;
  auto r = quantize_model(test::testdata("models/brown-f32.gguf"), out.string(), q);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("interrupted"), std::string::npos) << r.message();
  EXPECT_EQ(text_of(out), "previous model");
  EXPECT_EQ(entries(dir), 1);
}

}  // namespace
}  // namespace glia
