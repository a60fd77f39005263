// check_tensors (--check-tensors): finds the first NaN / infinity in file order, naming tensor, row
// and column, for plain floats and for quantized blocks whose scale is not finite. Block bytes are
// written by hand from the ggml layouts (gguf.md / ggml-common.h), and the expected values follow
// from IEEE arithmetic: an infinite scale times a zero quant is NaN, times a non-zero quant infinite.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "gguf/gguf.h"
#include "hostile_files.h"
#include "model/tensor_check.h"
#include "test_support.h"

namespace glia::test {
namespace {

constexpr uint32_t t_f32 = 0, t_f16 = 1, t_q4_0 = 2, t_q8_0 = 8, t_q4_k = 12, t_bf16 = 30;
constexpr uint16_t h_one = 0x3c00, h_inf = 0x7c00, h_nan = 0x7e00;  // IEEE half bits
const float f_nan = std::numeric_limits<float>::quiet_NaN();
const float f_inf = std::numeric_limits<float>::infinity();

bytes f32s(const std::vector<float>& v) {
  bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void put16(bytes& b, size_t at, uint16_t v) {
  b.at(at) = uint8_t(v);
  b.at(at + 1) = uint8_t(v >> 8);
}

// Q8_0 blocks: fp16 d, then 32 int8 quants.
bytes q8_0_blocks(size_t n_blocks, uint16_t d, int8_t q) {
  bytes b;
  for (size_t i = 0; i < n_blocks; ++i) {
    b.push_back(uint8_t(d));
    b.push_back(uint8_t(d >> 8));
    for (int j = 0; j < 32; ++j) b.push_back(uint8_t(q));
  }
  return b;
}

std::string check(const gguf::writer& w, int n_threads = 1) {
  static std::vector<bytes> keep;  // the file object points into these bytes
  keep.push_back(to_bytes(w));
  auto f = gguf::file::from_memory(keep.back());
  EXPECT_TRUE(f.is_ok()) << f.message();
  if (!f) return "(file did not parse)";
  status s = check_tensors(**f, n_threads);
  return s.is_ok() ? std::string("ok") : s.message();
}

gguf::writer one_tensor(const std::string& name, uint32_t type, std::vector<int64_t> dims, const bytes& data) {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  EXPECT_TRUE(w.add_tensor("clean.weight", t_f32, {4}, f32s({1, 2, 3, 4})).is_ok());
  EXPECT_TRUE(w.add_tensor(name, type, std::move(dims), data).is_ok()) << name;
  return w;
}

TEST(check_tensors, clean_file_passes) {
  EXPECT_EQ(check(one_tensor("w", t_f32, {3, 2}, f32s({0, -1, 1e30f, -1e-30f, 5, 6}))), "ok");
}

TEST(check_tensors, f32_nan_names_row_and_column) {
  std::vector<float> v(8 * 3, 0.5f);
  v[2 * 8 + 5] = f_nan;
  EXPECT_EQ(check(one_tensor("blk.0.attn_q.weight", t_f32, {8, 3}, f32s(v))),
            "tensor blk.0.attn_q.weight: non-finite value (nan) at row 2, column 5");
}

TEST(check_tensors, f32_infinities_are_signed) {
  std::vector<float> v(4, 0.0f);
  v[3] = f_inf;
  EXPECT_EQ(check(one_tensor("w", t_f32, {4}, f32s(v))), "tensor w: non-finite value (inf) at row 0, column 3");
  v[3] = -f_inf;
  EXPECT_EQ(check(one_tensor("w", t_f32, {4}, f32s(v))), "tensor w: non-finite value (-inf) at row 0, column 3");
}

TEST(check_tensors, rows_count_over_all_higher_dims) {
  // ne = [4, 3, 2]: row r covers elements [4r, 4r + 4); the element (ne0 1, ne1 2, ne2 1) is in row 1*3 + 2.
  std::vector<float> v(24, 1.0f);
  v[(1 * 3 + 2) * 4 + 1] = f_nan;
  EXPECT_EQ(check(one_tensor("w3", t_f32, {4, 3, 2}, f32s(v))), "tensor w3: non-finite value (nan) at row 5, column 1");
}

TEST(check_tensors, long_row_is_scanned_in_chunks) {
  std::vector<float> v(40000, 1.0f);
  v[39999] = -f_inf;
  EXPECT_EQ(check(one_tensor("long", t_f32, {40000}, f32s(v))), "tensor long: non-finite value (-inf) at row 0, column 39999");
}

TEST(check_tensors, f16_and_bf16_specials) {
  bytes h(2 * 4, 0);
  put16(h, 2, h_nan);
  EXPECT_EQ(check(one_tensor("h", t_f16, {4}, h)), "tensor h: non-finite value (nan) at row 0, column 1");
  bytes bf(2 * 4, 0);
  put16(bf, 6, 0xff80);  // bf16 -inf: sign 1, exponent all ones, mantissa 0
  EXPECT_EQ(check(one_tensor("bf", t_bf16, {4}, bf)), "tensor bf: non-finite value (-inf) at row 0, column 3");
}

TEST(check_tensors, q8_0_infinite_scale_with_zero_quants_is_nan) {
  // Row of 64 (two blocks): block 0 finite, block 1 has d = +inf and q = 0 -> 0 * inf = NaN at column 32.
  bytes b = q8_0_blocks(1, h_one, 3);
  bytes bad = q8_0_blocks(1, h_inf, 0);
  b.insert(b.end(), bad.begin(), bad.end());
  EXPECT_EQ(check(one_tensor("q8", t_q8_0, {64}, b)), "tensor q8: non-finite value (nan) at row 0, column 32");
  // With q = -1 the same scale gives -inf.
  EXPECT_EQ(check(one_tensor("q8", t_q8_0, {32}, q8_0_blocks(1, h_inf, -1))),
            "tensor q8: non-finite value (-inf) at row 0, column 0");
  // A NaN scale poisons the block whatever the quants.
  EXPECT_EQ(check(one_tensor("q8", t_q8_0, {32, 2}, [] {
              bytes x = q8_0_blocks(1, h_one, 1);
              bytes y = q8_0_blocks(1, h_nan, 0);
              x.insert(x.end(), y.begin(), y.end());
              return x;
            }())),
            "tensor q8: non-finite value (nan) at row 1, column 0");
}

TEST(check_tensors, q4_0_infinite_scale) {
  // Q4_0: fp16 d, 16 bytes of nibbles; x = d * (q - 8). Element 0 is the low nibble of byte 0.
  bytes b(18, 0);
  put16(b, 0, h_inf);
  // All nibbles 0: x = -8 * inf = -inf.
  EXPECT_EQ(check(one_tensor("q4", t_q4_0, {32}, b)), "tensor q4: non-finite value (-inf) at row 0, column 0");
  // Nibble 8 everywhere: x = 0 * inf = NaN.
  std::fill(b.begin() + 2, b.end(), uint8_t(0x88));
  EXPECT_EQ(check(one_tensor("q4", t_q4_0, {32}, b)), "tensor q4: non-finite value (nan) at row 0, column 0");
}

TEST(check_tensors, q4_k_nan_super_block_scale) {
  // Q4_K super-block (144 bytes): fp16 d, fp16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of
  // nibbles; x = d * sc * q - dmin * m. A NaN d makes every element of its super-block NaN.
  bytes b(2 * 144, 0);
  put16(b, 144, h_nan);
  EXPECT_EQ(check(one_tensor("qk", t_q4_k, {512}, b)), "tensor qk: non-finite value (nan) at row 0, column 256");
}

gguf::writer two_bad_tensors() {
  // A tensor of 2048 rows x 1024 (several work items), NaNs at rows 1500 and 1900, then a later
  // tensor with a NaN at its very start: the first in file order must win for any thread count.
  gguf::writer w;
  std::vector<float> big(size_t(1024) * 2048, 0.25f);
  big[size_t(1900) * 1024 + 7] = f_nan;
  big[size_t(1500) * 1024 + 3] = f_inf;
  std::vector<float> later(64, 1.0f);
  later[0] = f_nan;
  EXPECT_TRUE(w.add_tensor("first.weight", t_f32, {64}, f32s(std::vector<float>(64, 1.0f))).is_ok());
  EXPECT_TRUE(w.add_tensor("big.weight", t_f32, {1024, 2048}, f32s(big)).is_ok());
  EXPECT_TRUE(w.add_tensor("later.weight", t_f32, {64}, f32s(later)).is_ok());
  return w;
}

TEST(check_tensors, first_finding_is_independent_of_threads) {
  const gguf::writer w = two_bad_tensors();
  const std::string want = "tensor big.weight: non-finite value (inf) at row 1500, column 3";
  EXPECT_EQ(check(w, 1), want);
  EXPECT_EQ(check(w, 2), want);
  EXPECT_EQ(check(w, 7), want);
}

TEST(check_tensors, unprintable_tensor_name_stays_one_line) {
  std::vector<float> v = {f_nan};
  const std::string msg = check(one_tensor("bad\nname", t_f32, {1}, f32s(v)));
  EXPECT_EQ(msg, "tensor bad\\x0aname: non-finite value (nan) at row 0, column 0");
}

// The path the CLI's --check-tensors takes, minus the CLI: open the file from disk, then scan it.
TEST(check_tensors, poisoned_model_file_on_disk) {
  const std::string path = write_scratch("check_tensors_poisoned", to_bytes(tiny_model({.poison = "blk.0.attn_output.weight", .poison_at = 13})));
  auto f = gguf::file::open(path);
  ASSERT_TRUE(f.is_ok()) << f.message();
  status s = check_tensors(**f, 2);
  // attn_output is [n_head * head_dim = 8, n_embd = 8]: element 13 is row 1, column 5.
  EXPECT_EQ(s.message(), "tensor blk.0.attn_output.weight: non-finite value (nan) at row 1, column 5");
}

// Every model of the test-data pack (all weight types the engine implements) is finite.
TEST(check_tensors, every_pack_model_is_finite) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(testdata("models"))) {
    if (e.path().extension() != ".gguf") continue;
    auto f = gguf::file::open(e.path().string());
    ASSERT_TRUE(f.is_ok()) << f.message();
    status s = check_tensors(**f, 2);
    EXPECT_TRUE(s.is_ok()) << e.path() << ": " << s.message();
    ++n;
  }
  EXPECT_EQ(n, 25);
}

}  // namespace
}  // namespace glia::test
