#include "core/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace glia {
namespace {

TEST(huge_page_buffer, holds_every_byte_of_awkward_sizes) {
  huge_page_buffer buf;
  EXPECT_EQ(buf.data(), nullptr);
  for (size_t bytes : {size_t(1), size_t(4095), size_t(4097), size_t(2) << 20, (size_t(5) << 20) + 123}) {
    uint8_t* p = buf.allocate(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(p, buf.data());
    // Fresh anonymous memory reads as zeros; then every byte must hold what was written.
    for (size_t i = 0; i < bytes; i += 4093) EXPECT_EQ(p[i], 0) << i;
    for (size_t i = 0; i < bytes; ++i) p[i] = uint8_t(i * 131 + bytes);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], uint8_t(i * 131 + bytes)) << i << " of " << bytes;
  }
}

TEST(huge_page_buffer, starts_on_a_huge_page_boundary) {
  huge_page_buffer buf;
  const uint8_t* p = buf.allocate(size_t(3) << 20);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20), 0u);
}

}  // namespace
}  // namespace glia
