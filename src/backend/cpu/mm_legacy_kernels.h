// Matmul kernels for the legacy 32-element-block weights (Q4_0, Q5_0, Q8_0, IQ4_NL with Q8_0
// activations; Q4_1, Q5_1 with Q8_1), bit-exact twins of the type table's reference vec_dot
// (quant/legacy_quants.cpp, quant/iq4.cpp): per block the exact integer sum of the quant products,
// then per output the reference's float chain over blocks,
//   Q4_0: sum += float(isum) * dw * da        Q8_0: sum += float(isum) * (dw * da),
//   Q5_0, IQ4_NL: sum += dw * da * float(isum),   Q4_1, Q5_1: sum += dw * da * float(isum) + mw * s,
// evaluated lane-wise with 8 weight rows in the 8 lanes of a vector (no fused multiply-add, no
// reassociation). Integer sums are exact whatever instruction sequence forms them, so the panel
// kernel (many tokens) and the in-place kernel (one token) give the reference's bits.
//
// Integer tricks (all exact):
//  - maddubs needs an unsigned operand: Q4_0 uses its codes q in 0..15 and subtracts 8 * sum(a)
//    (the activation block sums, computed once per matmul); Q8_0 multiplies |w| by a with w's sign
//    (pairs up to 2 * 128 * 127, widened to int32 before they are added).
//  - products of a nibble with an int8 pair up to 2 * 15 * 127 = 3810, so the 8 chunks of a block
//    add up in int16 (<= 30480) before one widening madd.
//
// Panel layout (one block of 8 rows), as compact as the file's own blocks (so a decode step that
// reads panels prepared at load reads no more bytes than one reading the file): the codes are cut
// into 4-byte cells and stored cell-major, [cell c][row r][4 bytes], so that one 32-byte load gives
// cell c of all 8 rows and a broadcast of the activation's matching 4 bytes lines up with every row;
// then the 8 row scales as fp16.
//  - Q4_0 (144 bytes): the file's 16 code bytes per row as 4 cells; the low nibbles of cell c are
//    elements 4c..4c+3, the high nibbles elements 16+4c..16+4c+3 (the Q4_0 element order), so one
//    load yields two chunks after a mask and a shift.
//  - Q8_0 (272 bytes): the 32 int8 codes per row as 8 cells, multiplied as |w| * sign(a, w).
//  - Q4_1 (160), IQ4_NL (144): Q4_0's, Q4_1 with the 8 row minima after the scales.
//  - Q5_0 (176), Q5_1 (192): Q4_0's cells, one word of regrouped high bits per row (see
//    regroup_q5_high_bits), the scales (and Q5_1's minima).
// Included by one .cpp per instruction set (compiled with that ISA's flags): everything here has
// internal linkage, so each gets its own copy (see simd_avx2.h).
#pragma once

#include "backend/cpu/panel_vectors.h"

#include <algorithm>
#include <array>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "quant/block_types.h"

namespace glia::cpu {
namespace {

using quant::block_q4_0;
using quant::block_q4_1;
using quant::block_q5_0;
using quant::block_q5_1;
using quant::block_q8_1;
using quant::block_iq4_nl;
using quant::block_q8_0;

constexpr size_t q4_0_packed = 128 + 16;
constexpr size_t q8_0_packed = 256 + 16;
constexpr size_t q8_0_qs_offset = 2;  // offsetof(block_q8_0, qs)

// The activation blocks the kernels read: Q8_0 (d, 32 quants) or Q8_1 (d, s, 32 quants).
struct q8_0_acts {
  static constexpr size_t block = sizeof(block_q8_0), qs = q8_0_qs_offset;
};
struct q8_1_acts {
  static constexpr size_t block = sizeof(block_q8_1), qs = 4;  // offsetof(block_q8_1, qs)
};

// Pointers into T consecutive activation rows from t0: the quants (at byte QsOffset of the first
// block), and the block scales and sums formed once per matmul (the kernels index them by block).
template <int T, size_t QsOffset = q8_0_qs_offset>
struct token_rows {
  const uint8_t* q[T];
  const float* d[T];
  const int32_t* sum[T];
  token_rows(const act_rows& a, int64_t t0) {
    for (int t = 0; t < T; ++t) {
      q[t] = a.data + size_t(t0 + t) * a.stride + QsOffset;
      d[t] = a.d + (t0 + t) * a.nb;
      sum[t] = a.sum + (t0 + t) * a.nb;
    }
  }
};

// Activation block sums of a Q8_0 or Q8_1 row: d as float, sum of the 32 quants.
template <class Block>
void q8_block_sums(const uint8_t* act_row, int64_t nb, float* d, int32_t* sum) {
  const auto* a = reinterpret_cast<const Block*>(act_row);
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    d[b] = half_to_float(a[b].d);
    // 1 * q summed in pairs (no saturation), then widened to int32.
    const __m256i q = load256(a[b].qs);
    sum[b] = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16));
  }
}
constexpr auto q8_0_block_sums = q8_block_sums<block_q8_0>;

