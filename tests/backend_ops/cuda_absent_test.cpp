// Where no CUDA device is (or the build has no CUDA backend), asking for one is refused with a reason
// and "auto" falls back to the CPU. Part of every build, unlike the device tests in cuda_ops_test.cpp.
#include <gtest/gtest.h>

#include "backend/backend.h"

namespace glia::test {
namespace {

TEST(cuda_backend, refused_with_a_reason_where_absent) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(make_cuda_backend(), nullptr);
  EXPECT_FALSE(cuda_unavailable_reason().empty());
  auto b = make_backend("cuda", 1);
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.message().find("CUDA backend requested"), std::string::npos) << b.message();
  auto fallback = make_backend("auto", 1);
  ASSERT_TRUE(fallback.is_ok());
  EXPECT_EQ((*fallback)->name(), "cpu");
}

}  // namespace
}  // namespace glia::test
