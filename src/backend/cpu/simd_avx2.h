// Small AVX2 helpers shared by the *_avx2.cpp files, and only by them. Everything sits in an
// anonymous namespace, so each including file gets its own internal copy compiled with its own
// flags: no AVX2-compiled inline function can be merged by the linker into code for older CPUs.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace glia::cpu {
namespace {  // NOLINT(google-build-namespaces): internal linkage on purpose, see above

inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// v unchanged, but opaque to the optimizer (any vector or float register type, 128 to 512 bits).
template <typename V>
inline V opaque(V v) {
  asm("" : "+v"(v));
  return v;
}

// A product passed through rounded is rounded on its own and never fused with the add that follows
// into an FMA (GCC contracts a * b + c by default in C++ when FMA is available), so kernels can
// reproduce the separately rounded multiply-then-add of the scalar reference routines.
template <typename V>
inline V rounded(V v) {
  return opaque(v);
}

// Keeps GCC from reassociating a chain of integer accumulations into a tree of temporaries (which
// needs more registers than AVX2 has and spills in the hot loops).
template <typename V>
inline V chained(V v) {
  return opaque(v);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline void store256(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Sums of unsigned x signed byte products, four per 32-bit lane, for the panel kernels. With AVX-512
// VNNI (where the including file is compiled for it) one vpdpbusd adds them to int32 lanes; with
// AVX2 maddubs forms int16 pair sums that are added in int16 and widened later. Both are exact
// (the kernels bound every int16 sum), so the results are the same bits.
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
inline constexpr bool byte_dot_vnni = true;
#else
inline constexpr bool byte_dot_vnni = false;
#endif

// Tokens per gemm tile: each token's sum is one dependency chain of byte dot products, and a
// vpdpbusd takes 5 cycles before the next in its chain can start, so VNNI needs 8 chains in flight
// (its 32 vector registers hold them); the AVX2 chains add in 1 cycle, and 4 tokens fit 16 registers.
inline constexpr int gemm_tile_tokens = byte_dot_vnni ? 8 : 4;

// acc + w . a per 32-bit lane: int32 lanes (VNNI) or int16 pairs (AVX2; the caller keeps the sum
// of the pairs within int16).
inline __m256i byte_dot_add(__m256i acc, __m256i w_u8, __m256i a_s8) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, w_u8, a_s8);
#else
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(w_u8, a_s8));
#endif
}

// The sum of two accumulators of byte_dot_add (the caller keeps it within the int16 bound on AVX2).
inline __m256i byte_dot_sum(__m256i a, __m256i b) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_add_epi32(a, b);
#else
  return _mm256_add_epi16(a, b);
#endif
}

// An accumulator of byte_dot_add as int32 lanes.
inline __m256i byte_dot_widen(__m256i acc) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return acc;
#else
  return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
#endif
}

// An accumulator of byte_dot_add times a per-lane scale in the form lane_scales gives, as int32.
inline __m256i byte_dot_scaled(__m256i acc, __m256i scale) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_mullo_epi32(acc, scale);
#else
  return _mm256_madd_epi16(acc, scale);
#endif
}

// acc32 + w . a per 32-bit lane for products whose int16 pair sums may not be added (|pair| up
// to 2 * 128 * 127).
inline __m256i byte_dot_add32(__m256i acc32, __m256i w_u8, __m256i a_s8) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc32, w_u8, a_s8);
#else
  return _mm256_add_epi32(acc32, _mm256_madd_epi16(_mm256_maddubs_epi16(w_u8, a_s8), _mm256_set1_epi16(1)));
#endif
}

// Four int8 (or two int16) at p in every 32-bit lane.
inline __m256i broadcast4(const void* p) { return _mm256_set1_epi32(load_i32(p)); }

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

