// Writer and reader against hand-assembled bytes (the GGUF spec as oracle), and a round trip through
// every value type, nested arrays, several tensor types and a non-default alignment.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gguf/gguf.h"
#include "gguf_test_util.h"
#include "test_support.h"

namespace glia::gguf::test {
namespace {

// Appends little-endian fields the way the spec describes them, independently of src/gguf.
struct spec_bytes {
  bytes b;
  void u8(uint8_t v) { b.push_back(v); }
  void u32(uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); }
  void u64(uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i))); }
  void str(std::string_view s) { u64(s.size()); b.insert(b.end(), s.begin(), s.end()); }
  void pad(size_t alignment) { while (b.size() % alignment) b.push_back(0); }
};

// A file with two keys and one F32 tensor of shape [3, 2], laid out by hand per the spec.
bytes hand_built_file(uint32_t version) {
  spec_bytes s;
  s.b = {'G', 'G', 'U', 'F'};
  s.u32(version);
  s.u64(1);  // tensors
  s.u64(3);  // kv
  s.str("general.architecture"); s.u32(8); s.str("llama");
  s.str("x.count"); s.u32(4); s.u32(7);
  s.str("x.list"); s.u32(9); s.u32(5); s.u64(2); s.u32(uint32_t(-1)); s.u32(2);  // i32 [-1, 2]
  s.str("w"); s.u32(2); s.u64(3); s.u64(2); s.u32(0); s.u64(0);
  s.pad(32);
  for (int i = 0; i < 6; ++i) {
    float x = 0.5f * float(i);
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    s.u32(bits);
  }
  s.pad(32);
  return s.b;
}

TEST(GgufWriter, MatchesHandBuiltBytes) {
  writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("x.count", 7);
  w.set_i32_array("x.list", {-1, 2});
  std::vector<float> data = {0, 0.5f, 1, 1.5f, 2, 2.5f};
  ASSERT_TRUE(w.add_tensor("w", t_f32, {3, 2}, {reinterpret_cast<const uint8_t*>(data.data()), 24}).is_ok());
  auto out = w.to_bytes();
  ASSERT_TRUE(out) << out.message();
  EXPECT_TRUE(*out == hand_built_file(3));
}

TEST(GgufReader, ReadsHandBuiltV2AndV3) {
  for (uint32_t version : {2u, 3u}) {
    bytes b = hand_built_file(version);
    auto f = file::from_memory(b);
    ASSERT_TRUE(f) << f.message();
    EXPECT_EQ((*f)->version(), version);
    EXPECT_EQ((*f)->alignment(), 32u);
    EXPECT_EQ((*f)->get_string("general.architecture"), "llama");
    EXPECT_EQ((*f)->get_int("x.count"), 7);
    EXPECT_EQ((*f)->get_float("x.count"), 7.0);
    EXPECT_FALSE((*f)->get_bool("x.count").has_value());
    EXPECT_FALSE((*f)->get_string("x.count").has_value());
    EXPECT_FALSE((*f)->get_int("missing").has_value());
    const value* list = (*f)->find("x.list");
    ASSERT_NE(list, nullptr);
    ASSERT_NE(list->as_array(), nullptr);
    EXPECT_EQ(list->elem_type, value_type::i32);
    ASSERT_EQ(list->as_array()->size(), 2u);
    EXPECT_EQ((*list->as_array())[0].as_int(), -1);
    EXPECT_EQ((*list->as_array())[1].as_int(), 2);
    ASSERT_EQ((*f)->tensors().size(), 1u);
    const tensor_info* t = (*f)->find_tensor("w");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->n_dims, 2u);
    EXPECT_EQ(t->ne[0], 3);
    EXPECT_EQ(t->ne[1], 2);
    EXPECT_EQ(t->ne[2], 1);
    EXPECT_EQ(t->n_elements(), 6);
    EXPECT_EQ(t->n_bytes, 24u);
    // header 24 + kv (8+20+4+8+5) + (8+7+4+4) + (8+6+4+4+8+8) + tensor info (8+1+4+16+4+8) = 171 -> 192
    EXPECT_EQ((*f)->data_offset(), 192u);
    EXPECT_EQ(t->data, b.data() + 192);
    float x;
    std::memcpy(&x, t->data + 20, 4);
    EXPECT_EQ(x, 2.5f);
  }
}

value scalar(value_type t, decltype(value::data) d) {
  value v;
  v.type = t;
  v.data = std::move(d);
  return v;
}

bytes pattern(size_t n, uint8_t seed) {
  bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(i * 7 + seed);
  return b;
}

