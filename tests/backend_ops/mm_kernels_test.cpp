// The matmul kernels (cpu_kernels.h mm_kernel) against the type table's reference vec_dot, bit for
// bit: their contract is the reference's exact integer block sums followed by the reference's float
// operations in the reference's order. Weights include raw random bytes (every code, scale and min
// a file can hold, e.g. Q8_0 quants of -128 and Q6_K scales of -128) so any int16 overflow or
// saturation in the integer tricks would change the bits; activations include blocks at +-127.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "harness.h"
#include "op_cases.h"

namespace glia::test {
namespace {

// Byte offsets of the fp16 scales inside one block (ggml-common.h layouts), to keep them finite.
std::vector<size_t> fp16_fields(dtype t) {
  switch (t) {
    case dtype::q4_0:
    case dtype::q5_0:
    case dtype::q8_0:
    case dtype::iq4_nl:
    case dtype::iq4_xs:
      return {0};
    case dtype::q4_1:
    case dtype::q5_1:
    case dtype::q4_k:
    case dtype::q5_k:
      return {0, 2};
    case dtype::q6_k:
      return {208};
    case dtype::q3_k:
      return {108};
    case dtype::q2_k:
      return {80, 82};
    default:
      return {};
  }
}

// n_out rows of random bytes with finite block scales of varied magnitude; for the float types,
// finite values of both signs over five decades (random bytes would be NaN or infinite too often).
test_weight random_byte_weight(dtype type, int64_t n_in, int64_t n_out, uint32_t seed) {
  const type_traits& t = type_info(type);
  test_weight w;
  const size_t stride = row_bytes(t, n_in);
  w.bytes.resize(stride * size_t(n_out));
  std::mt19937 rng(seed);
  for (auto& b : w.bytes) b = uint8_t(rng());
  std::uniform_real_distribution<float> mag(-4.0f, 1.0f);
  if (!t.is_quantized) {
    std::vector<float> row(static_cast<size_t>(n_in));
    for (int64_t r = 0; r < n_out; ++r) {
      for (float& v : row) v = std::pow(10.0f, mag(rng)) * (rng() % 2 ? 1.0f : -1.0f);
      t.quantize_row(row.data(), w.bytes.data() + size_t(r) * stride, n_in);
    }
  }
  for (size_t blk = 0; blk < w.bytes.size() / t.block_bytes; ++blk) {
    for (size_t off : fp16_fields(type)) {
      const uint16_t h = f32_to_fp16(std::pow(10.0f, mag(rng)) * (rng() % 2 ? 1.0f : -1.0f));
      std::memcpy(w.bytes.data() + blk * t.block_bytes + off, &h, 2);
    }
  }
  w.view = weight_view{type, n_in, n_out, w.bytes.data(), stride};
  return w;
}

// Every code, scale and min at its largest (all bytes 0xFF but the fp16 block scales): integer
// sums at the bounds that the kernels' int16 tricks must hold, which random bytes rarely reach.
test_weight saturated_weight(dtype type, int64_t n_in, int64_t n_out, uint32_t seed) {
  test_weight w = random_byte_weight(type, n_in, n_out, seed);
  const size_t block = type_info(type).block_bytes;
  const std::vector<size_t> halves = fp16_fields(type);
  for (size_t i = 0; i < w.bytes.size(); ++i) {
    const size_t off = i % block;
    if (std::none_of(halves.begin(), halves.end(), [&](size_t h) { return off == h || off == h + 1; })) w.bytes[i] = 0xFF;
  }
  return w;
}

// Activation rows whose quants all share one sign: each block's first value at +2.5 and the rest
// just below -2.5 * 127/128 (even rows: quants +127 after Q8_K's -128 at the maximum), or all at +2.5
// (odd rows: -128 for Q8_K, +127 for Q8_0).
std::vector<float> one_sign_activations(int64_t n_in, int64_t n_tok) {
  std::vector<float> x(size_t(n_in * n_tok));
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t i = 0; i < n_in; ++i)
      x[size_t(t * n_in + i)] = t % 2 || i % 32 == 0 ? 2.5f : -2.5f * 127.0f / 128.0f;
  return x;
}

// Activation rows: random, then every other row pushed to the extremes (each block's values at
// +-max, so most quants land on +-127).
std::vector<float> activations(int64_t n_in, int64_t n_tok, uint32_t seed) {
  auto x = random_floats(size_t(n_in * n_tok), seed, -3.0f, 3.0f);
  for (int64_t t = 1; t < n_tok; t += 2)
    for (int64_t i = 0; i < n_in; ++i) x[size_t(t * n_in + i)] = (i * 7 + t) % 3 ? 2.5f : -2.5f;
  return x;
}

// Every matmul kernel of every ISA the host runs, in every decode form (AVX-512: one panel per
// 256-bit vector or two per 512-bit one; AMD's prefetch form or the others', see decode_forms_on
// in cpu_kernels.cpp), whichever this host would pick.
std::vector<const cpu::mm_kernel*> host_mm_kernels() {
  std::vector<std::span<const cpu::mm_kernel>> lists;
#if defined(__x86_64__)  // the only ISA kernels so far (other builds run the scalar reference)
  for (cpu::isa_level l : host_mm_levels()) {
    for (bool amd : {false, true}) {
      if (l == cpu::isa_level::avx2) {
        lists.insert(lists.end(), {cpu::avx2_mm_kquants(amd), cpu::avx2_mm_legacy(amd)});
        continue;
      }
#if !defined(GLIA_NO_AVX512_KERNELS)  // else host_mm_levels() has no AVX-512 level
      for (bool pairs : {false, true}) {
        if (l == cpu::isa_level::avx512amx)
          lists.push_back(cpu::avx512amx_mm_legacy(pairs, amd));
        else
          lists.push_back(cpu::avx512vnni_mm_legacy(pairs, amd));
      }
      lists.push_back(l == cpu::isa_level::avx512amx ? cpu::avx512amx_mm_kquants(amd) : cpu::avx512vnni_mm_kquants(amd));
#endif
    }
    if (l == cpu::isa_level::avx2) lists.push_back(cpu::avx2_mm_float());
#if !defined(GLIA_NO_AVX512_KERNELS)
    if (l == cpu::isa_level::avx512vnni) lists.push_back(cpu::avx512vnni_mm_float());
#endif
  }
#endif
  std::vector<const cpu::mm_kernel*> out;
  for (std::span<const cpu::mm_kernel> list : lists)
    for (const cpu::mm_kernel& mk : list) out.push_back(&mk);
  return out;
}

TEST(mm_kernels, present_where_the_host_has_avx2) {
  if (!(has_avx2() && has_fma() && has_f16c())) GTEST_SKIP() << "no AVX2 on this host";
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::q2_k,
                  dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs})
    EXPECT_NE(cpu::kernels().mm(t), nullptr) << type_info(t).name;
  EXPECT_EQ(cpu::scalar_kernels().mm(dtype::q4_0), nullptr);
  const cpu_features& f = host_cpu_features();
  const bool vnni = f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  const std::string want = vnni ? "avx512vnni" : "avx2";
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q2_k, dtype::q3_k,
                  dtype::iq4_nl, dtype::iq4_xs})
    EXPECT_EQ(cpu::kernels().mm_isa_by_id[uint32_t(t)], want) << type_info(t).name;
  for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::q4_k, dtype::q5_k, dtype::q6_k})
    EXPECT_EQ(cpu::kernels().mm_isa_by_id[uint32_t(t)], vnni && f.amx_int8 ? "avx512amx" : want) << type_info(t).name;
  EXPECT_EQ(cpu::kernels_up_to(cpu::isa_level::avx2).mm_isa_by_id[uint32_t(dtype::q4_0)], std::string("avx2"));
}