// The fp16 s of the Q8_1 activation block whose quants start at q, as float.
float q8_1_s(const uint8_t* q) {
  uint16_t h;
  std::memcpy(&h, q - q8_1_acts::qs + 2, 2);
  return half_to_float(h);
}

// The reference's float step of a block for the types with a block minimum (Q4_1, Q5_1):
//   sum += dw * da * float(isum) + mw * s,
// lane-wise, each product rounded on its own (no FMA), added in the reference's order.
template <class V>
typename V::f min_block_step(typename V::f acc, typename V::f dw, typename V::f mw, float da, float s,
                             typename V::i isum) {
  const auto p = rounded(vmul(vmul(dw, V::set1_f(da)), vcvt(isum)));
  return vadd(acc, vadd(p, rounded(vmul(mw, V::set1_f(s)))));
}

// ---- Q4_0 ---------------------------------------------------------------------------------------

// The 4-byte cells of an 8-row group's blocks, cell-major: out[c][r] = cell c of row r's `n_cells`
// cells at byte `offset` of each block; then the 8 block scales (fp16 at byte 0), as they are.
void pack_cells(const weight_view& w, int64_t r0, int n_rows, size_t block_bytes, size_t offset, int n_cells,
                uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 32, block_bytes, size_t(n_cells) * 32 + 16, out,
                    [&](const uint8_t* const blk[8], uint8_t* dst) {
                      const uint8_t* codes[8];
                      for (int r = 0; r < 8; ++r) codes[r] = blk[r] + offset;
                      store_cells(codes, n_cells, dst);
                      store_block_halves(blk, 0, dst + 32 * n_cells);
                    });
}

void pack_q4_0(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_cells(w, r0, n_rows, sizeof(block_q4_0), 2, 4, out);
}

// Q4_0 and Q4_1 share a tile: 4-bit codes in Q4_0's cells, then the row scales (and for Q4_1 the
// row minima) as fp16. Q4_0's codes stand for q - 8 (the sum less 8 sum(a)); Q4_1's for q, plus
// the block minimum times the activation block's s (Q8_1).
struct q4_0_kind {
  using acts = q8_0_acts;
  static constexpr int bias = 8;
  static constexpr size_t packed = q4_0_packed;
};
struct q4_1_kind {
  using acts = q8_1_acts;
  static constexpr int bias = 0;
  static constexpr size_t packed = 128 + 16 + 16;
};

template <class K, int T, class V>
struct gemm_q4_tile {
  // AVX2 prefill in pairs of panels, 4 tokens a tile (gemm_panels): a broadcast activation cell
  // feeds 16 rows, ~9% fewer vector operations per block. Zen 4 with --cpu-isa avx2, alternated
  // rounds of pp512: Q4_0 1 thread 85-91 -> 94-101 t/s, 2 threads 135-175 -> 169-178; in cache
  // (MmKernelPerf) Q4_0 28.6 -> 32.2, Q4_1 27.6 -> 31.6 MAC/cycle. Every other AVX2 tile measured
  // slower in pairs (their unpacking needs more registers than AVX2's 16 leave): Q8_0, Q5_0,
  // Q5_1, IQ4_NL, the k-quants (Q4_K_M pp512 159-168 -> 118-127 t/s).
  static constexpr int pair_tokens = 4;
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n_rows) {
    using I = typename V::i;
    using F = typename V::f;
    const token_rows<T, K::acts::qs> rows(a, t0);
    const uint8_t* const* aq = rows.q;
    const float* const* ad = rows.d;
    [[maybe_unused]] const int32_t* const* as = rows.sum;
    const I low4 = V::set1_i8(0x0F);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += K::packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<K::packed>(panel, second);
      // Few tokens: the low and the high nibbles in separate sums, so that each dependency chain of
      // byte dot products is half as long (the sum of both stays within the int16 bound).
      constexpr int split = T <= 2 ? 2 : 1;
      // Prefill with VNNI: the int32 sums start at -8 sum(a) (one broadcast instead of a subtraction
      // later; decode measured a little slower that way).
      constexpr bool fold = byte_dot_vnni && T > gemv_max_tokens && K::bias != 0;
      I s[split][T];
      for (int h = 0; h < split; ++h)
        for (int t = 0; t < T; ++t) s[h][t] = fold && h == 0 ? V::set1_i32(-K::bias * as[t][b]) : V::zero();
      const size_t ab = size_t(b) * K::acts::block;
      for (int c = 0; c < 4; ++c) {
        const I v = V::load(panel + 32 * c, second);
        const I lo = vand(v, low4);  // elements 4c..4c+3
        // Elements 16+4c..: kept apart (split), they can stay in place (high_nibbles).
        const I hi = split == 2 ? high_nibbles<V>(v) : vand(vsrl16(v, 4), low4);
        for (int t = 0; t < T; ++t) {
          s[0][t] = tile_dot<T, V>(s[0][t], lo, aq[t] + ab + 4 * c);
          s[split - 1][t] = tile_dot<T, V>(s[split - 1][t], hi, aq[t] + ab + 16 + 4 * c);
        }
      }
      const F dw = V::halves(panel + 128, second);
      for (int t = 0; t < T; ++t) {
        const I st = split == 2 ? byte_dot_sum(s[0][t], high_nibble_sum<V>(s[1][t])) : s[0][t];
        if constexpr (K::bias == 0) {
          acc[t] = min_block_step<V>(acc[t], dw, V::halves(panel + 144, second), ad[t][b], q8_1_s(aq[t] + ab),
                                     byte_dot_widen(st));
        } else {
          const I isum = fold ? st : vsub32(byte_dot_widen(st), V::set1_i32(K::bias * as[t][b]));
          const F p = vmul(vmul(vcvt(isum), dw), V::set1_f(ad[t][b]));
          acc[t] = vadd(acc[t], rounded(p));
        }
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n_rows);
  }
};
template <int T, class V>
using gemm_q4_0_tile = gemm_q4_tile<q4_0_kind, T, V>;
template <int T, class V>
using gemm_q4_1_tile = gemm_q4_tile<q4_1_kind, T, V>;

