// Plain driver for the fuzz targets: runs LLVMFuzzerTestOneInput over files, so the same targets
// replay corpora under GCC (and AddressSanitizer) in CI without libFuzzer.
//
//   fuzz_replay_<target> [--mutate N] [--ext SUFFIX]... [--write-mutants DIR] PATH...
//
// PATH is a file or a folder (its regular files, sorted; not recursive). --mutate N also runs N
// deterministic variants of each file: truncations and overwrites of bytes, u32s and u64s with
// boundary values, placed mostly in the first 4 KiB and 256 KiB where headers and metadata live.
// Each input is passed in a heap copy of exactly its size, so an over-read is caught by ASan.
// On a crash the input being run is printed; --write-mutants saves the variants as files (to seed
// libFuzzer or to keep one as a regression input).
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"

namespace {

namespace fs = std::filesystem;

char current_input[1024] = "(none)";

void on_crash(int sig) {
  // Only async-signal-safe calls here.
  static const char prefix[] = "\nfuzz replay: crashed while running input: ";
  (void)!write(2, prefix, sizeof prefix - 1);
  (void)!write(2, current_input, strlen(current_input));
  (void)!write(2, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void set_current(const std::string& what) {
  std::snprintf(current_input, sizeof current_input, "%s", what.c_str());
}

struct splitmix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

using bytes = std::vector<uint8_t>;

// A position biased towards the start of the file, where a format keeps its counts and lengths.
uint64_t pick_position(splitmix64& rng, uint64_t size) {
  switch (rng.below(4)) {
    case 0:
    case 1: return rng.below(std::min<uint64_t>(size, 4096));
    case 2: return rng.below(std::min<uint64_t>(size, 1 << 18));
    default: return rng.below(size);
  }
}

void put_le(bytes& b, uint64_t at, uint64_t v, int n) {
  for (int i = 0; i < n && at + i < b.size(); ++i) b[at + i] = uint8_t(v >> (8 * i));
}

// Variant k of `in`; `what` describes it for crash reports.
bytes mutate(const bytes& in, uint64_t seed, int k, std::string& what) {
  splitmix64 rng{seed ^ (uint64_t(k) * 0x2545f4914f6cdd1dull)};
  bytes b = in;
  if (b.empty() || k % 4 == 0) {
    const uint64_t len = k == 0 ? (b.empty() ? 0 : b.size() - 1) : pick_position(rng, b.size());
    b.resize(len);
    what = "truncated to " + std::to_string(len) + " bytes";
    return b;
  }
  static const uint64_t u64s[] = {0, 1, 2, 0x7fffffffull, 0x80000000ull, 0xffffffffull, 1ull << 32,
                                  1ull << 62, 0x7fffffffffffffffull, ~0ull};
  static const uint32_t u32s[] = {0, 1, 2, 3, 5, 7, 12, 13, 16, 31, 40, 255, 0x7fffffff, 0xffffffff};
  what = "overwrote";
  const int n_edits = 1 + int(rng.below(3));
  for (int e = 0; e < n_edits; ++e) {
    const uint64_t at = pick_position(rng, b.size());
    switch (rng.below(4)) {
      case 0: b[at] = uint8_t(rng.next()); what += " byte"; break;
      case 1: b[at] ^= uint8_t(1u << rng.below(8)); what += " bit"; break;
      case 2: put_le(b, at, u32s[rng.below(std::size(u32s))], 4); what += " u32"; break;
      default: put_le(b, at, u64s[rng.below(std::size(u64s))], 8); what += " u64"; break;
    }
    what += " at " + std::to_string(at);
  }
  return b;
}

void run_one(const bytes& b) {
  // An exact-size heap copy: reading one byte past the input is a heap-buffer-overflow under ASan.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[b.size() + (b.empty() ? 1 : 0)]);
  if (!b.empty()) std::memcpy(copy.get(), b.data(), b.size());
  LLVMFuzzerTestOneInput(copy.get(), b.size());
}

bool read_all(const fs::path& p, bytes& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int usage() {
  std::fprintf(stderr, "usage: fuzz_replay_<target> [--mutate N] [--ext SUFFIX]... [--write-mutants DIR] PATH...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int n_mutants = 0;
  std::vector<std::string> exts;
  std::string write_dir;
  std::vector<fs::path> files;
  std::vector<std::string> roots;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutate" && i + 1 < argc) n_mutants = std::atoi(argv[++i]);
    else if (a == "--ext" && i + 1 < argc) exts.push_back(argv[++i]);
    else if (a == "--write-mutants" && i + 1 < argc) write_dir = argv[++i];
    else if (a.starts_with("--")) return usage();
    else roots.push_back(a);
  }
  if (roots.empty()) return usage();
  auto wanted = [&](const fs::path& p) {
    if (exts.empty()) return true;
    for (const auto& e : exts)
      if (p.filename().string().ends_with(e)) return true;
    return false;
  };
  for (const auto& r : roots) {
    std::error_code ec;
    if (fs::is_directory(r, ec)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(r))
        if (e.is_regular_file() && wanted(e.path())) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) std::fprintf(stderr, "note: %s has no inputs\n", r.c_str());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(r, ec)) {
      files.emplace_back(r);
    } else {
      std::fprintf(stderr, "error: %s is neither a file nor a folder\n", r.c_str());
      return 2;
    }
  }
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_crash);
  if (!write_dir.empty()) fs::create_directories(write_dir);

  const auto t0 = std::chrono::steady_clock::now();
  size_t n_runs = 0;
  for (const auto& p : files) {
    bytes b;
    if (!read_all(p, b)) {
      std::fprintf(stderr, "error: cannot read %s\n", p.c_str());
      return 2;
    }
    set_current(p.string());
    run_one(b);
    ++n_runs;
    const uint64_t seed = fnv1a(p.filename().string());
    for (int k = 0; k < n_mutants; ++k) {
      std::string what;
      const bytes m = mutate(b, seed, k, what);
      set_current(p.string() + " mutant " + std::to_string(k) + " (" + what + ")");
      if (!write_dir.empty()) {
        std::ofstream out(fs::path(write_dir) / (p.filename().string() + ".m" + std::to_string(k)), std::ios::binary);
        out.write(reinterpret_cast<const char*>(m.data()), std::streamsize(m.size()));
      }
      run_one(m);
      ++n_runs;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("replayed %zu inputs (%zu files, %d variants each) in %.2f s\n", n_runs, files.size(), n_mutants, secs);
  return 0;
}
