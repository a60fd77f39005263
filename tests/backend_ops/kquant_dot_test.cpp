// The CUDA matmul's k-quant (Q2_K..Q6_K) and IQ4_XS block arithmetic (backend/cuda/kquant_dot.h, shared by host and
// device) against the type table's vec_dot, bit for bit: a block's lane parts, added as integers,
// then folded into a float, must give the reference's value for that block. Runs on any host.
#include "backend/cuda/kquant_dot.h"

#include <gtest/gtest.h>

#include <cstring>
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

// Bytes laid out as the device holds them: a 256-byte aligned base (as cudaMalloc gives) and the
// items back to back, so that the host loads' alignment count (kquant_dot.h) sees the device's
// addresses.
template <class T>
struct device_layout {
  std::vector<uint8_t> storage;
  T* data = nullptr;
  size_t size = 0;
  explicit device_layout(size_t n) : storage(n * sizeof(T) + 256), size(n) {
    const auto base = reinterpret_cast<uintptr_t>(storage.data());
    data = reinterpret_cast<T*>(storage.data() + (256 - base % 256) % 256);
  }
  // data points into storage: a copy would point into the original's.
  device_layout(const device_layout&) = delete;
  device_layout& operator=(const device_layout&) = delete;
  device_layout(device_layout&&) = default;
  device_layout& operator=(device_layout&&) = default;
  T& operator[](size_t i) { return data[i]; }
  const T& operator[](size_t i) const { return data[i]; }
};

// Blocks of random bytes (every code, scale and min pattern), each with a finite random scale; and
// blocks quantized from floats the way files hold them; one row, as the device holds it.
template <class Block>
device_layout<Block> weight_blocks(dtype t, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  device_layout<Block> out(size_t(2 * n));
  auto* bytes = reinterpret_cast<uint8_t*>(out.data);
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
  type_info(t).quantize_row(x.data(), out.data + n, int64_t(n) * 256);
  return out;
}

// Q8_K activation blocks (for the reference) and the same as the device's planes: the quants of
// all blocks back to back, the block sums likewise (kernels_kquant.cu's xq and xbs).
struct activations {
  std::vector<block_q8_k> blocks;
  device_layout<int8_t> q;
  device_layout<int16_t> bsums;
  explicit activations(int n) : blocks(size_t(n)), q(size_t(n) * 256), bsums(size_t(n) * 16) {}
};

activations activation_blocks(int n, uint32_t seed) {
  auto x = random_floats(size_t(n) * 256, seed, -2.0f, 2.0f);
  for (int e = 0; e < 256; ++e) x[size_t(e)] = e % 3 ? 0.0f : x[size_t(e)];  // a block with many zeros
  activations out(n);
  quant::quantize_row_q8_k(x.data(), out.blocks.data(), int64_t(n) * 256);
  for (size_t i = 0; i < size_t(n); ++i) {
    std::memcpy(&out.q[256 * i], out.blocks[i].qs, 256);
    std::memcpy(&out.bsums[16 * i], out.blocks[i].bsums, sizeof out.blocks[i].bsums);
  }
  return out;
}

// Blocks of type T cut into `parts` parts of 256 / parts elements: the parts' integer sums, added
// as the kernel adds them across lanes and folded by k_block_value, against the reference's vec_dot;
// and no load at an address the device could not read.
template <dtype T, class Block, class Part>
void expect_parts_fold_to_reference(int parts, uint32_t weight_seed, uint32_t act_seed, Part part) {
  const auto w = weight_blocks<Block>(T, 24, weight_seed);
  const auto a = activation_blocks(int(w.size), act_seed);
  const long misaligned = cuda::misaligned_loads.load();
  for (size_t i = 0; i < w.size; ++i) {
    const auto* blk = reinterpret_cast<const uint8_t*>(&w[i]);
    int isum = 0, min_term = 0;
    for (int e = 0; e < parts; ++e) {
      const cuda::kq_part p = part(blk, e, &a.q[256 * i + size_t(256 / parts * e)], &a.bsums[16 * i]);
      isum += p.isum;
      min_term += p.min_term;
    }
    const float got = cuda::k_block_value<T>(blk, a.blocks[i].d, isum, min_term);
    const float want = type_info(T).vec_dot(&w[i], &a.blocks[i], 256);
    EXPECT_EQ(f32_to_bits(got), f32_to_bits(want)) << type_label(T) << " block " << i << ": " << got << " against " << want;
  }
  EXPECT_EQ(cuda::misaligned_loads.load(), misaligned) << type_label(T) << ": loads the device could not read";
}

