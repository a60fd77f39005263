// The CUDA backend's repacked Q4_0/Q8_0 layout is built on the host, so it is checked here on any
// machine: every block's scale and quants land where the kernels read them.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cuda/packed_weights.h"
#include "harness.h"

namespace glia::test {
namespace {

TEST(cuda_packing, planes_hold_every_block) {
  for (dtype t : {dtype::q4_0, dtype::q8_0}) {
    for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{32, 1}, {96, 7}, {4096, 3}}) {
      const test_weight w = make_weight(t, n_in, n_out, uint32_t(n_in + n_out));
      ASSERT_TRUE(cuda::packable(w.view));
      std::vector<uint8_t> packed(cuda::packed_bytes(w.view), 0xAB);
      cuda::pack_on_host(w.view, packed.data());
      const size_t qb = cuda::packed_quant_bytes(t), off = cuda::packed_scales_offset(w.view);
      EXPECT_EQ(off % 16, 0u);
      const int64_t nb = n_in / 32;
      for (int64_t r = 0; r < n_out; ++r)
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* block = w.view.row(r) + size_t(b) * (2 + qb);
          const size_t i = size_t(r * nb + b);
          ASSERT_EQ(std::memcmp(packed.data() + off + 2 * i, block, 2), 0) << type_label(t) << " scale " << r << "," << b;
          ASSERT_EQ(std::memcmp(packed.data() + qb * i, block + 2, qb), 0) << type_label(t) << " quants " << r << "," << b;
        }
    }
  }
  EXPECT_FALSE(cuda::packable(make_weight(dtype::q4_k, 256, 2, 1).view));
}

}  // namespace
}  // namespace glia::test