// dot, gemv and gemm (every token-tile size and a partial panel) against the reference vec_dot.
TEST(mm_kernels, reproduce_reference_vec_dot_bits) {
  for (const cpu::mm_kernel* mk : host_mm_kernels()) {
    const type_traits& wt = type_info(mk->type);
    // Float types (blocks of one element): rows long enough for the kernels' segments and unrolling,
    // and no saturated weights (all bits set is a NaN there).
    const bool is_float = mk->block_elems == 1;
    const int64_t unit = is_float ? 29 : mk->block_elems;
    for (int64_t n_in : {unit, 2 * unit, 3 * unit, 11 * unit}) {
      for (int kind = 0; kind < (is_float ? 2 : 3); ++kind) {
        // 2 (3, 4) panels, the last partial; token tiles of 4, 4, 3 (8, 3), or of the float kernels'
        // 12 (16) with a remainder, or two of a kernel's tile_tokens (AMX: 16) with a remainder.
        const int64_t n_out = 13 + 8 * kind, n_tok = is_float || mk->tile_tokens ? 37 : 11;
        const test_weight w = kind == 0   ? random_byte_weight(mk->type, n_in, n_out, uint32_t(n_in))
                              : kind == 1 ? make_weight(mk->type, n_in, n_out, uint32_t(n_in))
                                          : saturated_weight(mk->type, n_in, n_out, uint32_t(n_in));
        const auto x = kind == 2 ? one_sign_activations(n_in, n_tok) : activations(n_in, n_tok, uint32_t(n_in) + 1);
        const converted a = convert(*mk, x, n_in, n_tok);
        std::vector<float> want(size_t(n_out * n_tok));
        for (int64_t t = 0; t < n_tok; ++t)
          for (int64_t r = 0; r < n_out; ++r)
            want[size_t(t * n_out + r)] = wt.vec_dot(w.view.row(r), a.rows.row(t), n_in);
        const std::string what = fmt::format("{} n_in {} {}", wt.name, n_in, kind == 0 ? "random bytes" : kind == 1 ? "quantized" : "saturated");

        std::vector<float> got(want.size());
        for (int64_t t = 0; t < n_tok; ++t)
          for (int64_t r = 0; r < n_out; ++r) got[size_t(t * n_out + r)] = mk->dot(w.view.row(r), a.rows.row(t), n_in);
        EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size())) << "dot " << what;

        // gemv over 1, 2 and 3 tokens at a time (every token count it takes), tokens in any position.
        for (int64_t count = 1; count <= cpu::gemv_max_tokens; ++count) {
          std::fill(got.begin(), got.end(), 0.0f);
          for (int64_t t = 0; t < n_tok; t += count) {
            const int64_t c = std::min(count, n_tok - t);
            mk->gemv(w.view, 0, n_out, a.rows, t, c, got.data() + t * n_out, size_t(n_out));
          }
          EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size())) << "gemv of " << count << " tokens " << what;
        }
        // A row range starting inside the matrix, tokens 2-4, output rows 7 floats apart.
        std::vector<float> part(3 * 7);
        mk->gemv(w.view, 6, 11, a.rows, 2, 3, part.data(), 7);
        for (int t = 0; t < 3; ++t)
          EXPECT_TRUE(bit_equal(part.data() + 7 * t, want.data() + (2 + t) * n_out + 6, 5)) << "gemv rows 6-10 " << what;

        const int64_t nb = n_in / wt.block_elems;
        const size_t panel_bytes = size_t(nb) * mk->packed_block_bytes;
        cpu::aligned_buffer panel;
        const int64_t n_panels = (n_out + 7) / 8;
        uint8_t* buf = panel.get(size_t(n_panels) * panel_bytes);
        for (int64_t p = 0; p < n_panels; ++p)
          mk->pack(w.view, 8 * p, int(std::min<int64_t>(8, n_out - 8 * p)), buf + size_t(p) * panel_bytes);
        // The panels one at a time, then together (kernels may take two at a time: a pair of a full
        // and a partial panel), then the last one alone.
        const int last_rows = int(n_out - 8 * (n_panels - 1));
        std::fill(got.begin(), got.end(), 0.0f);
        for (int64_t p = 0; p < n_panels; ++p)
          mk->gemm(buf + size_t(p) * panel_bytes, panel_bytes, 1, nb, a.rows, 0, n_tok, got.data() + 8 * p,
                   size_t(n_out), p + 1 == n_panels ? last_rows : 8);
        EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size())) << "gemm panel by panel " << what;
        std::fill(got.begin(), got.end(), 0.0f);
        mk->gemm(buf, panel_bytes, n_panels, nb, a.rows, 0, n_tok, got.data(), size_t(n_out), last_rows);
        EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size())) << "gemm of all panels " << what;
        // A token range starting inside the batch.
        std::vector<float> sub(size_t(2 * n_out), 0.0f);
        mk->gemm(buf + panel_bytes, panel_bytes, 1, nb, a.rows, 7, 2, sub.data(), size_t(n_out), last_rows);
        for (int t = 0; t < 2; ++t)
          EXPECT_TRUE(bit_equal(sub.data() + t * n_out, want.data() + (7 + t) * n_out + 8, size_t(last_rows)))
              << "gemm tokens 7-8 " << what;
        // Tiles that straddle the blocks of widened activations (float kernels), or start mid-tile.
        std::vector<float> mid(size_t((n_tok - 5) * n_out), 0.0f);
        mk->gemm(buf, panel_bytes, n_panels, nb, a.rows, 5, n_tok - 5, mid.data(), size_t(n_out), last_rows);
        EXPECT_TRUE(bit_equal(mid.data(), want.data() + 5 * n_out, mid.size())) << "gemm tokens 5.. " << what;
      }
    }
  }
}