TEST(kquant_dot, q4_k_and_q5_k_quarters_give_the_reference_block_value) {
  expect_parts_fold_to_reference<dtype::q4_k, block_q4_k>(cuda::q4_k_parts, 7, 11, cuda::k_quarter<false>);
  expect_parts_fold_to_reference<dtype::q5_k, block_q5_k>(cuda::q4_k_parts, 9, 13, cuda::k_quarter<true>);
}

TEST(kquant_dot, q6_k_eighths_give_the_reference_block_value) {
  // 210-byte blocks: odd ones only 2-byte aligned
  expect_parts_fold_to_reference<dtype::q6_k, block_q6_k>(cuda::q6_k_parts, 5, 13, cuda::q6_k_eighth);
}

TEST(kquant_dot, q2_k_and_q3_k_eighths_give_the_reference_block_value) {
  // 84- and 110-byte blocks: Q3_K's odd ones 2-byte aligned
  expect_parts_fold_to_reference<dtype::q2_k, block_q2_k>(cuda::low_k_parts, 21, 23, cuda::low_k_eighth<false>);
  expect_parts_fold_to_reference<dtype::q3_k, block_q3_k>(cuda::low_k_parts, 23, 25, cuda::low_k_eighth<true>);
}

TEST(kquant_dot, iq4_xs_sub_blocks_give_the_reference_block_value) {
  const auto w = weight_blocks<block_iq4_xs>(dtype::iq4_xs, 24, 3);
  const auto a = activation_blocks(int(w.size), 17);
  const long misaligned = cuda::misaligned_loads.load();
  for (size_t i = 0; i < w.size; ++i) {
    // The reference's chain over the sub-blocks of one block, from 0.
    float got = 0.0f;
    for (int g = 0; g < cuda::iq4_xs_parts; ++g)
      got += cuda::iq4_xs_sub_block(reinterpret_cast<const uint8_t*>(&w[i]), g, &a.q[256 * i + size_t(32 * g)],
                                    a.blocks[i].d);
    const float want = type_info(dtype::iq4_xs).vec_dot(&w[i], &a.blocks[i], 256);
    EXPECT_EQ(f32_to_bits(got), f32_to_bits(want)) << "block " << i << ": " << got << " against " << want;
  }
  EXPECT_EQ(cuda::misaligned_loads.load(), misaligned) << "loads the device could not read";
}

// The host loads count what the device's loads could not read: 16 bytes need 16-byte alignment,
// the IQ4_XS form 8, a word of a 2-byte aligned block 2.
TEST(kquant_dot, host_loads_count_addresses_the_device_could_not_read) {
  const device_layout<uint8_t> buf(64);
  const long before = cuda::misaligned_loads.load();
  (void)cuda::load_words4(buf.data + 16);
  (void)cuda::load_words4_a8(buf.data + 8);
  (void)cuda::load_word_a2(buf.data + 2);
  EXPECT_EQ(cuda::misaligned_loads.load(), before);
  (void)cuda::load_words4(buf.data + 8);
  (void)cuda::load_words4_a8(buf.data + 4);
  (void)cuda::load_word_a2(buf.data + 1);
  EXPECT_EQ(cuda::misaligned_loads.load(), before + 3);
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
