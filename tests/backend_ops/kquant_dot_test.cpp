// The CUDA matmul's k-quant (Q2_K..Q6_K) and IQ4_XS block arithmetic (backend/cuda/kquant_dot.h, shared by host and
// device) against the type table's vec_dot, bit for bit: a block's lane parts, added as integers,
// then folded into a float, must give the reference's value for that block. Runs on any host.
#include "backend/cuda/kquant_dot.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/fp16.h"
#include "harness.h"
#include "quant/block_types.h"
#include "quant/ref_kernels.h"

namespace glia::test {
namespace {

using quant::block_q4_k;
using quant::block_q5_k;
using quant::block_q6_k;
using quant::block_iq4_xs;
using quant::block_q2_k;
using quant::block_q3_k;
using quant::block_q8_k;

// Blocks of random bytes (every code, scale and min pattern), each with a finite random scale; and
// blocks quantized from floats the way files hold them.
template <class Block>
std::vector<Block> weight_blocks(dtype t, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Block> out(size_t(2 * n));
  auto* bytes = reinterpret_cast<uint8_t*>(out.data());
  for (size_t i = 0; i < size_t(n) * sizeof(Block); ++i) bytes[i] = uint8_t(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<Block, block_iq4_xs> || std::is_same_v<Block, block_q3_k>) {
      out[size_t(i)].d = f32_to_fp16(scale(rng));
    } else if constexpr (!std::is_same_v<Block, block_q6_k>) {
      out[size_t(i)].d = f32_to_fp16(std::abs(scale(rng)));
      out[size_t(i)].dmin = f32_to_fp16(std::abs(scale(rng)));
    } else {
      out[size_t(i)].d = f32_to_fp16(scale(rng));
    }
  }
  const auto x = random_floats(size_t(n) * 256, seed + 1, -3.0f, 3.0f);
  type_info(t).quantize_row(x.data(), out.data() + n, int64_t(n) * 256);
  return out;
}

std::vector<block_q8_k> activation_blocks(int n, uint32_t seed) {
  auto x = random_floats(size_t(n) * 256, seed, -2.0f, 2.0f);
  for (int e = 0; e < 256; ++e) x[size_t(e)] = e % 3 ? 0.0f : x[size_t(e)];  // a block with many zeros
  std::vector<block_q8_k> out(static_cast<size_t>(n));
  quant::quantize_row_q8_k(x.data(), out.data(), int64_t(n) * 256);
  return out;
}

// Blocks of type T cut into `parts` parts of 256 / parts elements: the parts' integer sums, added
// as the kernel adds them across lanes and folded by k_block_value, against the reference's vec_dot.
template <dtype T, class Block, class Part>
void expect_parts_fold_to_reference(int parts, uint32_t weight_seed, uint32_t act_seed, Part part) {
  const auto w = weight_blocks<Block>(T, 24, weight_seed);
  const auto a = activation_blocks(int(w.size()), act_seed);
  for (size_t i = 0; i < w.size(); ++i) {
    const auto* blk = reinterpret_cast<const uint8_t*>(&w[i]);
    int isum = 0, min_term = 0;
    for (int e = 0; e < parts; ++e) {
      const cuda::kq_part p = part(blk, e, a[i].qs + 256 / parts * e, a[i].bsums);
      isum += p.isum;
      min_term += p.min_term;
    }
    const float got = cuda::k_block_value<T>(blk, a[i].d, isum, min_term);
    const float want = type_info(T).vec_dot(&w[i], &a[i], 256);
    EXPECT_EQ(f32_to_bits(got), f32_to_bits(want)) << type_label(T) << " block " << i << ": " << got << " against " << want;
  }
}

TEST(kquant_dot, q4_k_and_q5_k_quarters_give_the_reference_block_value) {
  expect_parts_fold_to_reference<dtype::q4_k, block_q4_k>(cuda::q4_k_parts, 7, 11, cuda::k_quarter<false>);
  expect_parts_fold_to_reference<dtype::q5_k, block_q5_k>(cuda::q4_k_parts, 9, 13, cuda::k_quarter<true>);
}

TEST(kquant_dot, q6_k_eighths_give_the_reference_block_value) {
  // 210-byte blocks: odd ones 2-byte aligned
  expect_parts_fold_to_reference<dtype::q6_k, block_q6_k>(cuda::q6_k_parts, 5, 13, cuda::q6_k_eighth);
}

TEST(kquant_dot, q2_k_and_q3_k_eighths_give_the_reference_block_value) {
  // 84- and 110-byte blocks: Q3_K's odd ones 2-byte aligned
  expect_parts_fold_to_reference<dtype::q2_k, block_q2_k>(cuda::low_k_parts, 21, 23, cuda::low_k_eighth<false>);
  expect_parts_fold_to_reference<dtype::q3_k, block_q3_k>(cuda::low_k_parts, 23, 25, cuda::low_k_eighth<true>);
}

TEST(kquant_dot, iq4_xs_sub_blocks_give_the_reference_block_value) {
  const auto w = weight_blocks<block_iq4_xs>(dtype::iq4_xs, 24, 3);
  const auto a = activation_blocks(int(w.size()), 17);
  for (size_t i = 0; i < w.size(); ++i) {
    // The reference's chain over the sub-blocks of one block, from 0.
    float got = 0.0f;
    for (int g = 0; g < cuda::iq4_xs_parts; ++g)
      got += cuda::iq4_xs_sub_block(reinterpret_cast<const uint8_t*>(&w[i]), g, a[i].qs + 32 * g, a[i].d);
    const float want = type_info(dtype::iq4_xs).vec_dot(&w[i], &a[i], 256);
    EXPECT_EQ(f32_to_bits(got), f32_to_bits(want)) << "block " << i << ": " << got << " against " << want;
  }
}

// The level lookup covers all 16 indices in every byte position.
TEST(kquant_dot, iq4_levels_look_up_every_index) {
  for (uint32_t q = 0; q < 16; ++q)
    for (int pos = 0; pos < 4; ++pos) {
      const uint32_t x = (q << (8 * pos)) | (uint32_t((q + 5) % 16) << (8 * ((pos + 1) % 4)));
      const uint32_t v = cuda::iq4_levels(x);
      EXPECT_EQ(int8_t(uint8_t(v >> (8 * pos))), quant::kvalues_iq4nl[q]) << q << " at " << pos;
      EXPECT_EQ(int8_t(uint8_t(v >> (8 * ((pos + 1) % 4)))), quant::kvalues_iq4nl[(q + 5) % 16]);
    }
}

// dp4a's host twin multiplies signed bytes.
TEST(kquant_dot, dp4a_multiplies_signed_bytes) {
  EXPECT_EQ(cuda::dp4a(0x7F80FF01u, 0x7F80FF01u, 5), 5 + 127 * 127 + 128 * 128 + 1 + 1);
  EXPECT_EQ(cuda::dp4a(0x00000080u, 0x00000002u, 0), -256);
}

}  // namespace
}  // namespace glia::test
