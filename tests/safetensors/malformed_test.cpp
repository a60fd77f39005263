// Malformed files: each case is assembled by hand (header text written here, its length prepended)
// with one defect, and the reader must refuse it with the one-line message that names the defect and
// the tensor or key. Every prefix of a valid file, every header length and every single-byte
// change of the file must parse or fail cleanly, and what parses must keep the reader's promises.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

#include "safetensors_test_util.h"
#include "test_support.h"

namespace glia::safetensors::test {
namespace {

// A header with one tensor "w" whose entry is `w_entry`; data is 8 bytes (an F32 [2]).
bytes one_tensor(const std::string& w_entry, const bytes& data = bytes(8, 0)) {
  return file_bytes("{\"w\":" + w_entry + "}", data);
}

bytes with_length(bytes b, uint64_t n) {
  for (int i = 0; i < 8; ++i) b.at(size_t(i)) = uint8_t(n >> (8 * i));
  return b;
}

struct bad_case {
  const char* label;
  bytes file;
  std::string message;
};

void check(const std::vector<bad_case>& cases) {
  for (const bad_case& c : cases) {
    SCOPED_TRACE(c.label);
    EXPECT_EQ(error_of(c.file), c.message);
  }
}

TEST(SafetensorsMalformed, TheValidBaseParses) {
  const bytes b = one_tensor(entry("F32", "[2]", 0, 8));
  auto f = file::from_memory(b);
  ASSERT_TRUE(f.is_ok()) << f.message();
  ASSERT_EQ((*f)->tensors().size(), 1u);
}

TEST(SafetensorsMalformed, ShorterThanTheLength) {
  for (size_t n = 0; n < 8; ++n)
    EXPECT_EQ(error_of(bytes(n, 0)), "file is " + std::to_string(n) + " bytes, shorter than the 8-byte header length");
}

TEST(SafetensorsMalformed, HeaderLength) {
  const bytes b = file_bytes("{}");
  check({
      {"past the file", with_length(b, 3), "header length 3 exceeds the 2 bytes after it"},
      {"no header at all", with_length(bytes(8, 0), 1), "header length 1 exceeds the 0 bytes after it"},
      {"over the cap", with_length(b, 100'000'001), "header length 100000001 is over the 100000000-byte cap"},
      {"u64 max", with_length(b, std::numeric_limits<uint64_t>::max()),
       "header length 18446744073709551615 is over the 100000000-byte cap"},
  });
}

TEST(SafetensorsMalformed, HeaderText) {
  std::string deep = "{\"w\":{\"x\":";
  for (int i = 0; i < 20; ++i) deep += "[";
  for (int i = 0; i < 20; ++i) deep += "]";
  deep += "}}";
  check({
      {"empty", file_bytes(""), "header (0 bytes) is not valid JSON"},
      {"unterminated", file_bytes("{"), "header (1 bytes) is not valid JSON"},
      {"trailing comma", file_bytes("{\"w\":1,}"), "header (8 bytes) is not valid JSON"},
      {"trailing text", file_bytes("{} x"), "header (4 bytes) is not valid JSON"},
      {"NUL padding", file_bytes(std::string("{}\0\0", 4)),
       "header has a NUL byte at offset 2 (JSON text cannot hold one)"},
      {"text after a NUL", file_bytes(std::string("{}\0{\"x\":", 8)),
       "header has a NUL byte at offset 2 (JSON text cannot hold one)"},
      {"not UTF-8", file_bytes("{\"w\xff\":1}"), "header (8 bytes) is not valid JSON"},
      {"array", file_bytes("[]"), "header is an array, not an object"},
      {"string", file_bytes("\"w\""), "header is a string, not an object"},
      {"number", file_bytes("42"), "header is a number, not an object"},
      {"null", file_bytes("null"), "header is a null, not an object"},
      {"deep", file_bytes(deep), "header nests 22 deep, over the limit of 16"},
      {"a name twice",
       file_bytes("{\"w\":" + entry("U8", "[1]", 0, 1) + ",\"w\":" + entry("U8", "[1]", 1, 2) + "}", bytes(2)),
       "header names \"w\" twice"},
      {"metadata twice", file_bytes("{\"__metadata__\":{},\"__metadata__\":{}}"),
       "header names \"__metadata__\" twice"},
  });
}

// The duplicate-name check is linear in the tensor count: it rescanned the header object after each
// entry (40k empty tensors took 13 s; a 100 MB header would have taken hours).
TEST(SafetensorsMalformed, ManyTensorsParseFast) {
  std::string header = "{";
  for (int i = 0; i < 40000; ++i) header += fmt::format("\"t{}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}},", i);
  const double t0 = ::glia::test::thread_cpu_seconds();
  auto many = file::from_memory(file_bytes(header + "\"last\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", {}));
  ASSERT_TRUE(many.is_ok()) << many.message();
  EXPECT_EQ(error_of(file_bytes(header + "\"t7\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", {})),
            "header names \"t7\" twice");
  EXPECT_LT(::glia::test::thread_cpu_seconds() - t0, 10.0);  // ~0.3 s here; 13 s before, without sanitizers
}

TEST(SafetensorsMalformed, EntryTypes) {
  check({
      {"number", one_tensor("3"), "tensor \"w\": entry is a number, not an object"},
      {"array", one_tensor("[\"F32\", [2], [0, 8]]"), "tensor \"w\": entry is an array, not an object"},
      {"no dtype", one_tensor(R"({"shape":[2],"data_offsets":[0,8]})"), "tensor \"w\": no \"dtype\""},
      {"dtype number", one_tensor(R"({"dtype":32,"shape":[2],"data_offsets":[0,8]})"),
       "tensor \"w\": \"dtype\" is a number, not a string"},
      {"unknown dtype", one_tensor(entry("F12", "[2]", 0, 8)), "tensor \"w\": unknown dtype \"F12\""},
      {"lowercase dtype", one_tensor(entry("f32", "[2]", 0, 8)), "tensor \"w\": unknown dtype \"f32\""},
      {"no shape", one_tensor(R"({"dtype":"F32","data_offsets":[0,8]})"), "tensor \"w\": no \"shape\""},
      {"shape string", one_tensor(entry("F32", "\"2\"", 0, 8)),
       "tensor \"w\": \"shape\" is a string, not an array of integers"},
      {"shape object", one_tensor(entry("F32", "{}", 0, 8)),
       "tensor \"w\": \"shape\" is an object, not an array of integers"},
      {"no data_offsets", one_tensor(R"({"dtype":"F32","shape":[2]})"), "tensor \"w\": no \"data_offsets\""},
  });
}

TEST(SafetensorsMalformed, Shapes) {
  check({
      {"fraction", one_tensor(entry("F32", "[1.5]", 0, 8)), "tensor \"w\": shape[0] is a number, not an integer"},
      {"float two", one_tensor(entry("F32", "[2.0]", 0, 8)), "tensor \"w\": shape[0] is a number, not an integer"},
      {"string dim", one_tensor(entry("F32", "[\"2\"]", 0, 8)), "tensor \"w\": shape[0] is a string, not an integer"},
      {"bool dim", one_tensor(entry("F32", "[1, true]", 0, 8)), "tensor \"w\": shape[1] is a boolean, not an integer"},
      {"nested", one_tensor(entry("F32", "[[2]]", 0, 8)), "tensor \"w\": shape[0] is an array, not an integer"},
      {"negative", one_tensor(entry("F32", "[2, -3]", 0, 8)), "tensor \"w\": shape[1] is -3, negative"},
      {"past i64", one_tensor(entry("F32", "[18446744073709551615]", 0, 8)),
       "tensor \"w\": shape[0] is 18446744073709551615, over 2^63 - 1"},
      {"past u64", one_tensor(entry("F32", "[18446744073709551616]", 0, 8)),
       "tensor \"w\": shape[0] is a number, not an integer"},
      {"element overflow", one_tensor(entry("F32", "[4294967296, 4294967296]", 0, 8)),
       "tensor \"w\": shape [4294967296, 4294967296] has more than 2^63 - 1 elements"},
      {"overflow despite a zero", one_tensor(entry("F32", "[4294967296, 0, 4294967296]", 0, 0)),
       "tensor \"w\": shape [4294967296, 0, 4294967296] has more than 2^63 - 1 elements"},
      {"bit overflow", one_tensor(entry("F64", "[4611686018427387904]", 0, 8)),
       "tensor \"w\": shape [4611686018427387904] of F64 has more than 2^64 - 1 bits"},
      {"half a byte", one_tensor(entry("F4", "[3]", 0, 2), bytes(2)),
       "tensor \"w\": shape [3] of F4 is 12 bits, not a whole number of bytes"},
  });
}

TEST(SafetensorsMalformed, DataOffsets) {
  const auto offsets = [](const std::string& o) {
    return one_tensor("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + o + "}");
  };
  check({
      {"string", offsets("\"0,8\""), "tensor \"w\": \"data_offsets\" is \"0,8\", not 2 non-negative integers"},
      {"one", offsets("[8]"), "tensor \"w\": \"data_offsets\" is [8], not 2 non-negative integers"},
      {"three", offsets("[0,8,8]"), "tensor \"w\": \"data_offsets\" is [0,8,8], not 2 non-negative integers"},
      {"empty", offsets("[]"), "tensor \"w\": \"data_offsets\" is [], not 2 non-negative integers"},
      {"negative", offsets("[-1,7]"), "tensor \"w\": \"data_offsets\" is [-1,7], not 2 non-negative integers"},
      {"float", offsets("[0,8.0]"), "tensor \"w\": \"data_offsets\" is [0,8.0], not 2 non-negative integers"},
      {"null", offsets("[0,null]"), "tensor \"w\": \"data_offsets\" is [0,null], not 2 non-negative integers"},
      {"long value cut short", offsets("[\"" + std::string(100, 'x') + "\"]"),
       "tensor \"w\": \"data_offsets\" is [\"" + std::string(38, 'x') + "..., not 2 non-negative integers"},
      {"begin after end", offsets("[8,0]"), "tensor \"w\": data_offsets [8, 0] begin after end"},
      {"end past data", offsets("[0,16]"), "tensor \"w\": data_offsets [0, 16] end past the data section's 8 bytes"},
      {"huge", offsets("[18446744073709551615,18446744073709551615]"),
       "tensor \"w\": data_offsets [18446744073709551615, 18446744073709551615] end past the data section's 8 bytes"},
      {"too short a span", offsets("[0,4]"),
       "tensor \"w\": data_offsets [0, 4] span 4 bytes, but shape [2] of F32 is 8 bytes"},
      {"too long a span", one_tensor(entry("F32", "[1]", 0, 8)),
       "tensor \"w\": data_offsets [0, 8] span 8 bytes, but shape [1] of F32 is 4 bytes"},
      {"scalar", one_tensor(entry("F32", "[]", 0, 8)),
       "tensor \"w\": data_offsets [0, 8] span 8 bytes, but shape [] of F32 is 4 bytes"},
  });
  // "-0" is a signed zero to nlohmann, but still a valid offset.
  EXPECT_TRUE(file::from_memory(offsets("[-0,8]")).is_ok());
}

TEST(SafetensorsMalformed, Overlaps) {
  const auto two = [](uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
    const std::string a = entry("U8", fmt::format("[{}]", a1 - a0), a0, a1);
    const std::string b = entry("U8", fmt::format("[{}]", b1 - b0), b0, b1);
    return file_bytes(fmt::format("{{\"a\":{},\"b\":{}}}", a, b), bytes(16));
  };
  check({
      {"partial", two(0, 8, 4, 12), "tensors \"a\" [0, 8) and \"b\" [4, 12) overlap"},
      {"partial, listed the other way", two(4, 12, 0, 8), "tensors \"b\" [0, 8) and \"a\" [4, 12) overlap"},
      {"same range", two(2, 6, 2, 6), "tensors \"a\" [2, 6) and \"b\" [2, 6) overlap"},
      {"inside", two(0, 16, 4, 8), "tensors \"a\" [0, 16) and \"b\" [4, 8) overlap"},
      {"by one byte", two(0, 5, 4, 9), "tensors \"a\" [0, 5) and \"b\" [4, 9) overlap"},
  });
  // A later tensor overlapping an earlier, longer one, with a short one in between.
  const std::string three = "{\"a\":" + entry("U8", "[10]", 0, 10) + ",\"b\":" + entry("U8", "[2]", 2, 4) + "}";
  EXPECT_EQ(error_of(file_bytes(three, bytes(16))), "tensors \"a\" [0, 10) and \"b\" [2, 4) overlap");
  const std::string long_reach = "{\"a\":" + entry("U8", "[10]", 0, 10) + ",\"b\":" + entry("U8", "[0]", 3, 3) +
                                 ",\"c\":" + entry("U8", "[4]", 5, 9) + "}";
  EXPECT_EQ(error_of(file_bytes(long_reach, bytes(16))), "tensors \"a\" [0, 10) and \"c\" [5, 9) overlap");
  // Touching is not overlapping.
  EXPECT_TRUE(file::from_memory(two(0, 8, 8, 16)).is_ok());
}

TEST(SafetensorsMalformed, Metadata) {
  check({
      {"array", file_bytes("{\"__metadata__\":[]}"), "__metadata__ is an array, not an object of strings"},
      {"string", file_bytes("{\"__metadata__\":\"pt\"}"), "__metadata__ is a string, not an object of strings"},
      {"number value", file_bytes("{\"__metadata__\":{\"a\":\"x\",\"n\":1}}"),
       "__metadata__ \"n\" is a number, not a string"},
      {"null value", file_bytes("{\"__metadata__\":{\"n\":null}}"), "__metadata__ \"n\" is a null, not a string"},
      {"object value", file_bytes("{\"__metadata__\":{\"n\":{}}}"), "__metadata__ \"n\" is an object, not a string"},
  });
}

TEST(SafetensorsMalformed, ControlBytesInNamesStayOnOneLine) {
  const std::string msg = error_of(file_bytes("{\"bad\\nname\":3}"));
  EXPECT_EQ(msg, "tensor \"bad\\x0aname\": entry is a number, not an object");
}

// A small valid file whose data section ends exactly at its last tensor, so that every prefix is
// invalid.
bytes small_valid_file() {
  writer w;
  EXPECT_TRUE(w.add("a", dtype::f32, {2}, iota_bytes(8)).is_ok());
  EXPECT_TRUE(w.add("b", dtype::u8, {3}, iota_bytes(3)).is_ok());
  EXPECT_TRUE(w.add("s", dtype::f16, {}, iota_bytes(2)).is_ok());
  w.set_metadata("k", "v");
  return *w.to_bytes();
}

TEST(SafetensorsMalformed, EveryPrefixIsRefused) {
  const bytes b = small_valid_file();
  ASSERT_TRUE(file::from_memory(b).is_ok());
  for (size_t n = 0; n < b.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(error_of(bytes(b.begin(), b.begin() + long(n))).empty());
  }
}

// What a parse that succeeds promises: every tensor inside the data section, of the size its type and
// shape give, in offset order, none overlapping another, each found by name.
void expect_promises_kept(const file& f, const bytes& b) {
  const uint64_t data_bytes = b.size() - f.data_offset();
  uint64_t reach = 0;
  for (const tensor_info& t : f.tensors()) {
    ASSERT_LE(t.offset, data_bytes);
    ASSERT_LE(t.n_bytes, data_bytes - t.offset);
    ASSERT_EQ(t.data, b.data() + f.data_offset() + t.offset);
    auto want = tensor_bytes(t.type, t.shape);
    ASSERT_TRUE(want.is_ok());
    ASSERT_EQ(t.n_bytes, *want);
    if (t.n_bytes > 0) {
      ASSERT_GE(t.offset, reach);
      reach = t.offset + t.n_bytes;
    }
    ASSERT_EQ(f.find(t.name), &t);
  }
}

TEST(SafetensorsMalformed, EveryHeaderLengthParsesOrFails) {
  const bytes b = small_valid_file();
  for (uint64_t n = 0; n <= b.size(); ++n) {
    const bytes m = with_length(b, n);
    auto f = file::from_memory(m);
    if (f.is_ok()) expect_promises_kept(**f, m);
  }
}

TEST(SafetensorsMalformed, EverySingleByteChangeParsesOrFails) {
  const bytes b = small_valid_file();
  size_t parsed = 0, refused = 0;
  for (size_t at = 0; at < b.size(); ++at) {
    for (int v = 0; v < 256; ++v) {
      if (uint8_t(v) == b[at]) continue;
      bytes m = b;
      m[at] = uint8_t(v);
      auto f = file::from_memory(m);
      if (f.is_ok()) {
        ++parsed;
        expect_promises_kept(**f, m);
        if (testing::Test::HasFatalFailure()) return;
      } else {
        ++refused;
        ASSERT_EQ(f.message().find('\n'), std::string::npos);
      }
    }
  }
  // Both outcomes occur (a digit of an offset in the data bytes changes nothing; most header bytes break it).
  EXPECT_GT(parsed, 0u);
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace glia::safetensors::test
