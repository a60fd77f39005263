// AVX2 + FMA + F16C kernels: bit-exact activation quantizers (the matmul kernels live in
// mm_*_avx2.cpp, attention and GLU in their own files). This file is compiled with -mavx2 -mfma
// -mf16c and cpu_kernels.cpp only calls it after checking the host. Everything here is in an
// anonymous namespace and no inline function of a shared header is called, so no AVX2-compiled
// copy of one can be picked by the linker for callers on older CPUs.
//
// Block layouts come from quant/block_types.h (header of structs and constants only); the resolver
// also checks block size and bytes against the type table before any kernel here is used.
#include "backend/cpu/simd_avx2.h"

#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "quant/activation.h"
#include "quant/block_types.h"

namespace glia::cpu {
namespace {

using quant::block_q8_0;
using quant::block_q8_1;
using quant::block_q8_k;

// ---- Activation quantizers: bit-exact twins of scalar reference routines. ----------------------
// Blocks containing a NaN or an infinity go to the reference (its handling of them is not worth
// mirroring).

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// All-ones in the lanes of |v| (abs_v) that are infinite or NaN: !(|v| < inf).
inline __m256 nonfinite_lanes(__m256 abs_v) { return _mm256_cmp_ps(abs_v, _mm256_set1_ps(__builtin_inff()), _CMP_NLT_UQ); }

inline bool any_nonfinite(const __m256* v, int n) {
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; ++i) m = _mm256_or_ps(m, nonfinite_lanes(abs_ps(v[i])));
  return _mm256_movemask_ps(m) != 0;
}

inline bool finite(float f) { return f - f == 0.0f; }

// roundf (halfway cases away from zero), exact for |v| < 2^23: v - trunc(v) is exact there.
inline __m256 round_half_away(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
  return _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

// Four vectors of 8 int32 (each within int8 range) to 32 int8 in element order.
inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  // packs work within 128-bit lanes; the permute restores element order.
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Q8_0 blocks: d = amax / 127; q = round(x * id) clamped to [-127, 127]. The table's routine
// (ggml's quantize_row_q8_0_ref) uses id = 1 / d and roundf; the x86 variant id = 127 / amax
// and round-half-even. Q8_1 blocks (x86 variant only: the one matmul asks for) add
// s = fp16(d * float(sum q)), with the unrounded d.
template <bool x86, class Block = block_q8_0>
void quantize_q8_0(const float* src, void* dst, int64_t n) {
  constexpr bool q8_1 = std::is_same_v<Block, block_q8_1>;
  static_assert(!q8_1 || x86);
  auto* out = static_cast<Block*>(dst);
  const __m256 lim = _mm256_set1_ps(127.0f);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* x = src + 32 * b;
    __m256 v[4] = {_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8), _mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)};
    if (any_nonfinite(v, 4)) {
      if (q8_1)
        quant::quantize_row_q8_1_x86(x, out + b, 32);
      else if (x86)
        quant::quantize_row_q8_0_x86(x, out + b, 32);
      else
        type_info(dtype::q8_0).quantize_row(x, out + b, 32);
      continue;
    }
    const float amax =
        hmax_ps(_mm256_max_ps(_mm256_max_ps(abs_ps(v[0]), abs_ps(v[1])), _mm256_max_ps(abs_ps(v[2]), abs_ps(v[3]))));
    const float d = amax / 127.0f;
    const float id = x86 ? (amax != 0.0f ? 127.0f / amax : 0.0f) : (d != 0.0f ? 1.0f / d : 0.0f);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      __m256 r = _mm256_mul_ps(v[i], vid);
      // 0 * inf (an id that overflowed for a subnormal amax) is NaN, which the reference stores as 0.
      r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));
      r = x86 ? _mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) : round_half_away(r);
      r = _mm256_min_ps(_mm256_max_ps(r, _mm256_sub_ps(_mm256_setzero_ps(), lim)), lim);
      q[i] = _mm256_cvttps_epi32(r);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    out[b].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    if constexpr (q8_1) {
      const int sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
      out[b].s = _cvtss_sh(d * float(sum), _MM_FROUND_TO_NEAREST_INT);
    }
  }
}

