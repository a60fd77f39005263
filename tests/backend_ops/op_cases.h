// The op-case table of the harness and the attention fixtures shared with the invariance tests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"

namespace glia::test {

struct op_case {
  std::string name;  // [A-Za-z0-9_] only: it becomes part of the gtest name
  double tol;        // largest normalized MSE against the reference (0: bit-exact)
  // Builds the inputs from fixed seeds, runs the op on the backend, returns what the op wrote.
  std::function<std::vector<float>(backend&)> run;
};

const std::vector<op_case>& all_op_cases();

struct kv_shape {
  dtype type;
  int64_t n_slots;
  int n_kv_head, head_dim_k, head_dim_v;
};

struct attn_case {
  int n_head;
  float scale, softcap;
  int window;
};

struct attn_config {
  std::string name;
  kv_shape kv;
  attn_case attn;
};

// Random K/V contents with shuffled slot positions 0..n_slots-1 and every fifth slot empty. The
// contents depend on the seed only; `order` lays them out (a backend's kv_layout()).
struct kv_fixture {
  kv_fixture(const kv_shape& s, uint32_t seed, kv_order order = kv_order::slot_major);
  kv_layer_view view();
  kv_shape shape;
  kv_order order;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> slot_pos;
};

std::vector<attn_config> attention_configs();

// Activations x of n_tok tokens converted for mm kernel mk as a matmul converts them (quantized
// rows, block scales and sums, widened rows for the float kernels), and the act_rows over them.
struct converted {
  std::vector<uint8_t> bytes;
  std::vector<float> d;
  std::vector<int32_t> sum;
  std::vector<float> wide;
  cpu::act_rows rows;
};
converted convert(const cpu::mm_kernel& mk, const std::vector<float>& x, int64_t n_in, int64_t n_tok);

// The ISA levels with matmul kernels that this host runs (AVX2, and AVX-512 VNNI and AMX where present).
std::vector<cpu::isa_level> host_mm_levels();

// The CPU kernel tables with an attend of their own that the host runs, weakest first (AVX2, then
// AVX-512 where present; NEON on aarch64); each names its ISA in attend_isa.
std::vector<const cpu::kernel_table*> host_attend_tables();

// Output of attention for tokens [first_tok, first_tok + n_tok) of a fixed batch of attn_max_batch
// queries (first_tok + n_tok <= attn_max_batch), so sub-batches can be compared with the full one.
// The cache is laid out in `order`, by default the backend's own.
inline constexpr int64_t attn_max_batch = 8;
std::vector<float> run_attention(backend& b, const kv_shape& s, const attn_case& a, int64_t n_tok, int64_t first_tok,
                                 std::optional<kv_order> order = std::nullopt);

// A NaN score (a NaN in a query, or in a key the query sees: a broken weight upstream) must come out
// of `b`'s attention as NaN, so that the forward pass's non-finite check names the layer and
// position; a NaN in a key no query sees changes nothing. The online softmax's max skips NaN, and
// the CPU division once read the NaN weight sum as "no visible key" and wrote zeros. 3000 slots, so
// that backends split the row into parts and merge them.
void expect_nan_scores_come_out(backend& b, const std::string& label);

}  // namespace glia::test
