// The hot inner loops of the CPU backend, with one implementation per instruction set. Each ISA file
// (kernels_avx2.cpp, kernels_neon.cpp) exports an isa_kernels record of dot products and activation
// quantizers, and the matmul, attend, GLU and norm kernels come as tables and functions of their
// own (resolve in cpu_kernels.cpp); kernels() picks, per entry, the first ISA in priority order that
// the host supports and that has the entry, and falls back to the scalar twins (the type table's
// reference vec_dot and quantize_row).
#pragma once

#include <bit>
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "backend/backend.h"
#include "core/fp16.h"
#include "quant/types.h"

namespace glia::cpu {

// A weight-type dot product written for one ISA. The block geometry it was written for is checked
// against the type table before the kernel is used, so a layout change can never be misread.
struct vec_dot_entry {
  dtype type;
  int64_t block_elems;
  size_t block_bytes;
  dtype dot_type;          // activation format the kernel reads
  size_t dot_block_bytes;  // and its block size in bytes
  vec_dot_fn fn;           // (weight row, activation row in dot_type, n)
};

// Activation quantizers with fast twins, named by the reference routine a twin reproduces bit for
// bit: the type table's quantize_row of Q8_0 / Q8_K / F16, or the x86 variant of Q8_0 or Q8_1
// (quant/activation.h). A twin is used only where matmul asks for exactly that reference.
enum class act_quantizer { q8_0, q8_0_x86, q8_1_x86, q8_k, f16 };

struct quantize_entry {
  act_quantizer reproduces;
  quantize_row_fn fn;
};

// Activations of one matmul converted to the weight's dot_type (bytes identical to the reference
// conversion), plus per-block values that panel kernels would otherwise recompute for every weight
// row: the Q8_0 block scale as float and the sum of the block's quants.
struct act_rows {
  const uint8_t* data = nullptr;  // [n_tok] rows of `stride` bytes in dot_type
  size_t stride = 0;
  const float* d = nullptr;      // [n_tok, nb] block scales (only when the kernel asks for block sums)
  const int32_t* sum = nullptr;  // [n_tok, nb] sums of the block quants (idem)
  int64_t nb = 0;                // blocks per row
  // Only when the kernel has widen: the rows as floats in blocks of wide_tokens tokens (the
  // kernel's wide_block, or fewer when the call has fewer tokens), element-major within a block
  // (see wide_offset), so that a tile of tokens finds element k of all of them side by side.
  const float* wide = nullptr;
  int64_t wide_tokens = 0;
  const uint8_t* row(int64_t t) const { return data + size_t(t) * stride; }
  // Token t's element 0 in wide; its element k lies at + k * wide_tokens.
  const float* wide_at(int64_t t) const;
};

// Matmul kernels for one weight type that reproduce the type table's reference vec_dot bit for bit
// (the same exact integer block sums, then the same float operations in the same order per output),
// so whichever of them computes an output (and however the work is tiled or threaded) the bits are
// those of the reference. gemm reads panels of 8 rows interleaved so that one vector holds the 8
// rows: panels either prepared once for the whole matrix (backend::prepare_weight) or packed per
// call into thread-local scratch and reused for many tokens; gemv reads the file's rows in place for
// a few tokens (unprepared weights only).
// Most tokens one gemv call takes: a few decode steps batched together (the server's small batches)
// read and unpack each weight block once for all of them; from gemv_max_tokens + 1 tokens on, the
// gemm path's packing pays for itself.
constexpr int64_t gemv_max_tokens = 3;

struct mm_kernel {
  dtype type;
  int64_t block_elems;
  size_t block_bytes;
  dtype dot_type;
  size_t dot_block_bytes;
  bool needs_block_sums;      // act_rows.d and .sum must be filled (see block_sums)
  size_t packed_block_bytes;  // bytes of one block of an 8-row panel
  // Packs rows [r0, r0 + n_rows) of w (1 <= n_rows <= 8; missing rows repeat the last) into `out`
  // (nb * packed_block_bytes bytes; kernels read panels at any address).
  void (*pack)(const weight_view& w, int64_t r0, int n_rows, uint8_t* out);
  // y[t * y_stride + r] = row r of n_panels consecutive panels (panel_bytes apart) . activation row
  // t0 + t, for t < n_tok and r < 8 (n_panels - 1) + last_rows (the last panel holds last_rows).
  void (*gemm)(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, const act_rows& a,
               int64_t t0, int64_t n_tok, float* y, size_t y_stride, int last_rows);
  // y[t * y_stride + r - r0] = row r of w . activation row t0 + t, for r in [r0, r1) and
  // t < n_tok, 1 <= n_tok <= gemv_max_tokens (more tokens take the gemm path).
  void (*gemv)(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, int64_t n_tok, float* y,
               size_t y_stride);
  // Fills d[0..nb) and sum[0..nb) for one activation row (null when needs_block_sums is false).
  void (*block_sums)(const uint8_t* act_row, int64_t nb, float* d, int32_t* sum);
  // The same dot for one row and one activation row in dot_type, on its own (no block sums): the
  // kernel table's vec_dot for this type, and the spec the batched kernels are tested against.
  vec_dot_fn dot;
  // Decode of one token (activation row t) in two streams: y_first[8p + r] and y_second[8p + r] =
  // row r of panel p of the n_panels consecutive full (8-row) panels at `panels` and at
  // `panels + second`, the two panels of each pair read side by side. A core keeps more of memory's
  // bandwidth busy with two sequential streams in flight than with one (see rows8x2). Null: the
  // type's decode reads one stream (gemm).
  void (*gemv_streams)(const uint8_t* panels, size_t second, size_t panel_bytes, int64_t n_panels, int64_t nb,
                       const act_rows& a, int64_t t, float* y_first, float* y_second) = nullptr;
  // Float weights: writes the n elements of an activation row in dot_type as floats, element k at
  // out[k * out_stride] (act_rows.wide). Null: no wide rows.
  void (*widen)(const uint8_t* act_row, int64_t n, float* out, int64_t out_stride) = nullptr;
  // Tokens per block of the widened rows: the gemm's token tiles, which never straddle a block.
  int wide_block = 0;
  // Where set, gemm computes whole groups of this many tokens in one step (AMX: a tile's 16 rows)
  // and the rest of a call's tokens more slowly, and first prepares the call's panels for that:
  // matmul hands it all tokens at once (or token tiles in multiples of it, beside other kernels).
  int tile_tokens = 0;