// T tokens (1-3), 8 rows at a time straight from the file layout. Two rows share a vector (one per
// 128-bit half), multiplied with the activation's low 16 and high 16 quants broadcast to both
// halves; a hadd tree then leaves each row's sum in its own lane. The weight codes and scales of a
// block are unpacked once for all T tokens (a small batch of decode steps costs far less than T
// separate passes); each token's arithmetic is the one-token kernel's.
template <int T>
struct gemv_q4_0_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    const token_rows<T> tokens(a, t0);
    const uint8_t* const* arow = tokens.q;
    const float* const* ad = tokens.d;
    const int32_t* const* as = tokens.sum;
    const int64_t nb = w.n_in / 32;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i ones16 = _mm256_set1_epi16(1);
    const __m256i row_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    gemv_groups<T>(w, r0, r1, nb, y, ys, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
      const size_t wb = size_t(b) * sizeof(block_q4_0) + 2;
      __m256i lo[4], hi[4];
      for (int p = 0; p < 4; ++p) {
        const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(rows[2 * p] + wb)),
                                                  load128(rows[2 * p + 1] + wb), 1);
        lo[p] = _mm256_and_si256(v, low4);
        hi[p] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      }
      const __m256 dw = gather_halves(rows, wb - 2);
      for (int t = 0; t < T; ++t) {
        const uint8_t* aq = arow[t] + size_t(b) * sizeof(block_q8_0);
        const __m256i a_lo = _mm256_broadcastsi128_si256(load128(aq));       // quants 0-15, twice
        const __m256i a_hi = _mm256_broadcastsi128_si256(load128(aq + 16));  // quants 16-31, twice
        // Lanes 0-7: row 2p, 8-15: row 2p+1; each the sum of two pairs, |.| <= 2 * 3810.
        __m256i m[4];
        for (int p = 0; p < 4; ++p)
          m[p] = _mm256_add_epi16(_mm256_maddubs_epi16(lo[p], a_lo), _mm256_maddubs_epi16(hi[p], a_hi));
        // Low half: rows 0, 2, 4, 6; high half: rows 1, 3, 5, 7; two int16 per row, |.| <= 30480.
        const __m256i h = _mm256_hadd_epi16(_mm256_hadd_epi16(m[0], m[1]), _mm256_hadd_epi16(m[2], m[3]));
        const __m256i rows_sum = _mm256_permutevar8x32_epi32(_mm256_madd_epi16(h, ones16), row_order);
        const __m256i isum = _mm256_sub_epi32(rows_sum, _mm256_set1_epi32(8 * as[t][b]));
        acc[t] = _mm256_add_ps(
            acc[t], rounded(_mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(isum), dw), _mm256_set1_ps(ad[t][b]))));
      }
    });
  }
};

// One row: the reference loop with the integer block sum done in SIMD.
float dot_q4_0(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q4_0*>(wv);
  const auto* a = static_cast<const block_q8_0*>(av);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i eight = _mm256_set1_epi8(8);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m256i q = _mm256_sub_epi8(unpack_nibbles(w[b].qs), eight);  // -8..7
    const __m256i aq = load256(a[b].qs);
    const int isum = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(aq, q)), ones16));
    sum += rounded(float(isum) * half_to_float(w[b].d) * half_to_float(a[b].d));
  }
  return sum;
}

