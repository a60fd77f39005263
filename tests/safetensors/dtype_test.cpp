// The dtype table against the spec's names and widths (written out here from the safetensors README
// and the reference implementation's Dtype enum), and tensor_bytes' arithmetic and refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "safetensors/safetensors.h"

namespace glia::safetensors::test {
namespace {

struct spec_row {
  dtype type;
  const char* name;
  size_t bits;
};

const spec_row spec_rows[] = {
    {dtype::boolean, "BOOL", 8},    {dtype::u8, "U8", 8},           {dtype::i8, "I8", 8},
    {dtype::f8_e5m2, "F8_E5M2", 8}, {dtype::f8_e4m3, "F8_E4M3", 8}, {dtype::f8_e8m0, "F8_E8M0", 8},
    {dtype::i16, "I16", 16},        {dtype::u16, "U16", 16},        {dtype::f16, "F16", 16},
    {dtype::bf16, "BF16", 16},      {dtype::i32, "I32", 32},        {dtype::u32, "U32", 32},
    {dtype::f32, "F32", 32},        {dtype::c64, "C64", 64},        {dtype::f64, "F64", 64},
    {dtype::i64, "I64", 64},        {dtype::u64, "U64", 64},        {dtype::f4, "F4", 4},
    {dtype::f6_e2m3, "F6_E2M3", 6}, {dtype::f6_e3m2, "F6_E3M2", 6},
};

TEST(SafetensorsDtype, NamesAndWidthsMatchTheSpec) {
  for (const spec_row& r : spec_rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(dtype_name(r.type), r.name);
    EXPECT_EQ(dtype_bits(r.type), r.bits);
    EXPECT_EQ(dtype_size(r.type), r.bits % 8 == 0 ? r.bits / 8 : 0);
    auto parsed = parse_dtype(r.name);
    ASSERT_TRUE(parsed.is_ok()) << parsed.message();
    EXPECT_EQ(*parsed, r.type);
  }
}

TEST(SafetensorsDtype, UnknownNamesAreRefusedByName) {
  for (const char* name : {"F12", "f32", "", "FLOAT32", "F32 ", "Q4_0"}) {
    auto parsed = parse_dtype(name);
    ASSERT_FALSE(parsed.is_ok()) << name;
    EXPECT_EQ(parsed.message(), "unknown dtype \"" + std::string(name) + "\"");
  }
}

TEST(SafetensorsDtype, TensorBytes) {
  const std::vector<int64_t> scalar, matrix{3, 5}, empty_rows{0, 7}, f4_pair{2}, f6_quad{4};
  EXPECT_EQ(*tensor_bytes(dtype::f32, scalar), 4u);
  EXPECT_EQ(*tensor_bytes(dtype::bf16, matrix), 30u);
  EXPECT_EQ(*tensor_bytes(dtype::c64, matrix), 120u);
  EXPECT_EQ(*tensor_bytes(dtype::i64, empty_rows), 0u);
  EXPECT_EQ(*tensor_bytes(dtype::f4, f4_pair), 1u);
  EXPECT_EQ(*tensor_bytes(dtype::f6_e2m3, f6_quad), 3u);
}

TEST(SafetensorsDtype, TensorBytesRefusals) {
  const std::vector<int64_t> negative{2, -1}, too_many{int64_t(1) << 32, int64_t(1) << 31},
      too_many_but_empty{int64_t(1) << 32, 0, int64_t(1) << 32}, too_many_bits{int64_t(1) << 62}, half_byte{3};
  EXPECT_EQ(tensor_bytes(dtype::f32, negative).message(), "shape [2, -1]: dim 1 is negative");
  EXPECT_EQ(tensor_bytes(dtype::u8, too_many).message(),
            "shape [4294967296, 2147483648] has more than 2^63 - 1 elements");
  EXPECT_FALSE(tensor_bytes(dtype::u8, too_many_but_empty).is_ok());
  EXPECT_EQ(tensor_bytes(dtype::f64, too_many_bits).message(),
            "shape [4611686018427387904] of F64 has more than 2^64 - 1 bits");
  EXPECT_EQ(tensor_bytes(dtype::f4, half_byte).message(), "shape [3] of F4 is 12 bits, not a whole number of bytes");
}

}  // namespace
}  // namespace glia::safetensors::test
