// The vectors the panel kernels (mm_*_kernels.h) compute with, as two families with one interface:
//  - rows8: one 8-row panel per 256-bit vector (AVX2, and AVX-512 VL);
//  - rows16: two consecutive 8-row panels per 512-bit vector (AVX-512 VNNI + BW builds only), the
//    first panel in the low 256 bits. A 512-bit vpdpbusd does twice the multiply-adds of a 256-bit
//    one at the same issue rate on the machines we measured (two 512-bit units), and each
//    broadcast activation cell then serves 16 rows instead of 8: the panel layout stays the same,
//    the kernel just reads two panels side by side.
// A kernel tile is written once against V (rows8 or rows16): loads and constants go through V, the
// arithmetic through the overloads below. Every operation is lane-wise and exact in integers, and
// the float operations are the same per lane, so both families give the same bits.
// Everything has internal linkage (see simd_avx2.h).
#pragma once

#include "backend/cpu/simd_avx2.h"

#include <cstring>

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

inline int32_t word_of(__m128i x, int k) {
  int32_t w[4];
  std::memcpy(w, &x, sizeof w);
  return w[k];
}

struct rows8 {
  using i = __m256i;
  using f = __m256;
  // 32 bytes at p (one panel's cell of 8 rows); `second` (the next panel's offset) is unused.
  static i load(const uint8_t* p, size_t /*second*/) { return load256(p); }
  // The 8 fp16 row values at p, as floats.
  static f halves(const uint8_t* p, size_t /*second*/) { return _mm256_cvtph_ps(load128(p)); }
  static i bcast4(const void* p) { return broadcast4(p); }
  static i set1_i8(int8_t v) { return _mm256_set1_epi8(v); }
  static i set1_i32(int32_t v) { return _mm256_set1_epi32(v); }
  static i zero() { return _mm256_setzero_si256(); }
  static f set1_f(float v) { return _mm256_set1_ps(v); }
  static f zero_f() { return _mm256_setzero_ps(); }
  // 32-bit word k of x in every lane (k < 4).
  static i spread_word(__m128i x, int k) { return _mm256_set1_epi32(word_of(x, k)); }
  // panel_prefetch of the block (or of its part `part` of Parts).
  template <size_t BlockBytes, int Parts = 1, size_t Distance = panel_prefetch_distance, int Locality = 2>
  static void prefetch(const uint8_t* block, size_t /*second*/, int part = 0) {
    panel_prefetch<BlockBytes, Distance, Parts, Locality>(block, part);
  }
  static void store(float* y, f v, int n) { store_lanes(y, v, n); }
};

// acc + w . (the 4 signed bytes at p, in every lane): byte_dot_add with the activation cell read and
// broadcast by the dot product itself where VNNI allows it (an embedded {1toN} broadcast operand:
// one micro-fused instruction instead of a broadcast load and a dot product; GCC does not fold the
// broadcast by itself, hence the asm). The asm result is opaque, so it also keeps the chain order.
inline __m256i byte_dot_bcast(__m256i acc, __m256i w_u8, const uint8_t* p) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  asm("vpdpbusd %2%{1to8%}, %1, %0" : "+v"(acc) : "v"(w_u8), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
#else
  return chained(byte_dot_add(acc, w_u8, broadcast4(p)));
#endif
}