// ---- Q8_0 ---------------------------------------------------------------------------------------

float dot_q8_0(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q8_0*>(wv);
  const auto* a = static_cast<const block_q8_0*>(av);
  const __m256i ones16 = _mm256_set1_epi16(1);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m256i q = load256(w[b].qs);
    const __m256i aq = load256(a[b].qs);
    const int isum = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(aq, q)), ones16));
    sum += rounded(float(isum) * (half_to_float(w[b].d) * half_to_float(a[b].d)));
  }
  return sum;
}

void pack_q8_0(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_cells(w, r0, n_rows, sizeof(block_q8_0), q8_0_qs_offset, 8, out);
}

template <int T, class V>
struct gemm_q8_0_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n_rows) {
    using I = typename V::i;
    using F = typename V::f;
    const token_rows<T> rows(a, t0);
    const uint8_t* const* aq = rows.q;
    const float* const* ad = rows.d;
    [[maybe_unused]] const int32_t* const* as = rows.sum;
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q8_0_packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<q8_0_packed>(panel, second);
      I s[T];
      const size_t ab = size_t(b) * sizeof(block_q8_0);
      if constexpr (byte_dot_vnni && T > gemv_max_tokens) {
        // Prefill with VNNI: w + 128 as unsigned bytes (w xor 0x80) times a, from sums that start at
        // -128 sum(a): no per-token sign operations (AVX2's maddubs would saturate with w + 128;
        // decode measured a little slower this way).
        for (int t = 0; t < T; ++t) s[t] = V::set1_i32(-128 * as[t][b]);
        const I flip = V::set1_i8(int8_t(0x80));
        for (int c = 0; c < 8; ++c) {
          const I wu = vxor(V::load(panel + 32 * c, second), flip);
          for (int t = 0; t < T; ++t) s[t] = tile_dot<T, V>(s[t], wu, aq[t] + ab + 4 * c);
        }
      } else {
        for (int t = 0; t < T; ++t) s[t] = V::zero();
        for (int c = 0; c < 8; ++c) {
          const I wc = V::load(panel + 32 * c, second);
          const I wabs = abs_u8(wc);
          for (int t = 0; t < T; ++t) s[t] = chained(byte_dot_add32(s[t], wabs, sign_of(V::bcast4(aq[t] + ab + 4 * c), wc)));
        }
      }
      const F dw = V::halves(panel + 256, second);
      for (int t = 0; t < T; ++t) {
        const F p = vmul(vcvt(s[t]), vmul(dw, V::set1_f(ad[t][b])));
        acc[t] = vadd(acc[t], rounded(p));
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n_rows);
  }
};

void gemv_q8_0_token(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t, float* y) {
  const uint8_t* arow = a.data + size_t(t) * a.stride;
  const float* ad = a.d + t * a.nb;
  const int64_t nb = w.n_in / 32;
  const __m256i ones16 = _mm256_set1_epi16(1);
  gemv_groups<1>(w, r0, r1, nb, y, 0, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
    const __m256i aq = load256(arow + size_t(b) * sizeof(block_q8_0) + q8_0_qs_offset);
    const size_t wb = size_t(b) * sizeof(block_q8_0);
    __m256i m[8];
    for (int r = 0; r < 8; ++r) {
      // |w| * (sign(w) a): pairs stay within 2 * 128 * 127, no saturation.
      const __m256i wq = load256(rows[r] + wb + q8_0_qs_offset);
      m[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(aq, wq)), ones16);
    }
    const __m256i isum = hsum_8x_i32(m);
    const __m256 d = _mm256_mul_ps(gather_halves(rows, wb), _mm256_set1_ps(ad[b]));
    acc[0] = _mm256_add_ps(acc[0], rounded(_mm256_mul_ps(_mm256_cvtepi32_ps(isum), d)));
  });
}

// Q8_0's codes need no unpacking, so there is nothing to share between tokens: one pass per token
// (the rows are in L1 for the second).
void gemv_q8_0(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, int64_t n_tok, float* y,
               size_t ys) {
  for (int64_t t = 0; t < n_tok; ++t) gemv_q8_0_token(w, r0, r1, a, t0 + t, y + size_t(t) * ys);
}

// ---- Unprepared weights, by way of the panels ----------------------------------------------------

