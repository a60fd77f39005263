#include "load_session.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>

#include "core/memory_info.h"

namespace glia::cli {

result<std::unique_ptr<session>> open_session(session_options opts) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  bool drawn = false;
  opts.load_progress = [&](double fraction) {
    // Only loads that take a noticeable time get a bar.
    if (!drawn && std::chrono::duration<double>(clock::now() - start).count() < 0.3) return;
    drawn = true;
    const int width = 40, filled = int(fraction * width + 0.5);
    fmt::print(stderr, "\rloading [{}{}] {:3.0f}%", std::string(size_t(filled), '#'), std::string(size_t(width - filled), ' '),
               fraction * 100.0);
    std::fflush(stderr);
  };
  auto s = session::create(opts);
  if (drawn) fmt::print(stderr, "\n");
  if (!s) return s;
  const double mib = double(1 << 20);
  const auto rss = resident_memory_bytes();
  const std::string repacked =
      (*s)->prepared_weight_bytes() > 0
          ? fmt::format(" ({:.1f} MiB of weights repacked for the kernels in {:.2f} s)",
                        double((*s)->prepared_weight_bytes()) / mib, (*s)->prepare_seconds())
          : std::string();
  fmt::print(stderr, "loaded {} ({:.1f} MiB, {}) in {:.2f} s{}; resident memory {}\n", opts.model_path,
             double((*s)->model_file_bytes()) / mib, (*s)->model_is_mapped() ? "mapped" : "read into memory",
             std::chrono::duration<double>(clock::now() - start).count(), repacked,
             rss ? fmt::format("{:.1f} MiB", double(*rss) / mib) : std::string("unknown"));
  if (const std::string w = (*s)->context_warning(); !w.empty()) fmt::print(stderr, "warning: {}\n", w);
  return s;
}

}  // namespace glia::cli
