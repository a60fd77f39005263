// Model quantization (the `glia quantize` and `glia synth` tools): llama.cpp's file types and its
// rules for which tensor gets which type, row-parallel quantization with the type table's
// reference routines, and a GGUF writer that streams tensor data so that a model is never held in
// memory twice.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "model/output_file.h"
#include "quant/types.h"

namespace glia {

// ---- File types ------------------------------------------------------------------------------

// llama.cpp's `enum llama_ftype` values, written as general.file_type.
enum class file_type : uint32_t {
  all_f32 = 0,
  mostly_f16 = 1,
  mostly_q4_0 = 2,
  mostly_q4_1 = 3,
  mostly_q8_0 = 7,
  mostly_q5_0 = 8,
  mostly_q5_1 = 9,
  mostly_q2_k = 10,
  mostly_q3_k_s = 11,
  mostly_q3_k_m = 12,
  mostly_q3_k_l = 13,
  mostly_q4_k_s = 14,
  mostly_q4_k_m = 15,
  mostly_q5_k_s = 16,
  mostly_q5_k_m = 17,
  mostly_q6_k = 18,
  mostly_iq4_nl = 25,
  mostly_iq4_xs = 30,
  mostly_bf16 = 32,
};

struct file_type_info {
  file_type ftype;
  const char* name;  // llama-quantize's spelling: "Q4_K_M"
  dtype base;        // the type most weights get
};

// Every file type the tools produce.
std::span<const file_type_info> all_file_types();
const file_type_info* find_file_type(file_type ft);
// Case-insensitive; also llama-quantize's aliases Q3_K = Q3_K_M, Q4_K = Q4_K_M, Q5_K = Q5_K_M.
std::optional<file_type> parse_file_type(std::string_view name);
// A weight type for --token-embedding-type / --output-tensor-type ("q6_K", "F16"...): any type of the
// table with a quantize routine, except the activation-only Q8_1 and Q8_K.
std::optional<dtype> parse_weight_type(std::string_view name);

// ---- Which tensor gets which type --------------------------------------------------------------

struct mix_options {
  file_type ftype = file_type::mostly_q8_0;
  std::optional<dtype> token_embd_type;  // --token-embedding-type
  std::optional<dtype> output_type;      // --output-tensor-type
  bool pure = false;                     // every quantized tensor gets the base type
  bool leave_output = false;             // --leave-output-tensor: output.weight keeps its type
};

// What llama.cpp's rules read about the model.
struct mix_facts {
  int n_layer = 0;
  int n_gqa = 1;  // query heads per KV head (layer 0)
};

struct tensor_desc {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the row length
  dtype type = dtype::f32;    // type in the source
};

// llama.cpp's processing order (its loader's weight map): tensors outside layers first, then
// layer by layer, by name within each group. The mix rules count attn_v / ffn_down tensors in this
// order, and llama-quantize writes its output in it.
bool llama_tensor_order(const std::string& a, const std::string& b);
// Whether llama-quantize converts this tensor at all: a 2-D "*weight" that is not a norm.
bool is_quantizable(const tensor_desc& t);

// Output type of each tensor (`tensors` in llama_tensor_order): non-quantizable tensors keep their
// type; the others follow llama.cpp's llama_tensor_get_type rules for the mix (attn_v, ffn_down,
// attn_output, output and token_embd upgrades; fallbacks for rows that are not a multiple of the
// block size, e.g. Q4_K -> Q5_0, Q6_K -> Q8_0), then the explicit overrides. Errors: a row length
// that no type of the fallback chain can hold.
result<std::vector<dtype>> plan_tensor_types(std::span<const tensor_desc> tensors, const mix_options& opts,
                                             const mix_facts& facts);

// ---- Quantizing rows ---------------------------------------------------------------------------

// Converts rows [n_rows, n_per_row] of floats to `type` with the table's reference routine,
// in parallel over rows. Errors: a non-finite input value (naming its row), a row length that is
// not a multiple of the block size.
status quantize_rows(thread_pool& pool, dtype type, const float* src, int64_t n_rows, int64_t n_per_row, uint8_t* dst);

// Calls fill(row_begin, row_end, scratch) over [0, n_rows) in chunks of up to chunk_rows rows,
// spread over the pool's threads; scratch holds chunk_rows * n_per_row floats per thread. Returns
// the first error a call returned.
status for_row_chunks(thread_pool& pool, int64_t n_rows, int64_t n_per_row, int64_t chunk_rows,
                      const std::function<status(int64_t, int64_t, float*)>& fill);

// ---- Streaming GGUF output ---------------------------------------------------------------------

struct planned_tensor {
  std::string name;
  std::vector<int64_t> dims;
  dtype type = dtype::f32;
};

// Writes a GGUF v3 file whose header (metadata and tensor index) is known up front and whose
// tensor data arrives one tensor at a time, in plan order, so only one tensor is in memory. The
// layout is the gguf::writer's (and llama.cpp's): data aligned to general.alignment (32 default).
// The file is an output_file: a failed run leaves what the path held.
class gguf_stream_writer {
 public:
  static result<std::unique_ptr<gguf_stream_writer>> create(const std::string& path,
                                                             std::vector<std::pair<std::string, gguf::value>> metadata,
                                                             std::vector<planned_tensor> tensors);
  ~gguf_stream_writer();
  gguf_stream_writer(const gguf_stream_writer&) = delete;
  gguf_stream_writer& operator=(const gguf_stream_writer&) = delete;