TEST(GgufWriter, RoundTripsEveryValueTypeAndTensors) {
  writer w;
  w.set_alignment(64);
  w.set("v.u8", scalar(value_type::u8, uint64_t(200)));
  w.set("v.i8", scalar(value_type::i8, int64_t(-100)));
  w.set("v.u16", scalar(value_type::u16, uint64_t(60000)));
  w.set("v.i16", scalar(value_type::i16, int64_t(-30000)));
  w.set_u32("v.u32", 4000000000u);
  w.set_i32("v.i32", -2000000000);
  w.set_u64("v.u64", (uint64_t(1) << 63) + 5);
  w.set("v.i64", scalar(value_type::i64, std::numeric_limits<int64_t>::min()));
  w.set_f32("v.f32", 1.5f);
  w.set("v.f64", scalar(value_type::f64, -2.25e300));
  w.set("v.f32.nan", scalar(value_type::f32, std::nan("")));
  w.set_bool("v.true", true);
  w.set_bool("v.false", false);
  static const char raw[] = "nul\0and \xff\xfe bad utf-8";
  const std::string odd_bytes(raw, sizeof raw - 1);
  w.set_string("v.str", odd_bytes);
  w.set_string("v.empty", "");
  w.set("v.arr.u8.empty", array_of(value_type::u8, {}));
  w.set("v.arr.i16", array_of(value_type::i16, {scalar(value_type::i16, int64_t(-2)), scalar(value_type::i16, int64_t(3))}));
  w.set("v.arr.f64", array_of(value_type::f64, {scalar(value_type::f64, 0.1), scalar(value_type::f64, -0.0)}));
  w.set("v.arr.bool", array_of(value_type::boolean, {scalar(value_type::boolean, true), scalar(value_type::boolean, false)}));
  w.set_string_array("v.arr.str", {"a", "", "\xe2\x96\x81hello"});
  w.set_f32_array("v.arr.f32", {1.0f, -3.5f});
  w.set_i32_array("v.arr.i32", {INT32_MIN, INT32_MAX});
  w.set("v.arr.arr.u32",
        array_of(value_type::array, {array_of(value_type::u32, {scalar(value_type::u32, uint64_t(1))}),
                                     array_of(value_type::u32, {}),
                                     array_of(value_type::u32, {scalar(value_type::u32, uint64_t(2)),
                                                                scalar(value_type::u32, uint64_t(3))})}));
  w.set("v.arr.arr.arr.str",
        array_of(value_type::array,
                 {array_of(value_type::array, {array_of(value_type::string, {scalar(value_type::string, std::string("deep"))})}),
                  array_of(value_type::array, {})}));

  // Sizes from the ggml block layouts: F32 4 B/elem, F16 2 B/elem, Q8_0 34 B per 32, Q4_K 144 B per 256.
  struct tensor_case {
    std::string name;
    uint32_t type;
    std::vector<int64_t> dims;
    size_t n_bytes;
  };
  std::vector<tensor_case> cases = {
      {"t.f32", t_f32, {4, 3}, 48},
      {"t.f16", t_f16, {8}, 16},
      {"t.q8_0", t_q8_0, {64, 2}, 136},
      {"t.q4_k", t_q4_k, {256, 1, 1, 2}, 288},
      {"t.bf16", t_bf16, {2, 1, 3}, 12},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    bytes data = pattern(cases[i].n_bytes, uint8_t(i));
    ASSERT_TRUE(w.add_tensor(cases[i].name, cases[i].type, cases[i].dims, data).is_ok()) << cases[i].name;
  }

  auto out = w.to_bytes();
  ASSERT_TRUE(out) << out.message();
  auto f = file::from_memory(*out);
  ASSERT_TRUE(f) << f.message();
  const file& r = **f;
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.alignment(), 64u);
  EXPECT_EQ(r.get_int("general.alignment"), 64);
  EXPECT_EQ(r.data_offset() % 64, 0u);
  EXPECT_EQ(r.size() % 64, 0u);  // the last tensor is padded too

  // Read back against what we wrote, key by key and in order (general.alignment comes first: it
  // was set first).
  auto read_back = r.metadata();
  ASSERT_EQ(read_back.size(), 25u);
  EXPECT_EQ(read_back[0].first, "general.alignment");
  writer expected;
  expected.copy_metadata(r);
  auto again = expected.to_bytes();
  ASSERT_TRUE(again);
  auto r2 = file::from_memory(*again);
  ASSERT_TRUE(r2) << r2.message();
  for (size_t i = 0; i < read_back.size(); ++i) {
    EXPECT_EQ(read_back[i].first, (*r2)->metadata()[i].first);
    expect_same_value(read_back[i].second, (*r2)->metadata()[i].second, read_back[i].first);
  }
  // Spot checks against the literal values written above.
  EXPECT_EQ(r.get_int("v.u8"), 200);
  EXPECT_EQ(r.get_int("v.i8"), -100);
  EXPECT_EQ(r.get_int("v.u16"), 60000);
  EXPECT_EQ(r.get_int("v.i16"), -30000);
  EXPECT_EQ(r.get_int("v.u32"), 4000000000LL);
  EXPECT_EQ(r.get_int("v.i32"), -2000000000);
  EXPECT_FALSE(r.get_int("v.u64").has_value());  // above INT64_MAX
  EXPECT_EQ(std::get<uint64_t>(r.find("v.u64")->data), (uint64_t(1) << 63) + 5);
  EXPECT_EQ(r.get_int("v.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.get_float("v.f32"), 1.5);
  EXPECT_EQ(r.find("v.f32")->type, value_type::f32);
  EXPECT_EQ(r.get_float("v.f64"), -2.25e300);
  EXPECT_TRUE(std::isnan(*r.get_float("v.f32.nan")));
  EXPECT_EQ(r.get_bool("v.true"), true);
  EXPECT_EQ(r.get_bool("v.false"), false);
  EXPECT_EQ(r.get_string("v.str"), odd_bytes);
  EXPECT_EQ(odd_bytes.size(), 20u);
  EXPECT_EQ(r.get_string("v.empty"), "");
  EXPECT_EQ(r.find("v.arr.u8.empty")->elem_type, value_type::u8);
  EXPECT_TRUE(r.find("v.arr.u8.empty")->as_array()->empty());
  const auto& strs = *r.find("v.arr.str")->as_array();
  ASSERT_EQ(strs.size(), 3u);
  EXPECT_EQ(*strs[2].as_string(), "\xe2\x96\x81hello");
  const auto& f64s = *r.find("v.arr.f64")->as_array();
  EXPECT_EQ(*f64s[0].as_float(), 0.1);
  EXPECT_TRUE(std::signbit(*f64s[1].as_float()));
  const auto& i32s = *r.find("v.arr.i32")->as_array();
  EXPECT_EQ(i32s[0].as_int(), INT32_MIN);
  EXPECT_EQ(i32s[1].as_int(), INT32_MAX);
  const auto& nested = *r.find("v.arr.arr.u32")->as_array();
  ASSERT_EQ(nested.size(), 3u);
  EXPECT_EQ(nested[0].elem_type, value_type::u32);
  EXPECT_EQ(nested[1].as_array()->size(), 0u);
  EXPECT_EQ((*nested[2].as_array())[1].as_int(), 3);
  const auto& deep = *r.find("v.arr.arr.arr.str")->as_array();
  ASSERT_EQ(deep.size(), 2u);
  EXPECT_EQ(*(*(*deep[0].as_array())[0].as_array())[0].as_string(), "deep");
  EXPECT_EQ(deep[1].elem_type, value_type::array);

  ASSERT_EQ(r.tensors().size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const tensor_info& t = r.tensors()[i];
    SCOPED_TRACE(cases[i].name);
    EXPECT_EQ(t.name, cases[i].name);
    EXPECT_EQ(t.type, cases[i].type);
    ASSERT_EQ(t.n_dims, cases[i].dims.size());
    for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], d < t.n_dims ? cases[i].dims[d] : 1);
    EXPECT_EQ(t.n_bytes, cases[i].n_bytes);
    EXPECT_EQ(t.offset % 64, 0u);
    EXPECT_EQ(t.data, out->data() + r.data_offset() + t.offset);
    bytes data = pattern(cases[i].n_bytes, uint8_t(i));
    EXPECT_EQ(0, std::memcmp(t.data, data.data(), data.size()));
  }

  // The same file through the filesystem, mapped and read.
  std::string path = glia::test::scratch("gguf_round_trip.gguf");
  ASSERT_TRUE(w.write(path).is_ok());
  EXPECT_TRUE(glia::test::read_file(path) == *out);
  for (bool use_mmap : {true, false}) {
    auto g = file::open(path, use_mmap);
    ASSERT_TRUE(g) << g.message();
    EXPECT_EQ((*g)->tensors().size(), cases.size());
    EXPECT_EQ(0, std::memcmp((*g)->tensors()[3].data, r.tensors()[3].data, 288));
  }
}