void quantize_q8_0_table(const float* src, void* dst, int64_t n) { quantize_q8_0<false>(src, dst, n); }
void quantize_q8_0_x86(const float* src, void* dst, int64_t n) { quantize_q8_0<true>(src, dst, n); }
void quantize_q8_1_x86(const float* src, void* dst, int64_t n) { quantize_q8_0<true, block_q8_1>(src, dst, n); }

// Q8_K blocks of 256 (the table's routine): the signed peak (first element of largest magnitude)
// maps to -127, iscale = -127 / peak, q = min(127, round-half-even(iscale * x)), d = 1 / iscale,
// and bsums holds the sum of each 16 quants.
void quantize_q8_k(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<block_q8_k*>(dst);
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* x = src + 256 * b;
    // Each pass reads the block (1 KiB, in L1) again: held as an array of 32 vectors, twice what
    // AVX2 has registers for, it was copied on the stack with a string move that took 40% of this
    // routine's time (perf, a Q4_K_M prompt).
    const auto v = [x](int i) { return _mm256_loadu_ps(x + 8 * i); };
    __m256 m = _mm256_setzero_ps(), nonfinite = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) {
      const __m256 a = abs_ps(v(i));
      nonfinite = _mm256_or_ps(nonfinite, nonfinite_lanes(a));
      m = _mm256_max_ps(m, a);
    }
    if (_mm256_movemask_ps(nonfinite) != 0) {
      type_info(dtype::q8_k).quantize_row(x, out + b, 256);
      continue;
    }
    const float amax = hmax_ps(m);
    if (amax == 0.0f) {
      std::memset(&out[b], 0, sizeof(out[b]));
      continue;
    }
    float peak = 0.0f;
    const __m256 vmax = _mm256_set1_ps(amax);
    for (int i = 0; i < 32; ++i) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v(i)), vmax, _CMP_EQ_OQ));
      if (hit) {
        peak = x[8 * i + __builtin_ctz(unsigned(hit))];
        break;
      }
    }
    const float iscale = -127.0f / peak;
    if (!finite(iscale)) {  // subnormal peak: the reference's integer trick meets infinities
      type_info(dtype::q8_k).quantize_row(x, out + b, 256);
      continue;
    }
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    for (int i = 0; i < 32; i += 4) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v(i + j), vs)), top);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs + 8 * i), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
      out[b].bsums[i / 2] = int16_t(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      out[b].bsums[i / 2 + 1] = int16_t(hsum_i32(_mm256_add_epi32(q[2], q[3])));
    }
    out[b].d = 1.0f / iscale;
  }
}

// F16 (the table's routine, round to nearest even): F16C does the same conversion, including
// subnormals and overflow to infinity.
void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    if (any_nonfinite(&v, 1)) {
      type_info(dtype::f16).quantize_row(src + i, out + i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) type_info(dtype::f16).quantize_row(src + i, out + i, n - i);
}

constexpr quantize_entry avx2_quantizers[] = {
    {act_quantizer::q8_0, quantize_q8_0_table},
    {act_quantizer::q8_0_x86, quantize_q8_0_x86},
    {act_quantizer::q8_1_x86, quantize_q8_1_x86},
    {act_quantizer::q8_k, quantize_q8_k},
    {act_quantizer::f16, quantize_f16},
};

// Every weight type with AVX2 kernels has matmul kernels (mm_*_avx2.cpp), whose dot the table uses.
constexpr isa_kernels avx2_record{"avx2", {}, avx2_quantizers};

}  // namespace

const isa_kernels& avx2_kernels() { return avx2_record; }

}  // namespace glia::cpu