// 32 nibbles of 16 bytes as 32 bytes 0..15: the low nibbles first, then the high ones (the Q4_0
// element order).
inline __m256i unpack_nibbles(const uint8_t* p) {
  const __m128i packed = load128(p);
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// In-place transpose of 8 vectors seen as 8x8 matrices of 32-bit cells: afterwards v[c] holds
// cell c of every input vector, input 0 first.
inline void transpose_8x8_i32(__m256i v[8]) {
  const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
  const __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]), t5 = _mm256_unpackhi_epi32(v[4], v[5]);
  const __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]), t7 = _mm256_unpackhi_epi32(v[6], v[7]);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  v[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  v[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  v[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  v[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  v[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  v[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  v[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  v[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// The first n_cells (4 or 8) 4-byte cells at src[r] of 8 rows, stored cell-major at dst:
// dst[32 c + 4 r] = cell c of row r (the compact panel layout of the matmul kernels).
inline void store_cells(const uint8_t* const src[8], int n_cells, uint8_t* dst) {
  __m256i v[8];
  for (int r = 0; r < 8; ++r) v[r] = n_cells == 8 ? load256(src[r]) : _mm256_zextsi128_si256(load128(src[r]));
  transpose_8x8_i32(v);
  for (int c = 0; c < n_cells; ++c) store256(dst + 32 * c, v[c]);
}

// Row pointers of an 8-row group of w (a weight_view) starting at r0 with n_rows valid rows (the
// rest repeat the last).
template <typename Weights>
void group_rows(const Weights& w, int64_t r0, int n_rows, const uint8_t* rows[8]) {
  for (int r = 0; r < 8; ++r) rows[r] = w.row(r0 + (r < n_rows ? r : n_rows - 1));
}

// pack(blk, out) for every block of an 8-row group (as group_rows), blk[r] = that block of row r,
// out moving on by `packed` bytes: the loop of every panel packer.
template <typename Weights, typename F>
void pack_group_blocks(const Weights& w, int64_t r0, int n_rows, int64_t block_elems, size_t block_bytes,
                       size_t packed, uint8_t* out, F&& pack) {
  const uint8_t* rows[8];
  group_rows(w, r0, n_rows, rows);
  for (int64_t b = 0; b < w.n_in / block_elems; ++b, out += packed) {
    const uint8_t* blk[8];
    for (int r = 0; r < 8; ++r) blk[r] = rows[r] + size_t(b) * block_bytes;
    pack(blk, out);
  }
}

// Of 8 blocks blk[r]: the bytes [offset, offset + 32 n_groups) as cells, 256 bytes per group at dst;
// n_words 4-byte words from `offset` as [word][row] (words); the fp16 at `offset` as [row] (halves).
inline void store_block_cells(const uint8_t* const blk[8], size_t offset, int n_groups, uint8_t* dst) {
  for (int m = 0; m < n_groups; ++m) {
    const uint8_t* src[8];
    for (int r = 0; r < 8; ++r) src[r] = blk[r] + offset + 32 * size_t(m);
    store_cells(src, 8, dst + 256 * m);
  }
}
inline void store_block_words(const uint8_t* const blk[8], size_t offset, int n_words, uint8_t* dst) {
  for (int k = 0; k < n_words; ++k)
    for (int r = 0; r < 8; ++r) std::memcpy(dst + 32 * k + 4 * r, blk[r] + offset + 4 * size_t(k), 4);
}
inline void store_block_halves(const uint8_t* const blk[8], size_t offset, uint8_t* dst) {
  for (int r = 0; r < 8; ++r) std::memcpy(dst + 2 * r, blk[r] + offset, 2);
}

// Byte j (and j + 1 when pair) of every 32-bit lane of v in both 16-bit halves of the lane:
// (x_j, x_j) or (x_j, x_j+1), as unsigned or (is_signed) sign-extended int16.
inline __m256i lane_byte_pairs(__m256i v, int j, bool pair, bool is_signed) {
  // pshufb picks byte 4r + j of the 128-bit half for lane r; 0x80 writes zero. A signed byte goes to
  // the high byte of its int16 and an arithmetic shift brings it down.
  const uint32_t pos = is_signed ? 8 : 0, zero = is_signed ? 0 : 8;
  const uint32_t lane = uint32_t(j) << pos | 0x80u << zero | uint32_t(pair ? j + 1 : j) << (16 + pos) | 0x80u << (16 + zero);
  const uint32_t next = 4u << pos | 4u << (16 + pos);
  const auto l = [&](uint32_t r) { return int32_t(lane + r * next); };
  const __m256i x = _mm256_shuffle_epi8(v, _mm256_setr_epi32(l(0), l(1), l(2), l(3), l(0), l(1), l(2), l(3)));
  return is_signed ? _mm256_srai_epi16(x, 8) : x;
}

// The pshufb control (one 128-bit half; broadcast it to every half) that moves byte j of every
// 32-bit lane to byte `to` of the lane, zeros elsewhere: lane r reads byte 4r + j of its half.
inline __m128i lane_byte_control(int j, int to) {
  const auto lane = [&](int r) {
    return int32_t((0x80808080u & ~(0xFFu << (8 * to))) | uint32_t(4 * r + j) << (8 * to));
  };
  return _mm_setr_epi32(lane(0), lane(1), lane(2), lane(3));
}

// Byte j of every 32-bit lane of v as the scale operand of byte_dot_scaled: with VNNI an int32
// (unsigned or sign-extended), else the int16 pair (x_j, x_j) that madd wants.
inline __m256i lane_scales(__m256i v, int j, bool is_signed) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  // A signed byte goes to the top of its lane and an arithmetic shift brings it down.
  const __m256i x = _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(lane_byte_control(j, is_signed ? 3 : 0)));
  return is_signed ? _mm256_srai_epi32(x, 24) : x;
#else
  return lane_byte_pairs(v, j, false, is_signed);
#endif
}

// Lane r = the sum of the 8 int32 lanes of v[r] (exact: integer adds only).
inline __m256i hsum_8x_i32(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  // Each 128-bit half of h0123 holds rows 0-3, summed over that half of their lanes.
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// As hsum_8x_i32 for vectors of 16 int16 whose 8-lane half sums fit int16 (|lane| <= 4095).
inline __m256i hsum_8x_i16(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi16(v[0], v[1]), h23 = _mm256_hadd_epi16(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi16(v[4], v[5]), h67 = _mm256_hadd_epi16(v[6], v[7]);
  const __m256i h = _mm256_hadd_epi16(_mm256_hadd_epi16(h01, h23), _mm256_hadd_epi16(h45, h67));
  // Low half: rows 0-7 over their low 8 lanes; high half: over their high 8 lanes.
  return _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(h)),
                          _mm256_cvtepi16_epi32(_mm256_extracti128_si256(h, 1)));
}

// Eight fp16 values, each at its own address, as floats.
inline __m256 gather_halves(const uint8_t* const p[8], size_t offset) {
  uint16_t h[8];
  for (int r = 0; r < 8; ++r) std::memcpy(&h[r], p[r] + offset, 2);
  return _mm256_cvtph_ps(load128(h));
}

// Stores the first n (1..8) lanes of v at y.
inline void store_lanes(float* y, __m256 v, int n) {
  if (n == 8) {
    _mm256_storeu_ps(y, v);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  std::memcpy(y, tmp, size_t(n) * sizeof(float));
}

// Calls tile(std::integral_constant<int, T>, t) over tokens [0, n_tok): tiles of Tmax tokens, then
// one tile of the remainder, so every tile size is a compile-time constant.
template <int T, typename F>
void token_tail(int64_t rest, int64_t t, F& tile) {
  if constexpr (T > 0) {
    if (rest == T)
      tile(std::integral_constant<int, T>{}, t);
    else
      token_tail<T - 1>(rest, t, tile);
  }
}

// A file-layout kernel's gemv (cpu_kernels.h mm_kernel::gemv) from its version for T tokens,
// Gemv<T>::run, over 1 to 3 tokens (gemv_max_tokens).
template <template <int> class Gemv, typename Weights, typename Activations>
void gemv_tokens(const Weights& w, int64_t r0, int64_t r1, const Activations& a, int64_t t0, int64_t n_tok, float* y,
                 size_t ys) {
  if (n_tok == 1) Gemv<1>::run(w, r0, r1, a, t0, y, ys);
  else if (n_tok == 2) Gemv<2>::run(w, r0, r1, a, t0, y, ys);
  else Gemv<3>::run(w, r0, r1, a, t0, y, ys);
}

template <int Tmax, typename F>
void token_tiles(int64_t n_tok, F&& tile) {
  int64_t t = 0;
  for (; t + Tmax <= n_tok; t += Tmax) tile(std::integral_constant<int, Tmax>{}, t);
  token_tail<Tmax - 1>(n_tok - t, t, tile);
}

// Decode on prepared panels streams them from memory in order, but the hardware streamer stops at
// every 4 KiB page and restarts only after a few misses; so each block of a panel asks for the
// bytes panel_prefetch_distance ahead (into L2), which keeps enough lines in flight across pages.
inline constexpr size_t panel_prefetch_distance = 2048;
// Two streams read side by side (rows8x2) each ask for less ahead in AMD's decode form (the others'
// ask panel_prefetch_distance ahead: decode_form in panel_vectors.h). Zen 3, alternated rounds of
// `glia bench -n 48`, 2 threads: 1 KiB against 2 KiB Q8_0 27.0 / 23.0 t/s, Q4_0 38.6 / 37.6,
// Q4_K_M 36.3 / 37.2; against 512 bytes Q8_0 27.2 / 25.3, Q4_0 43.8 / 43.8, Q4_K_M 37.8 / 39.5.
// One thread, 4 KiB and none were slower than 1 KiB for Q8_0 and Q4_0 (none: -3% / -7%).
inline constexpr size_t stream_prefetch_distance = 1024;
// Blocks of a KiB and more (the k-quants' super-blocks of 8 rows) keep their scales at the end of
// the block and need them from its first sub-block on: a distance under one block asked for that
// line only as the block began, and a third of AVX2 Q4_K decode waited on it (perf, Zen 4). They
// ask for the whole next block and 2 KiB beyond, whatever the caller's distance. Small blocks keep
// the caller's: Q8_0's 272-byte blocks 2.3 KiB ahead decoded slower (1 thread 18.8-23.1 -> 16.2-16.9 t/s).
template <size_t BlockBytes, size_t Distance>
inline constexpr size_t block_prefetch_distance = BlockBytes >= 1024 ? BlockBytes + 2048 : Distance;
// The form below was measured against others (AVX2, `glia bench -n 48`, alternated rounds):
//  - a plain loop: unrolled (Zen 3 session 10; Zen 4 Q4_K_M 1 thread 29-31 -> 23-24 t/s) or spread
//    over a k-quant block's eight sub-blocks (Zen 4: -> 19-24 t/s) decoded slower;
//  - T1: T0 (into L1) slower on Zen 4 (Q4_0 1 thread 40-44 -> 31-36 t/s, Q4_K_M 35-37 -> 21-23),
//    T2 the same as T1 (Zen 4 fills L2 for both); on the Intel host of session 28, T0 faster, which
//    the spread decode form asks for (Locality 3; decode_form in panel_vectors.h).
// Zen 4 also decoded as fast with no software prefetch at all (its hardware prefetchers follow the
// two streams), Zen 3 did not (session 10: prefetching every other line halved Q4_K_M decode).
// With Parts > 1, part `part` of the block's lines only: its requests spread over the block's work
// (decode_form::spread in panel_vectors.h).
// Locality: __builtin_prefetch's, 2 (prefetcht1, into L2) or 3 (prefetcht0, into L1).
// The parts of a spread block are requested as volatile asm, not __builtin_prefetch: GCC schedules
// a builtin prefetch like any instruction without operands in memory, and had hoisted all four
// parts of a spread Q4_K block's requests to the block's start (39 of 40 within its first 75
// instructions), the burst the spread form exists to avoid. GCC's scheduler does not move code
// across a volatile asm (a scheduling barrier for the tile's arithmetic too, at each quarter), so
// the requests stay where the tile puts them. Zen 3 (session 41, TinyLlama Q4_K_M, `glia bench -p 0
// -n 64 -r 2`, alternated rounds, means of six and of five): 1 thread 29.3 -> 33.3 and 31.2 -> 34.1
// t/s, 2 threads 45.3 -> 47.5 and 48.0 -> 47.3 (even: two threads' reads are nearer the ceiling).
// Whole blocks keep the builtin: pinned at the block's start, Q8_0's two streams decoded slower
// with 2 threads (four rounds, 33.4 -> 30.0 t/s; 1 thread 20.7 -> 21.6, Q4_0 even).
template <int Locality>
[[gnu::always_inline]] inline void prefetch_line(const uint8_t* p) {
  static_assert(Locality == 2 || Locality == 3);
  // An address operand ("p", printed as a memory reference by %a0), not a memory one: the address
  // may lie past the weights (a prefetch does not fault), and nothing is read there.
  if constexpr (Locality == 3) asm volatile("prefetcht0 %a0" : : "p"(p));
  else asm volatile("prefetcht1 %a0" : : "p"(p));
}
template <size_t BlockBytes, size_t Distance = panel_prefetch_distance, int Parts = 1, int Locality = 2>
inline void panel_prefetch(const uint8_t* block, int part = 0) {
  constexpr size_t lines = ((BlockBytes + 63) / 64 + Parts - 1) / Parts;
  const uint8_t* at = block + block_prefetch_distance<BlockBytes, Distance> + size_t(part) * lines * 64;
  for (size_t off = 0; off < lines * 64; off += 64) {
    if constexpr (Parts > 1) prefetch_line<Locality>(at + off);
    else __builtin_prefetch(at + off, 0, Locality);
  }
}

// Software prefetch for the gemv kernels. A gemv walks 8 rows side by side, each only a few
// cache lines long (TinyLlama's Q4_0 rows are 1,152 bytes), a pattern the hardware streamer picks
// up too late: decode ran at about half the memory rate while the same kernel in cache is 3x
// faster than memory. So the groups `ahead` groups past the one being computed (within the same
// work item) are requested into L2, a slice per block; the first groups of an item all at once.
// Two groups ahead: one, two and three measured the same within the noise, one into L1 was slower.
class gemv_prefetch {
  static constexpr int ahead = 2;

 public:
  // Work item: rows [r0, r1) of a matrix whose rows start at `base`, `stride` bytes apart; a group
  // is computed in `steps` blocks.
  gemv_prefetch(const uint8_t* base, size_t stride, int64_t r0, int64_t r1, int64_t steps)
      : base_(base), stride_(stride), r0_(r0), r1_(r1), steps_(steps) {}

  // At the start of group g.
  void group(int64_t g) {
    if (g == r0_) {
      for (int k = 0; k < ahead; ++k) {
        target(g + 8 * k);
        request(stop_);
      }
    }
    target(g + 8 * ahead);
  }
  // Once per block of the group.
  void step() {
    if (next_ < stop_) request(next_ + per_step_);
  }

 private:
  void target(int64_t g) {
    const int64_t end = g + 8 < r1_ ? g + 8 : r1_;
    if (g >= end) {
      next_ = stop_ = nullptr;
      return;
    }
    const auto first = reinterpret_cast<uintptr_t>(base_ + size_t(g) * stride_) & ~uintptr_t(63);
    next_ = reinterpret_cast<const uint8_t*>(first);
    stop_ = base_ + size_t(end) * stride_;
    per_step_ = (size_t(stop_ - next_) + size_t(steps_) - 1) / size_t(steps_);
  }
  void request(const uint8_t* upto) {
    if (upto > stop_) upto = stop_;
    for (; next_ < upto; next_ += 64) _mm_prefetch(reinterpret_cast<const char*>(next_), _MM_HINT_T1);
  }

  const uint8_t* base_;
  size_t stride_;
  int64_t r0_, r1_, steps_;
  const uint8_t* next_ = nullptr;
  const uint8_t* stop_ = nullptr;
  size_t per_step_ = 0;
};

// The walk of every file-layout gemv kernel: the 8-row groups of rows [r0, r1) of w (group_rows),
// each group's nb blocks in order with the prefetcher keeping ahead, T float accumulators holding
// the group's rows in their lanes, stored at y + t * ys + (g - r0) at the end. block(rows, b, acc)
// adds block b of the group's rows to acc[0..T).
template <int T, typename Weights, typename Block>
inline void gemv_groups(const Weights& w, int64_t r0, int64_t r1, int64_t nb, float* y, size_t ys, Block&& block) {
  gemv_prefetch prefetch(static_cast<const uint8_t*>(w.data), w.row_stride, r0, r1, nb);
  for (int64_t g = r0; g < r1; g += 8) {
    const int n = int(std::min<int64_t>(8, r1 - g));
    const uint8_t* rows[8];
    group_rows(w, g, n, rows);
    prefetch.group(g);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      prefetch.step();
      block(rows, b, acc);
    }
    for (int t = 0; t < T; ++t) store_lanes(y + size_t(t) * ys + (g - r0), acc[t], n);
  }
}

// The largest and the sum of the 8 lanes of v.
inline float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// e^x, with |error| <= 2 ulp: 0 below -87 (where e^x is no longer a normal float; a softmax weight
// that small next to the maximum's e^0 = 1 vanishes anyway), +inf above 88 (e^88 ~ 1.7e38 is near
// the float limit; SiLU of -88 and below is then -0, as with std::exp). x = n ln2 + r with
// |r| <= ln2/2 (ln2 in two parts, so n ln2 is exact enough), e^r by its Taylor polynomial of degree
// 7 (truncation below 2.2e-8 relative), then 2^n through the exponent bits. NaN gives that NaN, as
// std::exp does: attention's softmax relies on it to pass a NaN score on to the non-finite check.
inline __m256 exp_ps(__m256 x) {
  const __m256 x0 = x;
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ);  // also false for NaN
  // Above 88, or NaN (unordered): x0 * inf is then +inf or that NaN.
  const __m256 overflow = _mm256_cmp_ps(x, _mm256_set1_ps(88.0f), _CMP_NLE_UQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 high part: 8 bits, exact n * hi
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);      // ln2 - high part
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(scale)), underflow);
  return _mm256_blendv_ps(e, _mm256_mul_ps(x0, _mm256_set1_ps(__builtin_inff())), overflow);
}

}  // namespace
}  // namespace glia::cpu