TEST(GgufWriter, SetReplacesInPlaceAndRemoveDeletes) {
  writer w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "one");
  w.remove("missing");
  auto out = w.to_bytes();
  ASSERT_TRUE(out);
  auto f = file::from_memory(*out);
  ASSERT_TRUE(f) << f.message();
  ASSERT_EQ((*f)->metadata().size(), 2u);
  EXPECT_EQ((*f)->metadata()[0].first, "a");
  EXPECT_EQ((*f)->get_string("a"), "one");
  w.remove("a");
  out = w.to_bytes();
  f = file::from_memory(*out);
  ASSERT_TRUE(f);
  ASSERT_EQ((*f)->metadata().size(), 1u);
  EXPECT_EQ((*f)->metadata()[0].first, "b");
  EXPECT_EQ((*f)->tensors().size(), 0u);
}

TEST(GgufWriter, AlignmentKeyFollowsTheLayout) {
  writer w;
  w.set_alignment(128);
  bytes data = pattern(4, 1);
  ASSERT_TRUE(w.add_tensor("a", t_f32, {1}, data).is_ok());
  ASSERT_TRUE(w.add_tensor("b", t_f32, {1}, data).is_ok());
  auto f = file::from_memory(*w.to_bytes());
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ((*f)->alignment(), 128u);
  EXPECT_EQ((*f)->find_tensor("b")->offset, 128u);

  w.set_alignment(32);  // the default is not written
  auto g = file::from_memory(*w.to_bytes());
  ASSERT_TRUE(g) << g.message();
  EXPECT_EQ((*g)->find("general.alignment"), nullptr);
  EXPECT_EQ((*g)->find_tensor("b")->offset, 32u);

  w.set_u32("general.alignment", 256);  // setting the key directly also moves the layout
  auto h = file::from_memory(*w.to_bytes());
  ASSERT_TRUE(h) << h.message();
  EXPECT_EQ((*h)->find_tensor("b")->offset, 256u);

  for (uint32_t bad : {0u, 3u, 48u}) {
    writer x;
    x.set_alignment(bad);
    auto r = x.to_bytes();
    ASSERT_FALSE(r);
    EXPECT_TRUE(contains(r.message(), "alignment " + std::to_string(bad))) << r.message();
  }
}