// A gemv (mm_kernel::gemv) for types without a file-layout kernel: each 8-row group is packed into
// this thread's scratch and the panel tile runs on it for the T tokens. Only matmuls on weights the
// backend did not prepare (--no-repack) come here; the group's rows are read from memory once, the
// packing adds a pass over L1 (the same bits as the panels, which the tests check).
template <template <int, class> class Tile, void (*Pack)(const weight_view&, int64_t, int, uint8_t*), size_t Packed>
void gemv_via_panels(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, int64_t n_tok,
                     float* y, size_t ys) {
  thread_local std::vector<uint8_t> scratch;
  const int64_t nb = w.n_in / 32;
  if (scratch.size() < size_t(nb) * Packed) scratch.resize(size_t(nb) * Packed);
  for (int64_t g = r0; g < r1; g += 8) {
    const int n = int(std::min<int64_t>(8, r1 - g));
    Pack(w, g, n, scratch.data());
    float* yg = y + (g - r0);
    if (n_tok == 1) Tile<1, rows8>::run(scratch.data(), 0, nb, a, t0, yg, ys, n);
    else if (n_tok == 2) Tile<2, rows8>::run(scratch.data(), 0, nb, a, t0, yg, ys, n);
    else Tile<3, rows8>::run(scratch.data(), 0, nb, a, t0, yg, ys, n);
  }
}

// ---- Q5_0 ---------------------------------------------------------------------------------------

// 32 bytes, byte j = 0x10 where bit j of qh is set (bit 4 of the 5-bit code of element j).
__m256i q5_high_bits(const uint8_t* qh) {
  const __m256i word = _mm256_set1_epi32(load_i32(qh));
  // Byte j reads byte j / 8 of qh, then keeps bit j % 8 of it.
  const __m256i pick = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(word, pick), bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// One row: the 5-bit codes less 16 (-16..15) as |q| * (a with q's sign), pairs within 2 * 16 * 127.
float dot_q5_0(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q5_0*>(wv);
  const auto* a = static_cast<const block_q8_0*>(av);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i sixteen = _mm256_set1_epi8(16);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles(w[b].qs), q5_high_bits(w[b].qh)), sixteen);
    const __m256i aq = load256(a[b].qs);
    const int isum = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(aq, q)), ones16));
    sum += rounded(half_to_float(w[b].d) * half_to_float(a[b].d) * float(isum));
  }
  return sum;
}

// Q5_0 panel block (176 bytes, the size of the 8 rows' blocks): the 16 code bytes per row as the 4
// cells of Q4_0, then one word per row ([row][4 bytes]) holding qh with its bits regrouped, then
// the 8 scales. The regrouping puts in byte k of the word the high bits of the 8 elements that sit
// at byte k of a cell: bit m of byte k is qh bit 4m + k, so cell c's low nibbles (elements 4c + k)
// find theirs in bit c and its high nibbles (elements 16 + 4c + k) in bit 4 + c. A shift of the
// word by 4 - c (left) or c (right) brings them to bit 4 of each byte, where the code needs them.
// Q5_1's panel adds the 8 row minima (fp16) after the scales.

// The regrouped qh of 8 rows at once (one row per 32-bit lane): for each byte k, the bits 4m + k
// (m = 0..7) are gathered into 8 adjacent bits by three halving steps.
__m256i regroup_q5_high_bits(__m256i qh) {
  __m256i out = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    __m256i x = _mm256_and_si256(_mm256_srli_epi32(qh, k), _mm256_set1_epi32(0x11111111));  // bits 4m
    x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 3)), _mm256_set1_epi32(0x03030303));
    x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 6)), _mm256_set1_epi32(0x000F000F));
    x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 12)), _mm256_set1_epi32(0xFF));
    out = _mm256_or_si256(out, _mm256_slli_epi32(x, 8 * k));
  }
  return out;
}

// Q5_0 (codes stand for q - 16, Q8_0 activations) and Q5_1 (q, plus the block minimum times the
// Q8_1 activation block's s). The fields of a block: d at 0, then (Q5_1) m, qh, qs.
struct q5_0_kind {
  using block = block_q5_0;
  using acts = q8_0_acts;
  static constexpr int bias = 16;
  static constexpr size_t qh = 2, packed = 128 + 32 + 16;
};
struct q5_1_kind {
  using block = block_q5_1;
  using acts = q8_1_acts;
  static constexpr int bias = 0;
  static constexpr size_t qh = 4, packed = 128 + 32 + 16 + 16;
};

template <class K>
void pack_q5(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 32, sizeof(typename K::block), K::packed, out, [&](const uint8_t* const blk[8], uint8_t* dst) {
    const uint8_t* codes[8];
    alignas(32) uint32_t qh[8];
    for (int r = 0; r < 8; ++r) {
      codes[r] = blk[r] + K::qh + 4;
      std::memcpy(&qh[r], blk[r] + K::qh, 4);
    }
    store_cells(codes, 4, dst);
    store256(dst + 128, regroup_q5_high_bits(load256(qh)));
    store_block_halves(blk, 0, dst + 160);
    if constexpr (K::bias == 0) store_block_halves(blk, 2, dst + 176);
  });
}
constexpr auto pack_q5_0 = pack_q5<q5_0_kind>;
constexpr auto pack_q5_1 = pack_q5<q5_1_kind>;