  // Panels no larger than the rows they hold: worth preparing once for the whole matrix, since
  // then one gemm kernel reads a single sequential stream of no more bytes than the file's rows,
  // for decode and prefill alike.
  bool compact_panels() const { return packed_block_bytes <= 8 * block_bytes; }
};

// The layout of widened activations (act_rows::wide) of n_tok tokens of n elements for kernel mk:
// blocks of wide_tokens tokens, token t's element k at wide_offset(t, n, wide_tokens) + k *
// wide_tokens. A tile reads its tokens' element k side by side, and its whole block as one
// sequential stream (token-major rows would need a pointer per token; one element-major array a
// stride of n_tok floats per element, a new page every few elements).
inline int64_t wide_tokens(const mm_kernel& mk, int64_t n_tok) { return std::min<int64_t>(n_tok, mk.wide_block); }
inline int64_t wide_offset(int64_t t, int64_t n, int64_t wide_tokens) {
  return (t / wide_tokens) * n * wide_tokens + t % wide_tokens;
}
// Floats the widened rows take (the last block is whole, if not full).
inline size_t wide_floats(int64_t n_tok, int64_t n, int64_t wide_tokens) {
  return size_t((n_tok + wide_tokens - 1) / wide_tokens * wide_tokens * n);
}
inline const float* act_rows::wide_at(int64_t t) const { return wide + wide_offset(t, nb, wide_tokens); }

// Attention of n_tok query positions for the n_q query heads that share one KV head (a GQA group):
// out[t][h] = softmax_s(softcap(scale * q[t][h] . K[s])) . V over the slots s visible to token t.
// The slots are visited in chunks of attend_chunk by slot index (chunk c: slots 64c..64c+63) with
// an online softmax; vis[t][c] says which slots of chunk c token t sees (bit i: slot 64c + i). A
// row's result depends only on its query, its visibility bits and the cache, never on the other
// heads or tokens of the job (batch invariance: a token attended alone gets the same bits).
struct attend_job {
  const float* q = nullptr;  // row (t, h) at q + t * q_stride + h * dk
  float* out = nullptr;      // row (t, h) at out + t * out_stride + h * dv
  int64_t q_stride = 0, out_stride = 0;
  int n_tok = 1, n_q = 0, dk = 0, dv = 0;
  bool f16 = true;           // K/V elements are fp16 (else f32)
  const void* k = nullptr;   // this KV head's K row in slot 0 (or its first chunk, k_chunks)
  const void* v = nullptr;   // and its V row
  // K stored in transposed chunks (kv_order::head_major_kt): element d of slot s at
  // k + kv_kt_offset(s, dk, d); k_stride unused.
  bool k_chunks = false;
  int64_t k_stride = 0;      // elements between the K rows of consecutive slots
  int64_t v_stride = 0;
  int64_t n_slots = 0;
  const uint64_t* vis = nullptr;  // token t's words at vis + t * vis_stride, vis_words of them
  int64_t vis_words = 0;          // ceil(n_slots / 64)
  int64_t vis_stride = 0;         // 0: vis_words
  // Where set, the job stops before the normalization: row (t, h) gets m, l and the dv unnormalized
  // sums at partial + (t * n_q + h) * (dv + 2) (a part of a longer context; cpu_attention merges).
  float* partial = nullptr;
  uint64_t vis_bits(int t, int64_t w) const { return vis[t * (vis_stride > 0 ? vis_stride : vis_words) + w]; }
  float scale = 1.0f;
  float softcap = 0.0f;  // > 0: scores become softcap * tanh(score / softcap)
};

// Element `index` of a job's K or V buffer (fp16 or f32) as a float.
inline float kv_element(const attend_job& j, const void* base, int64_t index) {
  return j.f16 ? fp16_to_f32(static_cast<const uint16_t*>(base)[index]) : static_cast<const float*>(base)[index];
}

// Slots per step of the online softmax (one visibility word), and the scratch every attend
// implementation gets: attend_scratch_floats(n_tok * n_q, dk, dv) floats, 32-byte aligned.
inline constexpr int attend_chunk = 64;
static_assert(attend_chunk == kv_kt_chunk, "a transposed K chunk is one visibility word");
// Index of element d of slot s in a job's K buffer, either layout.
inline int64_t key_index(const attend_job& j, int64_t s, int d) {
  return j.k_chunks ? kv_kt_offset(s, j.dk, d) : s * j.k_stride + d;
}

// Contexts longer than this are attended in segments of it (by slot index) and merged.
inline constexpr int64_t attend_segment_slots = 1024;
size_t attend_scratch_floats(int n_rows, int dk, int dv);
// Slots [0, n) of a chunk reach its last visible one (bits != 0): the part an attend must read.
inline int visible_extent(uint64_t bits) { return std::bit_width(bits); }

// Bit i: whether slot i of [0, cnt) (cnt <= 64), holding key position slot_pos[i], is visible from
// query_pos (ref::slot_visible). A prefill at depth asks this for every slot and token, so as one
// unsigned comparison the compiler vectorizes: 0 <= key <= query and query - key < window is
// uint32(query - key) <= min(query, window - 1); then 8 flag bytes at a time packed into bits
// (little-endian loads, as on every target).
inline uint64_t visible_bits(const int32_t* slot_pos, int cnt, int32_t query_pos, int window) {
  if (query_pos < 0) return 0;
  const uint32_t limit = uint32_t(window > 0 ? std::min(query_pos, window - 1) : query_pos);
  uint8_t flag[attend_chunk] = {};
  for (int i = 0; i < cnt; ++i) flag[i] = uint32_t(query_pos) - uint32_t(slot_pos[i]) <= limit;
  uint64_t bits = 0;
  for (int b = 0; b < attend_chunk / 8; ++b) {
    uint64_t x;
    std::memcpy(&x, flag + 8 * b, 8);
    bits |= (x * 0x0102040810204080ull) >> 56 << (8 * b);  // byte j's low bit to bit j
  }
  return bits;
}

// The parts of an attend scratch (cpu_attention.cpp defines the layout once), every part a
// multiple of 8 floats so that each stays 32-byte aligned.
struct attend_parts {
  size_t pk = 0, pv = 0;  // dk, dv rounded up to the kernel's vector width
  float* kc = nullptr;      // [pk][chunk]: a chunk's K rows as floats, transposed (room for either)
  float* vc = nullptr;      // [chunk][pv]: a chunk's V rows, zero past dv
  float* scores = nullptr;  // [rows][chunk]
  float* acc = nullptr;     // [rows][pv] weighted sums of V rows
  float* m = nullptr;       // [rows] running maxima
  float* l = nullptr;       // [rows] running sums of e^(s - m)
};
// The parts of `scratch` for job j, with acc, m and l set for the start of the online softmax;
// pk and pv are dk and dv rounded up to `lanes` (4, 8 or 16: the kernel's vector width).
attend_parts attend_begin(const attend_job& j, float* scratch, int lanes = 8);
// The last step of every attend: out = acc / l per query row, zeros for a row that saw no slot (or
// m, l and acc to j.partial).
void attend_output(const attend_job& j, const attend_parts& s);

using attend_fn = void (*)(const attend_job& job, float* scratch);  // scratch: 32-byte aligned

// out[i] = activate(gate[i]) * up[i] for i < n (ref::activate's SiLU or GELU). An ISA version
// gives the reference's bits for GELU (the same fp16 table) and SiLU within 2 ulp of e^-x; either
// way out[i] depends on element i alone, so any split of the work gives the same bits.
using glu_fn = void (*)(const float* gate, const float* up, float* out, int64_t n, activation act);
void scalar_glu(const float* gate, const float* up, float* out, int64_t n, activation act);

// rms_norm's sum of squares (ref::sum_of_squares' signature; ref_ops.h is not included here, the
// ISA files include this header); ISA versions give the reference's bits, and ref::rms_norm_row
// takes one for the rest of the row.
using sum_of_squares_fn = double (*)(const float* x, int64_t n);

// What one instruction set provides; null members mean "not written for this ISA".
struct isa_kernels {
  const char* name;
  std::span<const vec_dot_entry> vec_dots;
  std::span<const quantize_entry> quantizers;
};

// ISA records, defined in their own files (compiled with that ISA's flags: they must only be called
// after the host check in cpu_kernels.cpp, and must neither define nor call inline functions shared
// with other files, or the linker could keep the ISA-flavoured copy for everyone).
const isa_kernels& avx2_kernels();
// The NEON dot products (kernels_neon.cpp, built on aarch64 only), with the activation quantizers
// of quantize_neon.cpp.
const isa_kernels& neon_kernels();
std::span<const quantize_entry> neon_quantizers();
// The matmul kernels of every weight type (mm_legacy_kernels.h: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// IQ4_NL; mm_kquants_*kernels.h: Q2_K..Q6_K, IQ4_XS; mm_float_kernels.h: F16, BF16, F32) built for
// AVX2, and for AVX-512 VNNI + VL (same panels and results; byte dot products in one instruction).
// q4_0_decode_pairs: the AVX-512 tables where Q4_0 (and Q4_1, Q5_0, Q5_1, IQ4_NL with it) decodes
// two panels per 512-bit vector.
// amd_form: the decode form tuned on AMD's cores (k-quants: panel pairs on AVX-512, each block
// prefetched whole as it begins; two streams side by side prefetch 1 KiB ahead) rather than the
// others' (k-quants: single panels, the prefetch spread over the block; streams 2 KiB ahead). Which
// CPUs get which: decode_forms_on in cpu_kernels.cpp; every form gives the same bits.
std::span<const mm_kernel> avx2_mm_legacy(bool amd_form);
std::span<const mm_kernel> avx2_mm_kquants(bool amd_form);
std::span<const mm_kernel> avx512vnni_mm_legacy(bool q4_0_decode_pairs, bool amd_form);
std::span<const mm_kernel> avx512vnni_mm_kquants(bool amd_form);
std::span<const mm_kernel> avx2_mm_float();
std::span<const mm_kernel> avx512vnni_mm_float();
// The AVX-512 VNNI kernels of the types whose prefill runs on AMX int8 tiles (Q8_0, Q4_0; Q4_K,
// Q5_K, Q6_K), the rest of each kernel as it is in the VNNI table (mm_legacy_amx.cpp,
// mm_kquants_amx.cpp; the decode forms likewise).
std::span<const mm_kernel> avx512amx_mm_legacy(bool q4_0_decode_pairs, bool amd_form);
std::span<const mm_kernel> avx512amx_mm_kquants(bool amd_form);
// The AMX tile configuration this thread loaded last (amx_tiles.h configure_tiles): one slot for
// all the files of AMX kernels, each of which has its own configurations (an untyped pointer:
// this header does not see the tile_config type, which only AMX files compile).
const void*& amx_tiles_of_thread();
attend_fn avx2_attend();        // attention_avx2.cpp
attend_fn avx512vnni_attend();  // attention_avx512vnni.cpp
attend_fn neon_attend();        // attention_neon.cpp (aarch64 only)
glu_fn avx2_glu();        // activation_avx2.cpp
sum_of_squares_fn avx2_sum_of_squares();  // norm_avx2.cpp
glu_fn neon_glu();                        // activation_neon.cpp (aarch64 only)
sum_of_squares_fn neon_sum_of_squares();  // norm_neon.cpp (aarch64 only)
// The portable attend (cpu_attention.cpp): plain loops, what hosts without an ISA version run.
void scalar_attend(const attend_job& job, float* scratch);

// The resolved table for this host.
struct kernel_table {
  const char* isa = "scalar";  // best ISA that contributed at least one kernel
  attend_fn attend = nullptr;
  const char* attend_isa = "scalar";
  glu_fn glu = nullptr;
  const char* glu_isa = "scalar";
  sum_of_squares_fn sum_of_squares = nullptr;
  static constexpr uint32_t max_type_id = 64;
  vec_dot_fn vec_dot_by_id[max_type_id] = {};
  const mm_kernel* mm_by_id[max_type_id] = {};
  const char* mm_isa_by_id[max_type_id] = {};
  const char* vec_dot_isa_by_id[max_type_id] = {};
  struct quantizer_twin {
    quantize_row_fn reference = nullptr;
    quantize_row_fn fast = nullptr;
    const char* isa = nullptr;
  };
  static constexpr int max_quantizers = 8;
  quantizer_twin quantizers[max_quantizers] = {};
  int n_quantizers = 0;

  // Fastest dot for weights of type t (the reference routine when no ISA has one).
  vec_dot_fn vec_dot(dtype t) const;
  // Name of the ISA whose kernel vec_dot(t) returns ("scalar" for the reference).
  const char* vec_dot_isa(dtype t) const;
  // Panel kernels for weights of type t, or null (matmul then tiles vec_dot calls).
  const mm_kernel* mm(dtype t) const;
  // Fastest routine with exactly the results of `reference` (a quantize_row_fn); the reference
  // itself when no twin exists.
  quantize_row_fn quantizer(quantize_row_fn reference) const;
};

// Resolved once for the host CPU.
const kernel_table& kernels();

// ISAs in priority order (weakest first; an architecture's levels are in order among themselves,
// and a host runs only its own: NEON is AArch64's). kernels_up_to(level) resolves the table with
// the ISAs up to `level` that the host has (tests compare the levels; kernels() is the best).
enum class isa_level { scalar, avx2, avx512vnni, avx512amx, neon };
const kernel_table& kernels_up_to(isa_level level);
// Scalar-only table (the reference twins): what a CPU without any SIMD extension would use.
const kernel_table& scalar_kernels();

}  // namespace glia::cpu