TEST(GgufWriter, RefusesInvalidInput) {
  writer w;
  bytes data = pattern(34, 0);
  auto wrong_size = w.add_tensor("q", t_q8_0, {32}, {data.data(), 33});
  EXPECT_TRUE(contains(wrong_size.message(), "33 bytes")) << wrong_size.message();
  ASSERT_TRUE(w.add_tensor("q", t_q8_0, {32}, data).is_ok());
  auto dup = w.add_tensor("q", t_q8_0, {32}, data);
  EXPECT_TRUE(contains(dup.message(), "already added")) << dup.message();
  auto rows = w.add_tensor("r", t_q8_0, {16}, {data.data(), 17});
  EXPECT_TRUE(contains(rows.message(), "block size 32")) << rows.message();
  auto no_dims = w.add_tensor("z", t_f32, {}, {});
  EXPECT_TRUE(contains(no_dims.message(), "n_dims 0")) << no_dims.message();
  auto five = w.add_tensor("z", t_f32, {1, 1, 1, 1, 1}, pattern(4, 0));
  EXPECT_TRUE(contains(five.message(), "n_dims 5")) << five.message();
  auto unsupported = w.add_tensor("iq", t_iq2_xxs, {256}, pattern(66, 0));
  EXPECT_EQ(unsupported.message(), "tensor iq: type IQ2_XXS is not supported");

  writer v;
  v.set("k.u8", scalar(value_type::u8, uint64_t(300)));
  auto too_big = v.to_bytes();
  ASSERT_FALSE(too_big);
  EXPECT_TRUE(contains(too_big.message(), "key 'k.u8'")) << too_big.message();
  EXPECT_TRUE(contains(too_big.message(), "300")) << too_big.message();

  writer m;
  m.set("k.arr", array_of(value_type::u32, {scalar(value_type::u32, uint64_t(1)), scalar(value_type::string, std::string("x"))}));
  auto mixed = m.to_bytes();
  ASSERT_FALSE(mixed);
  EXPECT_TRUE(contains(mixed.message(), "key 'k.arr' element 1")) << mixed.message();

  writer s;
  s.set("k.s", scalar(value_type::string, uint64_t(5)));
  auto not_string = s.to_bytes();
  ASSERT_FALSE(not_string);
  EXPECT_TRUE(contains(not_string.message(), "string")) << not_string.message();
}

TEST(GgufValue, Accessors) {
  EXPECT_EQ(value_type_name(value_type::boolean), "bool");
  EXPECT_EQ(value_type_name(value_type::f64), "f64");
  value big = scalar(value_type::u64, std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(big.is_integer());
  EXPECT_FALSE(big.as_int().has_value());
  EXPECT_EQ(big.as_float(), 18446744073709551615.0);
  value f = scalar(value_type::f32, 0.25);
  EXPECT_TRUE(f.is_float());
  EXPECT_FALSE(f.as_int().has_value());
  EXPECT_EQ(f.as_float(), 0.25);
  value b = scalar(value_type::boolean, true);
  EXPECT_EQ(b.as_bool(), true);
  EXPECT_FALSE(b.as_int().has_value());
  EXPECT_EQ(b.as_string(), nullptr);
  EXPECT_EQ(b.as_array(), nullptr);
}

}  // namespace
}  // namespace glia::gguf::test