// Codes q = nibble | high bit (0..31) as unsigned bytes (Q5_0: the sum then less 16 sum(a)). On
// AVX2 the int16 pairs of maddubs reach 2 * 31 * 127 = 7874, so the low and the high nibbles of a
// block (4 cells each) go to separate sums (<= 31496 each) that are widened apart.
template <class K, int T, class V>
struct gemm_q5_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n_rows) {
    using I = typename V::i;
    using F = typename V::f;
    const token_rows<T, K::acts::qs> rows(a, t0);
    const uint8_t* const* aq = rows.q;
    const float* const* ad = rows.d;
    [[maybe_unused]] const int32_t* const* as = rows.sum;
    const I low4 = V::set1_i8(0x0F);
    const I bit4 = V::set1_i8(0x10);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += K::packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<K::packed>(panel, second);
      // Prefill with VNNI: the int32 sums of the low nibbles start at -16 sum(a) (as Q4_0).
      constexpr bool fold = byte_dot_vnni && T > gemv_max_tokens && K::bias != 0;
      I s[2][T];
      for (int t = 0; t < T; ++t) {
        s[0][t] = fold ? V::set1_i32(-K::bias * as[t][b]) : V::zero();
        s[1][t] = V::zero();
      }
      const size_t ab = size_t(b) * K::acts::block;
      const I h = V::load(panel + 128, second);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const I v = V::load(panel + 32 * c, second);
        const I lo = vor(vand(v, low4), vand(vsll16(h, 4 - c), bit4));          // elements 4c..4c+3
        const I hi = vor(vand(vsrl16(v, 4), low4), vand(vsrl16(h, c), bit4));   // elements 16+4c..
        for (int t = 0; t < T; ++t) {
          s[0][t] = tile_dot<T, V>(s[0][t], lo, aq[t] + ab + 4 * c);
          s[1][t] = tile_dot<T, V>(s[1][t], hi, aq[t] + ab + 16 + 4 * c);
        }
      }
      const F dw = V::halves(panel + 160, second);
      for (int t = 0; t < T; ++t) {
        const I st = vadd32(byte_dot_widen(s[0][t]), byte_dot_widen(s[1][t]));
        if constexpr (K::bias == 0) {
          acc[t] = min_block_step<V>(acc[t], dw, V::halves(panel + 176, second), ad[t][b], q8_1_s(aq[t] + ab), st);
        } else {
          const I isum = fold ? st : vsub32(st, V::set1_i32(K::bias * as[t][b]));
          const F p = vmul(vmul(dw, V::set1_f(ad[t][b])), vcvt(isum));
          acc[t] = vadd(acc[t], rounded(p));
        }
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n_rows);
  }
};
template <int T, class V>
using gemm_q5_0_tile = gemm_q5_tile<q5_0_kind, T, V>;
template <int T, class V>
using gemm_q5_1_tile = gemm_q5_tile<q5_1_kind, T, V>;

// One row of Q4_1 / Q5_1: unsigned codes (0..15 / 0..31) times a, pairs within 2 * 31 * 127.
float dot_q4_1(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q4_1*>(wv);
  const auto* a = static_cast<const block_q8_1*>(av);
  const __m256i ones16 = _mm256_set1_epi16(1);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m256i q = unpack_nibbles(w[b].qs);
    const int isum = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(q, load256(a[b].qs)), ones16));
    sum += rounded(half_to_float(w[b].d) * half_to_float(a[b].d) * float(isum)) +
           rounded(half_to_float(w[b].m) * half_to_float(a[b].s));
  }
  return sum;
}

float dot_q5_1(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q5_1*>(wv);
  const auto* a = static_cast<const block_q8_1*>(av);
  const __m256i ones16 = _mm256_set1_epi16(1);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m256i q = _mm256_or_si256(unpack_nibbles(w[b].qs), q5_high_bits(w[b].qh));
    const int isum = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(q, load256(a[b].qs)), ones16));
    sum += rounded(half_to_float(w[b].d) * half_to_float(a[b].d) * float(isum)) +
           rounded(half_to_float(w[b].m) * half_to_float(a[b].s));
  }
  return sum;
}

void pack_q4_1(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 32, sizeof(block_q4_1), q4_1_kind::packed, out,
                    [&](const uint8_t* const blk[8], uint8_t* dst) {
                      const uint8_t* codes[8];
                      for (int r = 0; r < 8; ++r) codes[r] = blk[r] + 4;
                      store_cells(codes, 4, dst);
                      store_block_halves(blk, 0, dst + 128);
                      store_block_halves(blk, 2, dst + 144);
                    });
}