inline __m256i vand(__m256i a, __m256i b) { return _mm256_and_si256(a, b); }
inline __m256i vor(__m256i a, __m256i b) { return _mm256_or_si256(a, b); }
inline __m256i vxor(__m256i a, __m256i b) { return _mm256_xor_si256(a, b); }
inline __m256i vadd32(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }
inline __m256i vsub32(__m256i a, __m256i b) { return _mm256_sub_epi32(a, b); }
inline __m256i vsrl16(__m256i a, int n) { return _mm256_srli_epi16(a, n); }
inline __m256i vsll16(__m256i a, int n) { return _mm256_slli_epi16(a, n); }
inline __m256i vsrl32(__m256i a, int n) { return _mm256_srli_epi32(a, n); }
inline __m256i vsll32(__m256i a, int n) { return _mm256_slli_epi32(a, n); }
inline __m256i vsra32(__m256i a, int n) { return _mm256_srai_epi32(a, n); }
inline __m256i vmadd16(__m256i a, __m256i b) { return _mm256_madd_epi16(a, b); }
inline __m256 vcvt(__m256i a) { return _mm256_cvtepi32_ps(a); }
inline __m256 vmul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
inline __m256 vadd(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
inline __m256 vsub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
// |w| as unsigned bytes (-128 reads as 128) and a with the sign of w (0 where w is 0): the operands
// of an unsigned x signed byte dot product equal to w . a.
inline __m256i abs_u8(__m256i w) { return _mm256_sign_epi8(w, w); }
inline __m256i sign_of(__m256i a, __m256i w) { return _mm256_sign_epi8(a, w); }

// rows8x2: two 8-row panels `second` bytes apart as two 256-bit vectors, for decode in builds
// without rows16. The arithmetic is rows8's on each half, so the bits are the same; what changes is
// the memory side: a one-token tile reading two panels side by side keeps two streams in flight.
// On Zen 3 a core streams ~15-20% more with two sequential streams than with one (a read loop: 17.3
// -> 20.5 GB/s one thread; with a multiply-add load per byte like the kernels', 12.7 -> 15.6), since
// one stream's misses leave the core's miss slots half used and the prefetcher runs only so far
// ahead of a slow consumer.
// (Plain structs, not a template over the vector type: GCC drops the vector types' attributes
// from template arguments.)
struct two_i {
  __m256i lo, hi;
};
struct two_f {
  __m256 lo, hi;
};
inline two_i make_two(__m256i lo, __m256i hi) { return {lo, hi}; }
inline two_f make_two(__m256 lo, __m256 hi) { return {lo, hi}; }
inline two_i both(__m256i x) { return {x, x}; }
inline two_f both(__m256 x) { return {x, x}; }

struct rows8x2 {
  using i = two_i;
  using f = two_f;
  static i load(const uint8_t* p, size_t second) { return {load256(p), load256(p + second)}; }
  static f halves(const uint8_t* p, size_t second) { return {rows8::halves(p, 0), rows8::halves(p + second, 0)}; }
  static i bcast4(const void* p) { return both(rows8::bcast4(p)); }
  static i set1_i8(int8_t v) { return both(rows8::set1_i8(v)); }
  static i set1_i32(int32_t v) { return both(rows8::set1_i32(v)); }
  static i zero() { return both(rows8::zero()); }
  static f set1_f(float v) { return both(rows8::set1_f(v)); }
  static f zero_f() { return both(rows8::zero_f()); }
  static i spread_word(__m128i x, int k) { return both(rows8::spread_word(x, k)); }
  // Each stream asks for less ahead than a single panel does (stream_prefetch_distance), except in
  // the spread decode form (spread<V> below).
  template <size_t BlockBytes, int Parts = 1, size_t Distance = stream_prefetch_distance, int Locality = 2>
  static void prefetch(const uint8_t* block, size_t second, int part = 0) {
    panel_prefetch<BlockBytes, Distance, Parts, Locality>(block, part);
    panel_prefetch<BlockBytes, Distance, Parts, Locality>(block + second, part);
  }
  // n (9..16) results: the first panel's 8, then the second's.
  static void store(float* y, f v, int n) {
    store_lanes(y, v.lo, 8);
    store_lanes(y + 8, v.hi, n - 8);
  }
};

// The operations on rows8x2 vectors: rows8's on each half.
inline __m256i half_of(two_i v, int half) { return half ? v.hi : v.lo; }
inline __m256 half_of(two_f v, int half) { return half ? v.hi : v.lo; }
template <class X>
X half_of(X v, int /*half*/) {  // an argument both halves share (a shift count, a flag)
  return v;
}
template <class P>
concept two_vectors = std::is_same_v<P, two_i> || std::is_same_v<P, two_f>;
#define GLIA_TWO_OP(name)                                                                   \
  template <two_vectors P, class... A>                                                      \
  inline auto name(P a, A... args) {                                                        \
    return make_two(name(a.lo, half_of(args, 0)...), name(a.hi, half_of(args, 1)...));       \
  }
GLIA_TWO_OP(vand)
GLIA_TWO_OP(vor)
GLIA_TWO_OP(vxor)
GLIA_TWO_OP(vadd32)
GLIA_TWO_OP(vsub32)
GLIA_TWO_OP(vsrl16)
GLIA_TWO_OP(vsll16)
GLIA_TWO_OP(vsrl32)
GLIA_TWO_OP(vsll32)
GLIA_TWO_OP(vsra32)
GLIA_TWO_OP(vmadd16)
GLIA_TWO_OP(vcvt)
GLIA_TWO_OP(vmul)
GLIA_TWO_OP(vadd)
GLIA_TWO_OP(vsub)
GLIA_TWO_OP(abs_u8)
GLIA_TWO_OP(sign_of)
GLIA_TWO_OP(byte_dot_add)
GLIA_TWO_OP(byte_dot_add32)
GLIA_TWO_OP(byte_dot_sum)
GLIA_TWO_OP(byte_dot_widen)
GLIA_TWO_OP(byte_dot_scaled)
GLIA_TWO_OP(lane_scales)
GLIA_TWO_OP(lane_byte_pairs)
#undef GLIA_TWO_OP
// byte_dot_bcast on both panels with one broadcast of the activation cell.
inline two_i byte_dot_bcast(two_i acc, two_i w_u8, const uint8_t* p) {
  const __m256i a = broadcast4(p);
  return {chained(byte_dot_add(acc.lo, w_u8.lo, a)), chained(byte_dot_add(acc.hi, w_u8.hi, a))};
}
template <two_vectors P>
P rounded(P v) {
  return make_two(rounded(v.lo), rounded(v.hi));
}
template <two_vectors P>
P chained(P v) {
  return make_two(chained(v.lo), chained(v.hi));
}

#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define GLIA_PANEL_PAIRS 1

struct rows16 {
  using i = __m512i;
  using f = __m512;
  static i load(const uint8_t* p, size_t second) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load256(p)), load256(p + second), 1);
  }
  static f halves(const uint8_t* p, size_t second) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(load128(p)), load128(p + second), 1));
  }
  static i bcast4(const void* p) { return _mm512_set1_epi32(load_i32(p)); }
  static i set1_i8(int8_t v) { return _mm512_set1_epi8(v); }
  static i set1_i32(int32_t v) { return _mm512_set1_epi32(v); }
  static i zero() { return _mm512_setzero_si512(); }
  static f set1_f(float v) { return _mm512_set1_ps(v); }
  static f zero_f() { return _mm512_setzero_ps(); }
  static i spread_word(__m128i x, int k) { return _mm512_set1_epi32(word_of(x, k)); }
  template <size_t BlockBytes, int Parts = 1, size_t Distance = panel_prefetch_distance, int Locality = 2>
  static void prefetch(const uint8_t* block, size_t second, int part = 0) {
    panel_prefetch<BlockBytes, Distance, Parts, Locality>(block, part);
    panel_prefetch<BlockBytes, Distance, Parts, Locality>(block + second, part);
  }
  static void store(float* y, f v, int n) { _mm512_mask_storeu_ps(y, __mmask16((1u << n) - 1), v); }
};

