#include "model/tensor_check.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/printable.h"
#include "quant/types.h"

namespace glia {
namespace {

// Elements dequantized per call: a multiple of every block size (1, 32, 256), and small enough that
// a single huge row (a 1-D tensor of 10^9 floats) never needs a row-sized buffer.
constexpr int64_t chunk_elems = 16384;
// Elements per work item: big enough that scheduling costs nothing next to the scan, small enough
// that threads share a single large tensor.
constexpr int64_t item_elems = int64_t(1) << 20;

struct work_item {
  size_t tensor;  // index in f.tensors()
  int64_t row_begin, row_end;
};

struct finding {
  size_t item = SIZE_MAX;  // work-item index: items are in file order, so the smallest is the first
  int64_t row = 0, col = 0;
  float value = 0.0f;
};

std::vector<work_item> plan(const gguf::file& f) {
  std::vector<work_item> items;
  const auto& ts = f.tensors();
  for (size_t i = 0; i < ts.size(); ++i) {
    const int64_t ne0 = ts[i].ne[0];
    const int64_t n_rows = ts[i].n_elements() / ne0;
    const int64_t rows_per_item = std::max<int64_t>(1, item_elems / ne0);
    for (int64_t r = 0; r < n_rows; r += rows_per_item) items.push_back({i, r, std::min(n_rows, r + rows_per_item)});
  }
  return items;
}

// Scans one item; returns true (and fills row/col/value) at its first non-finite value.
bool scan(const gguf::tensor_info& t, const type_traits& tt, const work_item& it, std::vector<float>& buf, finding& out) {
  const int64_t ne0 = t.ne[0];
  const size_t stride = row_bytes(tt, ne0);
  for (int64_t r = it.row_begin; r < it.row_end; ++r) {
    const uint8_t* row = t.data + size_t(r) * stride;
    for (int64_t c0 = 0; c0 < ne0; c0 += chunk_elems) {
      const int64_t n = std::min(chunk_elems, ne0 - c0);  // ne0 and chunk_elems are whole blocks
      tt.dequantize_row(row + row_bytes(tt, c0), buf.data(), n);
      for (int64_t j = 0; j < n; ++j)
        if (!std::isfinite(buf[size_t(j)])) {
          out.row = r;
          out.col = c0 + j;
          out.value = buf[size_t(j)];
          return true;
        }
    }
  }
  return false;
}

const char* spell(float v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

}  // namespace

status check_tensors(const gguf::file& f, int n_threads) {
  const auto& ts = f.tensors();
  std::vector<const type_traits*> traits(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    traits[i] = find_type(ts[i].type);
    if (traits[i] == nullptr || traits[i]->dequantize_row == nullptr)
      return make_error("tensor {}: type {} cannot be checked (no dequantize routine)", gguf::detail::printable(ts[i].name), type_name(ts[i].type));
  }
  const std::vector<work_item> items = plan(f);

  std::atomic<size_t> next{0};
  std::atomic<size_t> first_bad{SIZE_MAX};  // lets threads skip items after a known finding
  std::mutex mu;
  finding best;
  auto worker = [&](int, int) {
    std::vector<float> buf(static_cast<size_t>(chunk_elems));
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= items.size() || i > first_bad.load(std::memory_order_relaxed)) return;
      const work_item& it = items[i];
      finding found;
      if (!scan(ts[it.tensor], *traits[it.tensor], it, buf, found)) continue;
      found.item = i;
      std::lock_guard<std::mutex> lock(mu);
      if (found.item < best.item) {
        best = found;
        first_bad.store(i, std::memory_order_relaxed);
      }
    }
  };
  const int nth = std::clamp<int>(n_threads, 1, int(std::max<size_t>(1, items.size())));
  if (nth == 1) {
    worker(0, 1);
  } else {
    thread_pool pool(nth);
    pool.run(worker);
  }
  if (best.item == SIZE_MAX) return {};
  return make_error("tensor {}: non-finite value ({}) at row {}, column {}", gguf::detail::printable(ts[items[best.item].tensor].name),
                    spell(best.value), best.row, best.col);
}

}  // namespace glia