// ---- IQ4_NL -------------------------------------------------------------------------------------

// IQ4_NL's blocks are Q4_0's (fp16 scale, 16 code bytes, the same element order): the same panels.
// A code stands for kvalues_iq4nl[code] (-127..113), looked up 16 bytes at a time by a byte shuffle.
constexpr size_t iq4_nl_packed = q4_0_packed;

void pack_iq4_nl(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_cells(w, r0, n_rows, sizeof(block_iq4_nl), 2, 4, out);
}

// The values + 128 (1..241): unsigned operands for the byte dot products, the sum then less 128 sum(a).
constexpr auto iq4_nl_biased = [] {
  std::array<uint8_t, 16> v{};
  for (int i = 0; i < 16; ++i) v[size_t(i)] = uint8_t(quant::kvalues_iq4nl[i] + 128);
  return v;
}();

// The 16-byte table at p in every 128-bit lane of a V vector, and a lookup of it (lane-wise pshufb).
template <class V>
typename V::i table16(const void* p) {
  const __m256i t = _mm256_broadcastsi128_si256(load128(p));
  if constexpr (std::is_same_v<family_t<V>, rows8>) return t;
  else if constexpr (std::is_same_v<family_t<V>, rows8x2>) return both(t);
#ifdef GLIA_PANEL_PAIRS
  else return _mm512_inserti64x4(_mm512_castsi256_si512(t), t, 1);
#endif
}
inline __m256i lookup16(__m256i table, __m256i idx) { return _mm256_shuffle_epi8(table, idx); }
inline two_i lookup16(two_i table, two_i idx) { return {lookup16(table.lo, idx.lo), lookup16(table.hi, idx.hi)}; }
#ifdef GLIA_PANEL_PAIRS
inline __m512i lookup16(__m512i table, __m512i idx) { return _mm512_shuffle_epi8(table, idx); }
#endif

// One row: the looked-up values as |v| * (a with v's sign), pairs within 2 * 127 * 127.
float dot_iq4_nl(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_iq4_nl*>(wv);
  const auto* a = static_cast<const block_q8_0*>(av);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i table = _mm256_broadcastsi128_si256(load128(quant::kvalues_iq4nl));
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    const __m256i q = _mm256_shuffle_epi8(table, unpack_nibbles(w[b].qs));
    const __m256i aq = load256(a[b].qs);
    const int isum = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(aq, q)), ones16));
    sum += rounded(half_to_float(a[b].d) * half_to_float(w[b].d) * float(isum));
  }
  return sum;
}

// With VNNI the values + 128 are the unsigned operand (int32 sums, no bound to mind) and the sum is
// corrected by 128 sum(a), folded into the start of the prefill sums as Q4_0's. AVX2's maddubs
// would saturate on them (pairs up to 2 * 241 * 127), so there the values keep their sign and each
// token's activation cell takes it (|v| * sign(a, v), pairs within 2 * 127 * 127, widened at once).
template <int T, class V>
struct gemm_iq4_nl_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n_rows) {
    using I = typename V::i;
    using F = typename V::f;
    constexpr bool biased = byte_dot_vnni;
    const token_rows<T> rows(a, t0);
    const uint8_t* const* aq = rows.q;
    const float* const* ad = rows.d;
    [[maybe_unused]] const int32_t* const* as = rows.sum;
    const I low4 = V::set1_i8(0x0F);
    const I table = biased ? table16<V>(iq4_nl_biased.data()) : table16<V>(quant::kvalues_iq4nl);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += iq4_nl_packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<iq4_nl_packed>(panel, second);
      constexpr bool fold = biased && T > gemv_max_tokens;
      constexpr int split = biased ? 2 : 1;  // VNNI: low and high halves in two dependency chains
      I s[split][T];
      for (int h = 0; h < split; ++h)
        for (int t = 0; t < T; ++t) s[h][t] = fold && h == 0 ? V::set1_i32(-128 * as[t][b]) : V::zero();
      const size_t ab = size_t(b) * sizeof(block_q8_0);
      for (int c = 0; c < 4; ++c) {
        const I v = V::load(panel + 32 * c, second);
        const I lo = lookup16(table, vand(v, low4));             // elements 4c..4c+3
        const I hi = lookup16(table, vand(vsrl16(v, 4), low4));  // elements 16+4c..16+4c+3
        if constexpr (biased) {
          for (int t = 0; t < T; ++t) {
            s[0][t] = tile_dot<T, V>(s[0][t], lo, aq[t] + ab + 4 * c);
            s[split - 1][t] = tile_dot<T, V>(s[split - 1][t], hi, aq[t] + ab + 16 + 4 * c);
          }
        } else {
          const I lo_abs = abs_u8(lo), hi_abs = abs_u8(hi);
          for (int t = 0; t < T; ++t) {
            s[0][t] = chained(byte_dot_add32(s[0][t], lo_abs, sign_of(V::bcast4(aq[t] + ab + 4 * c), lo)));
            s[0][t] = chained(byte_dot_add32(s[0][t], hi_abs, sign_of(V::bcast4(aq[t] + ab + 16 + 4 * c), hi)));
          }
        }
      }
      const F dw = V::halves(panel + 128, second);
      for (int t = 0; t < T; ++t) {
        I isum = s[0][t];
        if constexpr (biased) {
          isum = vadd32(isum, s[split - 1][t]);
          if constexpr (!fold) isum = vsub32(isum, V::set1_i32(128 * as[t][b]));
        }
        const F p = vmul(vmul(dw, V::set1_f(ad[t][b])), vcvt(isum));
        acc[t] = vadd(acc[t], rounded(p));
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n_rows);
  }
};

