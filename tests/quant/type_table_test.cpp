// The type table against the GGUF / ggml specification: ids, names, block geometry, dot partners.
// Expected values are written out from ggml.h (enum ggml_type) and ggml-common.h (block structs),
// not taken from the table.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "quant/types.h"

namespace glia {
namespace {

struct spec_row {
  uint32_t id;
  const char* name;
  int64_t block_elems;
  size_t block_bytes;
  bool quantized;
  uint32_t dot_id;
};

// ggml-common.h: e.g. block_q4_0 = fp16 d + 16 bytes of nibbles = 18 bytes per 32 elements;
// block_q2_K = 16 scale bytes + 64 bytes of 2-bit codes + d + dmin = 84 per 256.
constexpr spec_row k_spec[] = {
    {0, "F32", 1, 4, false, 0},        {1, "F16", 1, 2, false, 1},        {30, "BF16", 1, 2, false, 30},
    {2, "Q4_0", 32, 18, true, 8},      {3, "Q4_1", 32, 20, true, 9},      {6, "Q5_0", 32, 22, true, 8},
    {7, "Q5_1", 32, 24, true, 9},      {8, "Q8_0", 32, 34, true, 8},      {9, "Q8_1", 32, 36, true, 9},
    {10, "Q2_K", 256, 84, true, 15},   {11, "Q3_K", 256, 110, true, 15},  {12, "Q4_K", 256, 144, true, 15},
    {13, "Q5_K", 256, 176, true, 15},  {14, "Q6_K", 256, 210, true, 15},  {15, "Q8_K", 256, 292, true, 15},
    {20, "IQ4_NL", 32, 18, true, 8},   {23, "IQ4_XS", 256, 136, true, 15},
};

TEST(TypeTable, EveryImplementedTypeMatchesTheSpec) {
  ASSERT_EQ(all_types().size(), std::size(k_spec));
  for (const spec_row& s : k_spec) {
    SCOPED_TRACE(s.name);
    const type_traits* t = find_type(s.id);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(uint32_t(t->type), s.id);
    EXPECT_STREQ(t->name, s.name);
    EXPECT_EQ(t->block_elems, s.block_elems);
    EXPECT_EQ(t->block_bytes, s.block_bytes);
    EXPECT_EQ(t->is_quantized, s.quantized);
    EXPECT_EQ(uint32_t(t->dot_type), s.dot_id);
    EXPECT_NE(t->dequantize_row, nullptr);
    EXPECT_NE(t->quantize_row, nullptr);
    EXPECT_NE(t->vec_dot, nullptr);
    EXPECT_EQ(&type_info(t->type), t);
    EXPECT_EQ(type_name(s.id), s.name);
  }
}

TEST(TypeTable, AllTypesListsEachIdOnce) {
  std::set<uint32_t> ids;
  for (const type_traits& t : all_types()) EXPECT_TRUE(ids.insert(uint32_t(t.type)).second) << t.name;
}

TEST(TypeTable, DotPartnerHasTheSameBlockLength) {
  // vec_dot walks both rows block by block, so the partner must use the same block length.
  for (const type_traits& t : all_types()) {
    const type_traits& partner = type_info(t.dot_type);
    EXPECT_EQ(partner.block_elems, t.block_elems) << t.name << " with " << partner.name;
  }
}

TEST(TypeTable, RowBytesFollowBlockGeometry) {
  for (const spec_row& s : k_spec) {
    const type_traits& t = *find_type(s.id);
    for (int64_t blocks : {1, 3, 7, 16}) {
      const int64_t n = blocks * s.block_elems;
      EXPECT_EQ(row_bytes(t, n), size_t(blocks) * s.block_bytes) << s.name << " n=" << n;
      EXPECT_EQ(row_bytes(t.type, n), size_t(blocks) * s.block_bytes) << s.name;
    }
  }
  // A few spelled out: a 4096-wide row.
  EXPECT_EQ(row_bytes(dtype::f32, 4096), 16384u);
  EXPECT_EQ(row_bytes(dtype::q4_0, 4096), 128u * 18);
  EXPECT_EQ(row_bytes(dtype::q4_k, 4096), 16u * 144);
  EXPECT_EQ(row_bytes(dtype::q6_k, 4096), 16u * 210);
  EXPECT_EQ(row_bytes(dtype::iq4_xs, 4096), 16u * 136);
}

TEST(TypeTable, FindTypeRejectsUnknownAndUnimplementedIds) {
  std::set<uint32_t> implemented;
  for (const spec_row& s : k_spec) implemented.insert(s.id);
  for (uint32_t id = 0; id < 64; ++id) {
    if (implemented.count(id)) continue;
    EXPECT_EQ(find_type(id), nullptr) << id;
  }
  for (uint32_t id : {100u, 1000u, 65535u, 0x80000000u, 0xFFFFFFFFu}) EXPECT_EQ(find_type(id), nullptr) << id;
}

TEST(TypeTable, NamesOfUnimplementedGgmlTypes) {
  const std::pair<uint32_t, const char*> names[] = {
      {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {21, "IQ3_S"},  {22, "IQ2_S"},
      {24, "I8"},      {25, "I16"},    {26, "I32"},     {27, "I64"},   {28, "F64"},    {29, "IQ1_M"},
      {34, "TQ1_0"},   {35, "TQ2_0"},  {39, "MXFP4"},
  };
  for (const auto& [id, name] : names) EXPECT_EQ(type_name(id), name) << id;
}

TEST(TypeTable, UnknownIdsGetANumberedName) {
  // 4 and 5 (Q4_2, Q4_3) were removed from ggml; 40 is past its last type.
  EXPECT_EQ(type_name(4), "type 4");
  EXPECT_EQ(type_name(5), "type 5");
  EXPECT_EQ(type_name(40), "type 40");
  EXPECT_EQ(type_name(123456), "type 123456");
  // The returned text stays valid after other lookups.
  const std::string_view first = type_name(777);
  for (uint32_t id = 1000; id < 1100; ++id) (void)type_name(id);
  EXPECT_EQ(first, "type 777");
}

}  // namespace
}  // namespace glia
