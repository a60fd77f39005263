// Row-parallel quantization and the quantize tool's driver (read, plan, convert, stream out).
#include "model/quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>

#include "model/hf/hf_checkpoint.h"
#include "model/model_file.h"
#include "model/profile.h"
#include "model/rope_rows.h"

namespace glia {
namespace {

// Work items of ~64 K elements: big enough to amortize the hand-out, small enough to balance.
constexpr int64_t k_chunk_elems = 64 * 1024;

// The first row (relative to `rows`) holding a NaN or infinity, or -1.
int64_t first_non_finite_row(const float* x, int64_t n_rows, int64_t n_per_row) {
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t j = 0; j < n_per_row; ++j)
      if (!std::isfinite(x[r * n_per_row + j])) return r;
  return -1;
}

// For a model whose Q/K rows are in checkpoint order: the Q and K tensors (weights and biases) and
// their head counts, the rows of each to interleave for the GGUF.
struct head_rows {
  int64_t heads = 0, head_dim = 0;
};
std::map<std::string, head_rows> checkpoint_order_heads(const family_profile& p) {
  std::map<std::string, head_rows> out;
  if (!p.qk_checkpoint_order) return out;
  for (int il = 0; il < p.n_layer; ++il) {
    const layer_profile& l = p.layers[size_t(il)];
    for (const char* suffix : {"weight", "bias"}) {
      out[fmt::format("blk.{}.attn_q.{}", il, suffix)] = {l.n_head, l.head_dim_k};
      out[fmt::format("blk.{}.attn_k.{}", il, suffix)] = {l.n_head_kv, l.head_dim_k};
    }
  }
  return out;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += fmt::format("{}{:5}", s.empty() ? "" : ", ", d);
  return s;
}

}  // namespace

status for_row_chunks(thread_pool& pool, int64_t n_rows, int64_t n_per_row, int64_t chunk_rows,
                      const std::function<status(int64_t, int64_t, float*)>& fill) {
  if (n_rows <= 0) return {};
  chunk_rows = std::max<int64_t>(1, chunk_rows);
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  status first_error;
  pool.run_dynamic([&](int, int) {  // chunks come from the counter: a late worker leaves them to others
    std::vector<float> scratch(size_t(chunk_rows * n_per_row));
    while (!failed.load(std::memory_order_relaxed)) {
      const int64_t r0 = next.fetch_add(chunk_rows);
      if (r0 >= n_rows) break;
      const int64_t r1 = std::min(n_rows, r0 + chunk_rows);
      status s = fill(r0, r1, scratch.data());
      if (!s) {
        std::lock_guard lock(mu);
        if (!failed.exchange(true)) first_error = std::move(s);
        break;
      }
    }
  });
  return first_error;
}

status quantize_rows(thread_pool& pool, dtype type, const float* src, int64_t n_rows, int64_t n_per_row, uint8_t* dst) {
  const type_traits& tt = type_info(type);
  if (n_per_row % tt.block_elems != 0)
    return make_error("rows of {} elements are not a multiple of {}'s block of {}", n_per_row, tt.name, tt.block_elems);
  const size_t rb = row_bytes(tt, n_per_row);
  const int64_t chunk = std::max<int64_t>(1, k_chunk_elems / n_per_row);
  // The scratch of for_row_chunks is not needed: the rows are already floats.
  return for_row_chunks(pool, n_rows, 0, chunk, [&](int64_t r0, int64_t r1, float*) -> status {
    const int64_t bad = first_non_finite_row(src + r0 * n_per_row, r1 - r0, n_per_row);
    if (bad >= 0) return make_error("row {} holds a value that is not finite", r0 + bad);
    for (int64_t r = r0; r < r1; ++r) tt.quantize_row(src + r * n_per_row, dst + size_t(r) * rb, n_per_row);
    return {};
  });
}

