#include "core/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

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

// Buffers of awkward sizes carved one after another: aligned, zeroed, each holding its own bytes
// (no overlap), back to back within a chunk (so a chunk's huge pages hold them all), a new chunk
// when one is full, and a chunk of its own for a request larger than a chunk.
TEST(huge_page_arena, carves_aligned_disjoint_buffers_back_to_back) {
  huge_page_arena arena;
  struct piece {
    uint8_t* p;
    size_t bytes;
  };
  std::vector<piece> pieces;
  const size_t sizes[] = {1, 63, 65, 4097, (size_t(2) << 20) + 5, 1000};
  for (int round = 0; round < 3; ++round)
    for (size_t bytes : sizes) {
      uint8_t* p = arena.take(bytes);
      ASSERT_NE(p, nullptr) << bytes;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % huge_page_arena::alignment, 0u) << bytes;
      for (size_t i = 0; i < bytes; i += 61) EXPECT_EQ(p[i], 0) << i;
      pieces.push_back({p, bytes});
    }
  // The first chunk starts on a huge page; each piece follows the previous one, rounded up.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pieces[0].p) % (size_t(2) << 20), 0u);
  for (size_t i = 1; i < pieces.size(); ++i) {
    const size_t rounded = (pieces[i - 1].bytes + 63) / 64 * 64;
    EXPECT_EQ(pieces[i].p, pieces[i - 1].p + rounded) << "piece " << i;
  }
  uint8_t* big = arena.take(huge_page_arena::chunk_bytes + 1);  // larger than a chunk: its own
  ASSERT_NE(big, nullptr);
  big[huge_page_arena::chunk_bytes] = 7;
  uint8_t* after = arena.take(huge_page_arena::chunk_bytes - 10);  // does not fit after it: new chunk
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(after) % (size_t(2) << 20), 0u);
  pieces.push_back({big, huge_page_arena::chunk_bytes + 1});
  pieces.push_back({after, huge_page_arena::chunk_bytes - 10});
  for (size_t i = 0; i < pieces.size(); ++i) std::memset(pieces[i].p, int(i + 1), pieces[i].bytes);
  for (size_t i = 0; i < pieces.size(); ++i)
    for (size_t j : {size_t(0), pieces[i].bytes / 2, pieces[i].bytes - 1}) ASSERT_EQ(pieces[i].p[j], uint8_t(i + 1)) << i;
}

}  // namespace
}  // namespace glia