// gemv_streams: pairs of full panels a few panels apart (the second stream starting inside the
// matrix, output halves in two places) against the reference vec_dot, for every token position.
TEST(mm_kernels, streams_reproduce_reference_vec_dot_bits) {
  for (const cpu::mm_kernel* mk : host_mm_kernels()) {
    if (!mk->gemv_streams) continue;
    const type_traits& wt = type_info(mk->type);
    for (int64_t n_in : {mk->block_elems, 5 * mk->block_elems}) {
      const int64_t n_out = 8 * 7 + 3, n_tok = 3;  // 7 full panels and a partial one
      const test_weight w = make_weight(mk->type, n_in, n_out, uint32_t(n_in) + 7);
      const converted a = convert(*mk, activations(n_in, n_tok, uint32_t(n_in) + 8), n_in, n_tok);
      const int64_t nb = n_in / wt.block_elems;
      const size_t panel_bytes = size_t(nb) * mk->packed_block_bytes;
      cpu::aligned_buffer panel;
      uint8_t* buf = panel.get(8 * panel_bytes);
      for (int64_t p = 0; p < 8; ++p)
        mk->pack(w.view, 8 * p, int(std::min<int64_t>(8, n_out - 8 * p)), buf + size_t(p) * panel_bytes);
      for (int64_t t = 0; t < n_tok; ++t) {
        // Panels 1-3 paired with panels 4-6.
        std::vector<float> first(24, NAN), second(24, NAN);
        mk->gemv_streams(buf + panel_bytes, 3 * panel_bytes, panel_bytes, 3, nb, a.rows, t, first.data(), second.data());
        for (int64_t r = 0; r < 24; ++r) {
          const float want_first = wt.vec_dot(w.view.row(8 + r), a.rows.row(t), n_in);
          const float want_second = wt.vec_dot(w.view.row(32 + r), a.rows.row(t), n_in);
          EXPECT_TRUE(bit_equal(&first[size_t(r)], &want_first, 1)) << wt.name << " n_in " << n_in << " token " << t << " row " << 8 + r;
          EXPECT_TRUE(bit_equal(&second[size_t(r)], &want_second, 1)) << wt.name << " n_in " << n_in << " token " << t << " row " << 32 + r;
        }
      }
    }
  }
}