// Q4_0Decode: how Q4_0's one-token matmuls read panels where the build has rows16 (see
// decode_form in panel_vectors.h), and Q4_1, Q5_0, Q5_1 and IQ4_NL's with it (their nibble cells
// are Q4_0's; on Zen 5, tg32 with 2 threads, three alternated rounds, single -> pairs: Q4_1 61.1 ->
// 62.6, Q5_0 50.1 -> 56.6, Q5_1 47.0 -> 54.6, IQ4_NL 60.8 -> 66.3 t/s, medians; not measured on
// Zen 4, where Q4_0 reads single panels), and how all of them prefetch (decode_form::spread); Q8_0
// reads single panels everywhere, with the others' prefetch (single_form).
template <decode_form Q4_0Decode>
constexpr mm_kernel legacy_kernels[] = {
    {dtype::q4_0, 32, sizeof(block_q4_0), dtype::q8_0, sizeof(block_q8_0), true, q4_0_packed, pack_q4_0,
     gemm_panels<gemm_q4_0_tile, Q4_0Decode>, gemv_tokens<gemv_q4_0_tokens>, q8_0_block_sums, dot_q4_0,
     gemv_panel_streams<gemm_q4_0_tile, Q4_0Decode>},
    {dtype::q8_0, 32, sizeof(block_q8_0), dtype::q8_0, sizeof(block_q8_0), true, q8_0_packed, pack_q8_0,
     gemm_panels<gemm_q8_0_tile, single_form(Q4_0Decode)>, gemv_q8_0, q8_0_block_sums, dot_q8_0,
     gemv_panel_streams<gemm_q8_0_tile, single_form(Q4_0Decode)>},
    {dtype::q5_0, 32, sizeof(block_q5_0), dtype::q8_0, sizeof(block_q8_0), true, q5_0_kind::packed, pack_q5_0,
     gemm_panels<gemm_q5_0_tile, Q4_0Decode>, gemv_via_panels<gemm_q5_0_tile, pack_q5_0, q5_0_kind::packed>,
     q8_0_block_sums, dot_q5_0, gemv_panel_streams<gemm_q5_0_tile, Q4_0Decode>},
    {dtype::iq4_nl, 32, sizeof(block_iq4_nl), dtype::q8_0, sizeof(block_q8_0), true, iq4_nl_packed, pack_iq4_nl,
     gemm_panels<gemm_iq4_nl_tile, Q4_0Decode>, gemv_via_panels<gemm_iq4_nl_tile, pack_iq4_nl, iq4_nl_packed>,
     q8_0_block_sums, dot_iq4_nl, gemv_panel_streams<gemm_iq4_nl_tile, Q4_0Decode>},
    {dtype::q4_1, 32, sizeof(block_q4_1), dtype::q8_1, sizeof(block_q8_1), true, q4_1_kind::packed, pack_q4_1,
     gemm_panels<gemm_q4_1_tile, Q4_0Decode>, gemv_via_panels<gemm_q4_1_tile, pack_q4_1, q4_1_kind::packed>,
     q8_block_sums<block_q8_1>, dot_q4_1, gemv_panel_streams<gemm_q4_1_tile, Q4_0Decode>},
    {dtype::q5_1, 32, sizeof(block_q5_1), dtype::q8_1, sizeof(block_q8_1), true, q5_1_kind::packed, pack_q5_1,
     gemm_panels<gemm_q5_1_tile, Q4_0Decode>, gemv_via_panels<gemm_q5_1_tile, pack_q5_1, q5_1_kind::packed>,
     q8_block_sums<block_q8_1>, dot_q5_1, gemv_panel_streams<gemm_q5_1_tile, Q4_0Decode>},
};

}  // namespace
}  // namespace glia::cpu