  // The next tensor's bytes (exactly what its type and dims need).
  status write_next(std::span<const uint8_t> data);
  // Checks every tensor was written, closes the file and puts it in place. A writer destroyed
  // before finish() succeeded removes its partial file and leaves `path` as it was.
  status finish();
  uint64_t bytes_written() const { return offset_; }

 private:
  gguf_stream_writer() = default;
  status put(const void* data, size_t n);
  status pad();

  std::string path_;
  std::optional<output_file> out_;  // empty once finished
  std::vector<planned_tensor> tensors_;
  size_t next_ = 0;
  uint64_t alignment_ = 32;
  uint64_t offset_ = 0;
};

// Sets general.file_type and general.quantization_version = 2 the way llama-quantize does (removed,
// then appended at the end of the metadata).
void set_quantized_file_keys(std::vector<std::pair<std::string, gguf::value>>& metadata, file_type ft);
// Sets `key` in a metadata list, an entry of that name replaced (the new one goes last).
void replace_key(std::vector<std::pair<std::string, gguf::value>>& metadata, const std::string& key, gguf::value v);

// ---- The quantize tool -----------------------------------------------------------------------

struct quantize_options {
  mix_options mix;
  int n_threads = 0;  // <= 0: one per hardware thread
  std::function<void(const std::string&)> log;  // one line per tensor, when set
  const std::atomic<bool>* cancel = nullptr;     // when it becomes true, the run stops between tensors
  // Keys the layers above derive from the input for the output (the CLI: llama.cpp's tokenizer keys
  // from a checkpoint's tokenizer.json), set after the copied ones and replacing those of their names.
  std::function<status(const gguf::file& in, gguf::writer& keys)> add_metadata;
};

struct quantize_summary {
  int n_tensors = 0;
  int n_quantized = 0;  // converted (the others were copied)
  uint64_t bytes_in = 0;   // tensor data of the source
  uint64_t bytes_out = 0;  // tensor data of the result
};

// Reads a GGUF model (F32/F16/BF16 or already quantized: dequantized first), converts its weights
// per the mix and writes `out_path` with all metadata copied and general.file_type /
// general.quantization_version set; tensors in llama.cpp's order.
result<quantize_summary> quantize_model(const std::string& in_path, const std::string& out_path,
                                        const quantize_options& opts);

}  // namespace glia