// One matmul kernel of one ISA level run by a CPU backend with some number of threads.
struct matmul_case {
  const cpu::mm_kernel* mk;
  std::string name;
  std::unique_ptr<backend> cpu;
};

// The cases of weight type t: every ISA level the host runs that has a kernel for it, 1-3 threads
// (none: no kernel for t here). The tests below compute the reference backend's result once per
// weight and batch for all of them: the reference is most of their time (under the sanitizers
// minutes), and its answer does not depend on the case.
std::vector<matmul_case> matmul_cases(dtype t) {
  std::vector<matmul_case> out;
  for (cpu::isa_level level : host_mm_levels())
    for (int nth : {1, 2, 3})
      if (const cpu::mm_kernel* mk = cpu::kernels_up_to(level).mm(t))
        out.push_back({mk, fmt::format("{} {} threads {}", type_label(t), cpu::kernels_up_to(level).isa, nth),
                       cpu::make_cpu_backend(nth, cpu::kernels_up_to(level))});
  return out;
}

// The whole CPU matmul (conversion, gemv or gemm, threads) against the reference backend.
TEST(mm_kernels, cpu_matmul_reproduces_reference_backend_bits) {
  const auto ref = make_ref_backend();
  for (const type_traits& wt : all_types()) {
    const std::vector<matmul_case> cases = matmul_cases(wt.type);
    if (cases.empty()) continue;
    const int64_t n_in = 8 * 256;
    for (int64_t n_out : {int64_t(1), int64_t(67)}) {
      const test_weight w = random_byte_weight(wt.type, n_in, n_out, uint32_t(n_out));
      for (int64_t n_tok : {1, 2, 3, 4, 5, 9, 70}) {
        const auto x = activations(n_in, n_tok, uint32_t(n_tok));
        std::vector<float> want(size_t(n_out * n_tok)), got(want.size());
        ref->matmul(w.view, x.data(), n_tok, want.data());
        for (const matmul_case& c : cases) {
          std::fill(got.begin(), got.end(), NAN);
          c.cpu->matmul(w.view, x.data(), n_tok, got.data());
          EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size())) << c.name << " n_out " << n_out << " n_tok " << n_tok;
        }
      }
    }
  }
}