result<quantize_summary> quantize_model(const std::string& in_path, const std::string& out_path,
                                        const quantize_options& opts) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::equivalent(in_path, out_path, ec)) return make_error("{}: the output would overwrite the input", out_path);
  // A checkpoint folder's files (through symlinks too: the Hugging Face cache links a snapshot's files
  // to shared blobs) are input as well.
  if (auto folder = hf::checkpoint_folder(in_path))
    for (const auto& e : fs::directory_iterator(*folder, ec))
      if (fs::equivalent(e.path(), out_path, ec))
        return make_error("{}: the output would overwrite the input's {}", out_path, e.path().filename().string());
  auto opened = open_model_file(in_path);
  if (!opened) return opened.take_error();  // its message starts with the path
  const gguf::file& f = **opened;
  auto profile = profile_from_gguf(f);
  if (!profile) return make_error("{}: {}", in_path, profile.message());
  mix_facts facts;
  facts.n_layer = profile->n_layer;
  facts.n_gqa = profile->layers[0].n_head / profile->layers[0].n_head_kv;

  std::vector<tensor_desc> descs;
  for (const auto& t : f.tensors()) {
    if (!find_type(t.type)) return make_error("{}: tensor {} has type {}, which is not supported", in_path, t.name, type_name(t.type));
    descs.push_back({t.name, std::vector<int64_t>(t.ne, t.ne + t.n_dims), dtype(t.type)});
  }
  std::stable_sort(descs.begin(), descs.end(),
                   [](const tensor_desc& a, const tensor_desc& b) { return llama_tensor_order(a.name, b.name); });
  auto types = plan_tensor_types(descs, opts.mix, facts);
  if (!types) return types.take_error();

  auto metadata = f.metadata();
  // The output is a plain GGUF: one file, Q/K rows in the converter's order.
  for (std::string_view key : {std::string_view("split.no"), std::string_view("split.count"),
                               std::string_view("split.tensors.count"), key_rope_checkpoint_order})
    std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
  set_quantized_file_keys(metadata, opts.mix.ftype);
  if (opts.add_metadata) {
    gguf::writer derived;
    GLIA_TRY(opts.add_metadata(f, derived));
    for (const auto& [key, val] : derived.metadata()) replace_key(metadata, key, val);
  }
  std::vector<planned_tensor> plan;
  for (size_t i = 0; i < descs.size(); ++i) plan.push_back({descs[i].name, descs[i].dims, (*types)[i]});
  auto out = gguf_stream_writer::create(out_path, std::move(metadata), plan);
  if (!out) return out.take_error();

  thread_pool pool(opts.n_threads);
  quantize_summary sum;
  std::vector<uint8_t> buf, reordered;
  const auto reorder = checkpoint_order_heads(*profile);
  for (size_t i = 0; i < descs.size(); ++i) {
    if (opts.cancel && opts.cancel->load()) return make_error("{}: interrupted", out_path);
    const tensor_desc& d = descs[i];
    gguf::tensor_info src = *f.find_tensor(d.name);
    if (auto it = reorder.find(d.name); it != reorder.end()) {
      const int64_t rows = d.dims.size() == 1 ? d.dims[0] : src.n_elements() / d.dims[0];
      const auto [heads, head_dim] = it->second;
      if (rows != heads * head_dim)  // the loader refuses such a model; so does its quantization
        return make_error("{}: tensor {} has {} rows; {} heads of {} need {}", in_path, d.name, rows, heads, head_dim, heads * head_dim);
      auto s = interleave_rope_rows({src.data, size_t(src.n_bytes)}, reordered, rows, heads, d.name);
      if (!s) return make_error("{}: {}", in_path, s.message());
      src.data = reordered.data();
    }
    const dtype to = (*types)[i];
    sum.bytes_in += src.n_bytes;
    ++sum.n_tensors;
    const int64_t ne0 = d.dims[0];
    const int64_t n_rows = src.n_elements() / ne0;
    const type_traits& from = type_info(d.type);
    const type_traits& tt = type_info(to);
    const size_t src_rb = row_bytes(from, ne0), dst_rb = row_bytes(tt, ne0);
    const int64_t chunk = std::max<int64_t>(1, k_chunk_elems / ne0);
    const bool copy = to == d.type;
    if (!copy) buf.assign(size_t(n_rows) * dst_rb, 0);
    // Every tensor is checked, those copied as they are too (a NaN in a norm vector is as fatal as one
    // in a matrix, only found later).
    status s = for_row_chunks(pool, n_rows, ne0, chunk, [&](int64_t r0, int64_t r1, float* x) -> status {
      from.dequantize_row(src.data + size_t(r0) * src_rb, x, (r1 - r0) * ne0);
      const int64_t bad = first_non_finite_row(x, r1 - r0, ne0);
      if (bad >= 0) return make_error("tensor {}: row {} holds a value that is not finite", d.name, r0 + bad);
      if (copy) return {};
      uint8_t* q = buf.data() + size_t(r0) * dst_rb;
      for (int64_t r = r0; r < r1; ++r) tt.quantize_row(x + (r - r0) * ne0, q + size_t(r - r0) * dst_rb, ne0);
      // What the output holds, read back: a value or a block scale past the type's range (F16 and
      // the blocks' fp16 scales end at 65504; BF16 to F16 is where it happens) becomes inf.
      tt.dequantize_row(q, x, (r1 - r0) * ne0);
      if (const int64_t over = first_non_finite_row(x, r1 - r0, ne0); over >= 0)
        return make_error("tensor {}: row {} holds values beyond what {} can store (its 16-bit floats end at 65504); keep "
                          "this tensor in a wider type", d.name, r0 + over, tt.name);
      return {};
    });
    if (!s) return make_error("{}: {}", in_path, s.message());
    if (copy) {
      GLIA_TRY(out.value()->write_next({src.data, size_t(src.n_bytes)}));
      sum.bytes_out += src.n_bytes;
      if (opts.log)
        opts.log(fmt::format("[{:4}/{:4}] {:>36} - [{}], type = {:>6}, size = {:8.3f} MiB", i + 1, descs.size(), d.name,
                             shape_text(d.dims), from.name, double(src.n_bytes) / (1 << 20)));
      continue;
    }
    GLIA_TRY(out.value()->write_next(buf));
    sum.bytes_out += buf.size();
    ++sum.n_quantized;
    if (opts.log)
      opts.log(fmt::format("[{:4}/{:4}] {:>36} - [{}], type = {:>6}, converting to {:>6} .. size = {:8.3f} MiB -> {:8.3f} MiB",
                           i + 1, descs.size(), d.name, shape_text(d.dims), from.name, tt.name,
                           double(src.n_bytes) / (1 << 20), double(buf.size()) / (1 << 20)));
  }
  GLIA_TRY(out.value()->finish());
  return sum;
}

}  // namespace glia