inline __m512i vand(__m512i a, __m512i b) { return _mm512_and_si512(a, b); }
inline __m512i vor(__m512i a, __m512i b) { return _mm512_or_si512(a, b); }
inline __m512i vxor(__m512i a, __m512i b) { return _mm512_xor_si512(a, b); }
inline __m512i vadd32(__m512i a, __m512i b) { return _mm512_add_epi32(a, b); }
inline __m512i vsub32(__m512i a, __m512i b) { return _mm512_sub_epi32(a, b); }
inline __m512i vsrl16(__m512i a, int n) { return _mm512_srli_epi16(a, unsigned(n)); }
inline __m512i vsll16(__m512i a, int n) { return _mm512_slli_epi16(a, unsigned(n)); }
inline __m512i vsrl32(__m512i a, int n) { return _mm512_srli_epi32(a, unsigned(n)); }
inline __m512i vsll32(__m512i a, int n) { return _mm512_slli_epi32(a, unsigned(n)); }
inline __m512i vsra32(__m512i a, int n) { return _mm512_srai_epi32(a, unsigned(n)); }
inline __m512i vmadd16(__m512i a, __m512i b) { return _mm512_madd_epi16(a, b); }
inline __m512 vcvt(__m512i a) { return _mm512_cvtepi32_ps(a); }
inline __m512 vmul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
inline __m512 vadd(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
inline __m512 vsub(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
inline __m512i abs_u8(__m512i w) { return _mm512_abs_epi8(w); }
inline __m512i sign_of(__m512i a, __m512i w) {
  // AVX-512 has no vpsignb: negate where w < 0; where w is 0 a stays, but it meets |w| = 0.
  return _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
}
inline __m512i byte_dot_add(__m512i acc, __m512i w_u8, __m512i a_s8) { return _mm512_dpbusd_epi32(acc, w_u8, a_s8); }
inline __m512i byte_dot_bcast(__m512i acc, __m512i w_u8, const uint8_t* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w_u8), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
}
inline __m512i byte_dot_add32(__m512i acc, __m512i w_u8, __m512i a_s8) { return _mm512_dpbusd_epi32(acc, w_u8, a_s8); }
inline __m512i byte_dot_sum(__m512i a, __m512i b) { return _mm512_add_epi32(a, b); }
inline __m512i byte_dot_widen(__m512i acc) { return acc; }
inline __m512i byte_dot_scaled(__m512i acc, __m512i scale) {  // scale: from lane_scales
  return _mm512_mullo_epi32(acc, scale);
}
// lane_scales of simd_avx2.h (VNNI form: int32 lanes).
inline __m512i lane_scales(__m512i v, int j, bool is_signed) {
  const __m512i x = _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(lane_byte_control(j, is_signed ? 3 : 0)));
  return is_signed ? _mm512_srai_epi32(x, 24) : x;
}
// lane_byte_pairs of simd_avx2.h, per 256-bit half.
inline __m512i lane_byte_pairs(__m512i v, int j, bool pair, bool is_signed) {
  const __m256i lo = lane_byte_pairs(_mm512_castsi512_si256(v), j, pair, is_signed);
  const __m256i hi = lane_byte_pairs(_mm512_extracti64x4_epi64(v, 1), j, pair, is_signed);
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
#endif

// The byte dot product of a tile of T tokens with V vectors: byte_dot_bcast for prefill tiles; for
// decode tiles (T <= gemv_max_tokens) a separate broadcast load, which measured a little faster
// there end to end (tg48 Q4_0 23.2 / 23.6 against 22.7 / 21.5 t/s with the embedded broadcast).
template <int T, class V>
typename V::i tile_dot(typename V::i acc, typename V::i w_u8, const uint8_t* p) {
  if constexpr (T > gemv_max_tokens) return byte_dot_bcast(acc, w_u8, p);
  else return chained(byte_dot_add(acc, w_u8, V::bcast4(p)));
}

// The high nibbles of w's bytes as the weights of byte dot products, and the matching correction
// of a sum of such products. With VNNI the sums are int32, so the nibbles stay where they are:
// w & 0xF0 weighs every code 16x (one mask per cell instead of a shift and a mask; shifts share
// the two ports of the dot products) and the sum is divided by 16 once, exactly, since every
// product is a multiple of 16 (|sum| <= 16 * 15 * 128 * 32 per 32 elements). Without VNNI the
// int16 pairs of maddubs would overflow at 16x, so the nibbles are shifted down.
template <class V>
typename V::i high_nibbles(typename V::i w) {
  if constexpr (byte_dot_vnni) return vand(w, V::set1_i8(int8_t(0xF0)));
  else return vand(vsrl16(w, 4), V::set1_i8(0x0F));
}
template <class V>
typename V::i high_nibble_sum(typename V::i s) {
  if constexpr (byte_dot_vnni) return vsra32(s, 4);
  else return s;
}

// How a kernel reads panels for decode (up to gemv_max_tokens tokens) where the build has rows16.
// In pairs, each weight vector feeds twice the dot-product work of its broadcast activations, but
// the two panels are two streams from memory and every vector costs a lane insert. Measured in
// cache, one token, one thread (MmKernelPerf, B/cycle of weights, single -> pairs): Q4_0 6.7 ->
// 9.9, Q6_K 7.8 -> 8.5, Q4_K 9.0 -> 8.7, Q8_0 14.7 -> 15.0. End to end (TinyLlama geometry, 2
// threads, alternating runs): Q4_0 pairs 27.1 against 25.3 t/s; Q4_K_M decode measured slower with
// Q6_K paired (24.5 against 25.3 t/s; earlier, with Q4_K paired as well, 16.5-17.3 against
// 18.7-18.9). So Q4_0 read pairs there, the others single panels. One token in two streams
// (gemv_panel_streams) follows the same choice: rows16 for pairs, rows8x2 (no lane inserts) else.
// Those were Cascade Lake's figures (session 7), whose 512-bit instructions gang two 256-bit
// ports, taken before one token read two streams. On the Intel host with AMX (session 28), two
// streams 2 KiB ahead in both forms: Q4_0 single 51.3 / 51.9 / 50.5 / 51.9 against pairs 48.2 /
// 50.8 / 49.2 / 50.7 t/s (2 threads, alternated), so Intel's cores read single panels now
// (decode_forms_on in cpu_kernels.cpp; 2-3 token tiles follow, see bench/RESULTS.md). On AMD's
// AVX-512 (cpu_features::avx512_amd) pairs win for the k-quants too. Zen 5 (full width): in cache,
// two streams, Q4_K 14.5 -> 17.7 B/cycle and Q6_K 12.7 -> 16.7; Q4_K_M decode, medians of
// alternated runs, 2 threads 78.4 -> 89.4, 86.9 -> 91.6, 75.5 -> 87.0 t/s, 1 thread 44.1 -> 51.2,
// 46.3 -> 50.1; Q8_0 stays single there (pairs 49.0 against 53.9 t/s). Zen 4 (two halves per
// instruction, session 13): Q4_K_M decode 29.9 -> 40.1 t/s with 2 threads, 19.7 -> 26.9 with 1
// (medians of alternated runs), but Q4_0 there reads faster single (26.7 -> 33.5 t/s with 1
// thread, 41.1 -> 50.0 with 2) and Q8_0 slower in pairs (23.1 -> 19.1, 1 thread). So the
// AVX-512 tables come in both forms (cpu_kernels.cpp, decode_forms_on chooses).
//
// Their software prefetch (decode_prefetch below) comes in two forms too: the whole of a block
// ahead as the block begins (the AMD cores we tuned on: on Zen 3 and Zen 4 spreading it over a
// block's eighths measured slower, see panel_prefetch), or a part of it at each part of the block's work
// (`spread`; the Intel Xeon with AMX of session 24 in bench/RESULTS.md: a burst of a Q6_K block's
// 27 lines per stream at once, then none for the rest of the block, kept the matrices at 71-81% of
// the read bandwidth, a quarter at each quarter of the block at 84-92%; Q4_K_M decode end to end
// +8%). The k-quant tiles call decode_prefetch at their parts; the form never changes a result.
// The same two kinds of core disagree on how far ahead two streams side by side (rows8x2) ask:
// Zen 3's Q8_0 and Q4_0 decoded faster at 1 KiB than at 2 (stream_prefetch_distance), the Intel
// host's at 2 KiB (session 28: TinyLlama Q4_0 with AVX2, 2 threads, five alternated rounds, 49.3 /
// 50.1 / 48.9 / 50.1 / 48.9 -> 51.6 / 51.5 / 50.5 / 51.6 / 50.2 t/s; Q8_0 with VNNI 27.6 / 28.0 /
// 27.9 -> 28.3 / 28.7 / 29.0), so the spread form asks as far ahead as a single panel does
// (panel_prefetch_distance). And into which cache: Zen 4 decoded slower with prefetches into L1
// (see panel_prefetch), the Intel host faster (session 28, three alternated rounds: AVX2 Q4_0 2
// threads 46.9 / 46.6 / 48.8 -> 49.3 / 49.5 / 51.7 t/s, 1 thread 25.8 / 25.4 / 25.3 -> 27.1 / 25.4
// / 27.0, Q4_K_M 45.7 / 45.2 / 45.5 -> 45.8 / 47.5 / 47.6; VNNI Q4_0 and Q8_0 +1.5%), so the
// spread form prefetches into L1 (T0), the AMD form into L2 (T1). Measured on one host of each vendor.
struct decode_form {
  bool pairs = false;   // one-token tiles read two panels per rows16 vector
  bool spread = false;  // k-quant tiles prefetch a quarter of a block at each quarter of its work,
                        // rows8x2 streams panel_prefetch_distance ahead, every prefetch into L1
};
// pairs_spread is no host's choice today (decode_forms_on pairs on Zen 5 only); the tables are
// built in it so that every combination of the two choices stays tested.
inline constexpr decode_form single_panels{false, false}, panel_pairs{true, false}, single_spread{false, true},
    pairs_spread{true, true};
// The form of a kernel that never decodes in pairs (Q8_0), next to kernels in form d.
constexpr decode_form single_form(decode_form d) { return {false, d.spread}; }

// V with the spread prefetch form (decode_form::spread): only its prefetch tells them apart.
template <class V>
struct spread : V {
  template <size_t BlockBytes, int Parts = 1>
  static void prefetch(const uint8_t* block, size_t second, int part = 0) {
    V::template prefetch<BlockBytes, Parts, panel_prefetch_distance, 3>(block, second, part);  // into L1
  }
};
// The vector family under a spread<> (for code that picks constants by family).
template <class V>
struct family_of {
  using type = V;
};
template <class V>
struct family_of<spread<V>> {
  using type = V;
};
template <class V>
using family_t = typename family_of<V>::type;
template <class V>
inline constexpr bool is_spread = !std::is_same_v<family_t<V>, V>;
// The vectors of a T-token tile of a kernel in form D: spread<V> for decode tiles that spread.
template <class V, decode_form D, int T>
using decode_vectors = std::conditional_t<D.spread && T <= gemv_max_tokens, spread<V>, V>;

// A decode tile's prefetch for part `part` (0..Parts-1) of the block at `block` (and its second
// panel): the whole block ahead at part 0, or with spread<V> a Parts-th of it at each part.
template <class V, size_t BlockBytes, int Parts>
[[gnu::always_inline]] inline void decode_prefetch(const uint8_t* block, size_t second, int part) {
  if constexpr (is_spread<V>) V::template prefetch<BlockBytes, Parts>(block, second, part);
  else if (part == 0) V::template prefetch<BlockBytes>(block, second);
}

// The token tile of a tile's AVX2 prefill in panel pairs (its pair_tokens), or 0: single panels.
template <template <int, class> class Tile>
constexpr int avx2_pair_tokens() {
  if constexpr (requires { Tile<1, rows8>::pair_tokens; }) return Tile<1, rows8>::pair_tokens;
  else return 0;
}

// A panel kernel's gemm (cpu_kernels.h mm_kernel::gemm) from its tile, Tile<T, V>::run for T tokens
// of one panel (rows8) or two (rows16): pairs of panels where the build has rows16 (for decode only
// if Decode is pairs), then single ones; per panel (pair), token tiles of gemm_tile_tokens and one
// of the remainder (TileTokens: the float kernels' tiles are wider). Which panels are paired never
// changes a result (both families give the same bits).
template <template <int, class> class Tile, decode_form Decode, typename Activations,
          int TileTokens = gemm_tile_tokens>
void gemm_panels(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, const Activations& a,
                 int64_t t0, int64_t n_tok, float* y, size_t ys, int last_rows) {
  const auto rows_of = [&](int64_t p) { return p + 1 == n_panels ? last_rows : 8; };
  int64_t p = 0;
#ifdef GLIA_PANEL_PAIRS
  using pair_v = rows16;
  constexpr int pair_tile = TileTokens;
  constexpr bool pair_decode = Decode.pairs;
#else
  // Without rows16, tiles that say so (pair_tokens) read two adjacent panels as rows8x2 in prefill:
  // each activation cell is broadcast once for 16 rows instead of 8.
  using pair_v = rows8x2;
  constexpr int pair_tile = avx2_pair_tokens<Tile>();
  constexpr bool pair_decode = false;
#endif
  if constexpr (pair_tile > 0) {
    for (; (n_tok > gemv_max_tokens || pair_decode) && p + 2 <= n_panels; p += 2) {
      const uint8_t* panel = panels + size_t(p) * panel_bytes;
      const int rows = 8 + rows_of(p + 1);
      token_tiles<pair_tile>(n_tok, [&](auto tile, int64_t t) {
        constexpr int T = decltype(tile)::value;
        Tile<T, decode_vectors<pair_v, Decode, T>>::run(panel, panel_bytes, nb, a, t0 + t, y + size_t(t) * ys + 8 * p, ys, rows);
      });
    }
  }
  for (; p < n_panels; ++p) {
    const uint8_t* panel = panels + size_t(p) * panel_bytes;
    token_tiles<TileTokens>(n_tok, [&](auto tile, int64_t t) {
      constexpr int T = decltype(tile)::value;
      Tile<T, decode_vectors<rows8, Decode, T>>::run(panel, panel_bytes, nb, a, t0 + t, y + size_t(t) * ys + 8 * p, ys,
                                                     rows_of(p));
    });
  }
}

// A panel kernel's gemv_streams (cpu_kernels.h mm_kernel::gemv_streams) from its one-token tile:
// pairs of full panels `second` bytes apart, each pair as one tile of rows16 where the build has it
// and the kernel decodes in pairs (decode_form), else of rows8x2 (both read the second panel at
// +second). A pair's 16 results land in two places of y, so they pass through a small buffer.
template <template <int, class> class Tile, decode_form Decode, typename Activations>
void gemv_panel_streams(const uint8_t* panels, size_t second, size_t panel_bytes, int64_t n_panels, int64_t nb,
                        const Activations& a, int64_t t, float* y_first, float* y_second) {
#ifdef GLIA_PANEL_PAIRS
  using V = decode_vectors<std::conditional_t<Decode.pairs, rows16, rows8x2>, Decode, 1>;
#else
  using V = decode_vectors<rows8x2, Decode, 1>;
#endif
  for (int64_t p = 0; p < n_panels; ++p) {
    alignas(64) float out[16];
    Tile<1, V>::run(panels + size_t(p) * panel_bytes, second, nb, a, t, out, 16, 16);
    std::memcpy(y_first + 8 * p, out, 8 * sizeof(float));
    std::memcpy(y_second + 8 * p, out + 8, 8 * sizeof(float));
  }
}

}  // namespace
}  // namespace glia::cpu