// Weights prepared at load (repacked into panels): the same bits as the reference for decode-sized
// and prefill-sized batches; a view of the same data with another shape is not confused with the
// prepared matrix; types whose panels are larger than the rows are not prepared.
TEST(mm_kernels, prepared_weights_reproduce_reference_backend_bits) {
  const auto ref = make_ref_backend();
  for (const type_traits& wt : all_types()) {
    const std::vector<matmul_case> cases = matmul_cases(wt.type);
    if (cases.empty()) continue;
    for (int64_t n_out : {int64_t(1), int64_t(9), int64_t(67)}) {
      const int64_t n_in = 11 * 256;
      const test_weight w = random_byte_weight(wt.type, n_in, n_out, uint32_t(n_out));
      std::vector<const matmul_case*> prepared;  // the cases whose backend holds w in panels
      for (const matmul_case& c : cases) {
        const size_t held = c.cpu->prepare_weight(w.view);
        if (!c.mk->compact_panels()) {
          EXPECT_EQ(held, 0u) << c.name;
          continue;
        }
        EXPECT_EQ(held, size_t((n_out + 7) / 8 * (n_in / c.mk->block_elems)) * c.mk->packed_block_bytes) << c.name;
        EXPECT_EQ(c.cpu->prepare_weight(w.view), held) << c.name << ": prepared twice";
        prepared.push_back(&c);
      }
      if (prepared.empty()) continue;
      weight_view head = w.view;  // the first 5 blocks of each row: same data pointer, another matrix
      head.n_in = 5 * 256;
      for (int64_t n_tok : {1, 2, 3, 4, 5, 17, 70}) {
        for (const weight_view& v : {w.view, head}) {
          const auto x = activations(v.n_in, n_tok, uint32_t(n_tok));
          std::vector<float> want(size_t(v.n_out * n_tok)), got(want.size());
          ref->matmul(v, x.data(), n_tok, want.data());
          for (const matmul_case* c : prepared) {
            std::fill(got.begin(), got.end(), NAN);
            c->cpu->matmul(v, x.data(), n_tok, got.data());
            EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size()))
                << c->name << " n_in " << v.n_in << " n_out " << n_out << " n_tok " << n_tok;
          }
        }
      }
    }
  }
  const test_weight w = random_byte_weight(dtype::q4_0, 256, 16, 1);
  EXPECT_EQ(make_cpu_backend(2, false)->prepare_weight(w.view), 0u) << "--no-repack";
  EXPECT_EQ(make_ref_backend()->prepare_weight(w.view), 0u);
}

}  // namespace
}  // namespace glia::test
