// The type table: one row per implemented type, plus the names of every ggml type id so that a
// loader can say which unsupported type a file uses.
#include <array>
#include <cassert>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "quant/block_types.h"
#include "quant/ref_kernels.h"
#include "quant/types.h"

namespace glia {
namespace {

using namespace quant;

constexpr type_traits k_types[] = {
    {dtype::f32, "F32", 1, 4, false, dequantize_row_f32, quantize_row_f32, dtype::f32, vec_dot_f32},
    {dtype::f16, "F16", 1, 2, false, dequantize_row_f16, quantize_row_f16, dtype::f16, vec_dot_f16},
    {dtype::bf16, "BF16", 1, 2, false, dequantize_row_bf16, quantize_row_bf16, dtype::bf16, vec_dot_bf16},
    {dtype::q4_0, "Q4_0", qk_legacy, sizeof(block_q4_0), true, dequantize_row_q4_0, quantize_row_q4_0, dtype::q8_0,
     vec_dot_q4_0_q8_0},
    {dtype::q4_1, "Q4_1", qk_legacy, sizeof(block_q4_1), true, dequantize_row_q4_1, quantize_row_q4_1, dtype::q8_1,
     vec_dot_q4_1_q8_1},
    {dtype::q5_0, "Q5_0", qk_legacy, sizeof(block_q5_0), true, dequantize_row_q5_0, quantize_row_q5_0, dtype::q8_0,
     vec_dot_q5_0_q8_0},
    {dtype::q5_1, "Q5_1", qk_legacy, sizeof(block_q5_1), true, dequantize_row_q5_1, quantize_row_q5_1, dtype::q8_1,
     vec_dot_q5_1_q8_1},
    {dtype::q8_0, "Q8_0", qk_legacy, sizeof(block_q8_0), true, dequantize_row_q8_0, quantize_row_q8_0, dtype::q8_0,
     vec_dot_q8_0_q8_0},
    {dtype::q8_1, "Q8_1", qk_legacy, sizeof(block_q8_1), true, dequantize_row_q8_1, quantize_row_q8_1, dtype::q8_1,
     vec_dot_q8_1_q8_1},
    {dtype::q2_k, "Q2_K", qk_k, sizeof(block_q2_k), true, dequantize_row_q2_k, quantize_row_q2_k, dtype::q8_k,
     vec_dot_q2_k_q8_k},
    {dtype::q3_k, "Q3_K", qk_k, sizeof(block_q3_k), true, dequantize_row_q3_k, quantize_row_q3_k, dtype::q8_k,
     vec_dot_q3_k_q8_k},
    {dtype::q4_k, "Q4_K", qk_k, sizeof(block_q4_k), true, dequantize_row_q4_k, quantize_row_q4_k, dtype::q8_k,
     vec_dot_q4_k_q8_k},
    {dtype::q5_k, "Q5_K", qk_k, sizeof(block_q5_k), true, dequantize_row_q5_k, quantize_row_q5_k, dtype::q8_k,
     vec_dot_q5_k_q8_k},
    {dtype::q6_k, "Q6_K", qk_k, sizeof(block_q6_k), true, dequantize_row_q6_k, quantize_row_q6_k, dtype::q8_k,
     vec_dot_q6_k_q8_k},
    {dtype::q8_k, "Q8_K", qk_k, sizeof(block_q8_k), true, dequantize_row_q8_k, quantize_row_q8_k, dtype::q8_k,
     vec_dot_q8_k_q8_k},
    {dtype::iq4_nl, "IQ4_NL", qk_legacy, sizeof(block_iq4_nl), true, dequantize_row_iq4_nl, quantize_row_iq4_nl,
     dtype::q8_0, vec_dot_iq4_nl_q8_0},
    {dtype::iq4_xs, "IQ4_XS", qk_k, sizeof(block_iq4_xs), true, dequantize_row_iq4_xs, quantize_row_iq4_xs,
     dtype::q8_k, vec_dot_iq4_xs_q8_k},
};

constexpr uint32_t k_max_id = 40;  // ids 0..39 are named (ggml.h, GGML_TYPE_COUNT = 40)

// Row index per type id, -1 where not implemented.
constexpr std::array<int, k_max_id> make_index() {
  std::array<int, k_max_id> index{};
  for (auto& v : index) v = -1;
  for (int i = 0; i < int(std::size(k_types)); ++i) index[uint32_t(k_types[i].type)] = i;
  return index;
}
constexpr auto k_index = make_index();

// ggml's names of the ids it defines; empty for ids it retired (4, 5, 31-33, 36-38).
constexpr std::array<std::string_view, k_max_id> k_names = {
    "F32",     "F16",    "Q4_0",   "Q4_1",  "",     "",      "Q5_0",  "Q5_1",    "Q8_0", "Q8_1",
    "Q2_K",    "Q3_K",   "Q4_K",   "Q5_K",  "Q6_K", "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
    "IQ4_NL",  "IQ3_S",  "IQ2_S",  "IQ4_XS", "I8",  "I16",   "I32",   "I64",     "F64",  "IQ1_M",
    "BF16",    "",       "",       "",      "TQ1_0", "TQ2_0", "",      "",        "",     "MXFP4",
};

// Names of the table rows must agree with ggml's spelling.
constexpr bool names_agree() {
  for (const auto& t : k_types)
    if (k_names[uint32_t(t.type)] != std::string_view(t.name)) return false;
  return true;
}
static_assert(names_agree());

}  // namespace

const type_traits* find_type(uint32_t id) {
  if (id >= k_max_id || k_index[id] < 0) return nullptr;
  return &k_types[k_index[id]];
}

const type_traits& type_info(dtype t) {
  const type_traits* row = find_type(uint32_t(t));
  // Every dtype enumerator has a row, so only a value cast from an unchecked integer lands here: a
  // programming error (ids read from files go through find_type).
  assert(row != nullptr);
  if (row == nullptr) std::abort();
  return *row;
}

std::span<const type_traits> all_types() { return k_types; }

std::string_view type_name(uint32_t id) {
  if (id < k_max_id && !k_names[id].empty()) return k_names[id];
  // Unknown ids get "type N"; the strings live for the whole program (map nodes never move).
  // The cache is bounded so hostile files cannot grow it without limit.
  static std::mutex mu;
  static std::map<uint32_t, std::string> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(id);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 1024) return "unknown type";
  return cache.emplace(id, "type " + std::to_string(id)).first->second;
}

}  // namespace glia
