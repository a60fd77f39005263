// Writer -> reader round trips (in memory and through a file on disk), the writer's layout (padding,
// gapless data section, alignment) checked by reading its header back with plain JSON, files written
// by hand that the reader must accept, and the writer's refusals.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "safetensors_test_util.h"
#include "test_support.h"

namespace glia::safetensors::test {
namespace {

struct sample {
  std::string name;
  dtype type;
  std::vector<int64_t> shape;
  bytes data;
};

// Several widths, added narrowest first so that the writer's reordering shows; a scalar, a tensor
// with a zero dim, a sub-byte one.
std::vector<sample> samples() {
  return {
      {"tok.mask", dtype::boolean, {5}, {1, 0, 0, 1, 1}},
      {"a.f16", dtype::f16, {2, 3}, iota_bytes(12, 10)},
      {"w.f32", dtype::f32, {3, 2}, iota_bytes(24, 40)},
      {"scale", dtype::f64, {}, iota_bytes(8, 90)},
      {"empty.i32", dtype::i32, {4, 0, 2}, {}},
      {"pos.i64", dtype::i64, {2}, iota_bytes(16, 120)},
      {"h.bf16", dtype::bf16, {1, 1, 3}, iota_bytes(6, 150)},
      {"q.f8", dtype::f8_e4m3, {7}, iota_bytes(7, 170)},
      {"packed.f4", dtype::f4, {6}, iota_bytes(3, 200)},
      {"z.c64", dtype::c64, {1}, iota_bytes(8, 210)},
  };
}

writer sample_writer() {
  writer w;
  for (const sample& s : samples()) EXPECT_TRUE(w.add(s.name, s.type, s.shape, s.data).is_ok()) << s.name;
  w.set_metadata("format", "pt");
  w.set_metadata("note", "r\xc3\xa9sum\xc3\xa9 \"quoted\"");
  return w;
}

void expect_samples(const file& f) {
  const auto want = samples();
  ASSERT_EQ(f.tensors().size(), want.size());
  for (const sample& s : want) {
    SCOPED_TRACE(s.name);
    const tensor_info* t = f.find(s.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->name, s.name);
    EXPECT_EQ(t->type, s.type);
    EXPECT_EQ(t->shape, s.shape);
    EXPECT_EQ(t->n_bytes, s.data.size());
    EXPECT_EQ(bytes(t->data, t->data + t->n_bytes), s.data);
  }
  EXPECT_EQ(f.find("scale")->n_elements(), 1);
  EXPECT_EQ(f.find("empty.i32")->n_elements(), 0);
  EXPECT_EQ(f.find("w.f32")->n_elements(), 6);
  EXPECT_EQ(f.find("absent"), nullptr);
  EXPECT_EQ(f.find(""), nullptr);
  const std::map<std::string, std::string, std::less<>> meta{{"format", "pt"},
                                                             {"note", "r\xc3\xa9sum\xc3\xa9 \"quoted\""}};
  EXPECT_EQ(f.metadata(), meta);
}

TEST(SafetensorsRoundTrip, InMemory) {
  auto b = sample_writer().to_bytes();
  ASSERT_TRUE(b.is_ok()) << b.message();
  auto f = file::from_memory(*b);
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_EQ((*f)->size(), b->size());
  expect_samples(**f);
  for (size_t i = 1; i < (*f)->tensors().size(); ++i)
    EXPECT_LE((*f)->tensors()[i - 1].offset, (*f)->tensors()[i].offset) << "tensors() not in file order";
}

TEST(SafetensorsRoundTrip, EmptyWriterGivesAValidFile) {
  auto b = writer().to_bytes();
  ASSERT_TRUE(b.is_ok()) << b.message();
  auto f = file::from_memory(*b);
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_TRUE((*f)->tensors().empty());
  EXPECT_TRUE((*f)->metadata().empty());
}

// The layout the reference reader requires (data_offsets contiguous from 0 and ending at the end of
// the file) and the alignment promised: header padded with spaces to a multiple of 8 bytes, each
// tensor at a multiple of its element size.
TEST(SafetensorsRoundTrip, WriterLayout) {
  auto b = sample_writer().to_bytes();
  ASSERT_TRUE(b.is_ok());
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t((*b)[i]) << (8 * i);
  ASSERT_LE(8 + n, b->size());
  EXPECT_EQ(n % 8, 0u);
  const std::string text(b->begin() + 8, b->begin() + 8 + long(n));
  const size_t close = text.rfind('}');
  ASSERT_NE(close, std::string::npos);
  EXPECT_EQ(text.find_first_not_of(' ', close + 1), std::string::npos) << "padding is not spaces";
  EXPECT_EQ(text.rfind("{\"__metadata__\":", 0), 0u) << "metadata does not come first: " << text;

  const auto header = nlohmann::json::parse(text);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    ranges.emplace_back(e["data_offsets"][0].get<uint64_t>(), e["data_offsets"][1].get<uint64_t>());
    const uint64_t width = std::max<uint64_t>(dtype_size(*parse_dtype(e["dtype"].get<std::string>())), 1);
    const uint64_t align = std::min<uint64_t>(width, 8);
    EXPECT_EQ((8 + n + ranges.back().first) % align, 0u) << name << " misaligned";
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, at) << "gap or overlap in the data section";
    at = end;
  }
  EXPECT_EQ(8 + n + at, b->size());
}

TEST(SafetensorsRoundTrip, OpenFromDisk) {
  const std::string path = glia::test::scratch("safetensors_round_trip.safetensors");
  status s = sample_writer().write(path);
  ASSERT_TRUE(s.is_ok()) << s.message();
  auto f = file::open(path);
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_EQ((*f)->size(), std::filesystem::file_size(path));
  expect_samples(**f);
  std::filesystem::remove(path);
  // The mapping outlives the file's name.
  expect_samples(**f);
}

TEST(SafetensorsRoundTrip, OpenErrorsNameThePath) {
  const std::string missing = glia::test::scratch("safetensors_no_such_file.safetensors");
  auto f = file::open(missing);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.message().rfind(missing + ": cannot open: ", 0), 0u) << f.message();

  const std::string dir = glia::test::scratch("safetensors_a_folder");
  std::filesystem::create_directories(dir);
  f = file::open(dir);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.message(), dir + ": not a regular file");

  const std::string empty = glia::test::scratch("safetensors_empty.safetensors");
  glia::test::write_text(empty, "");
  f = file::open(empty);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.message(), empty + ": file is 0 bytes, shorter than the 8-byte header length");

  const std::string truncated = glia::test::scratch("safetensors_truncated.safetensors");
  auto b = *sample_writer().to_bytes();
  glia::test::write_text(truncated, std::string(b.begin(), b.end() - 1));
  f = file::open(truncated);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.message().rfind(truncated + ": tensor \"", 0), 0u) << f.message();
  EXPECT_NE(f.message().find("end past the data section"), std::string::npos) << f.message();
}

TEST(SafetensorsRoundTrip, WriteErrorsNameThePath) {
  const std::string path = glia::test::scratch("safetensors_no_such_dir/x.safetensors");
  status s = sample_writer().write(path);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind(path + ": cannot create: ", 0), 0u) << s.message();
}

// The reference implementation's own example (its README / docs), byte for byte: I32 [2, 2].
TEST(SafetensorsHandWritten, ReferenceExample) {
  const std::string header = R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
  const bytes b = file_bytes(header, {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xff, 0xff, 0xff, 0xff});
  auto f = file::from_memory(b);
  ASSERT_TRUE(f.is_ok()) << f.message();
  const tensor_info* t = (*f)->find("test");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, dtype::i32);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t->offset, 0u);
  EXPECT_EQ((*f)->data_offset(), 8 + header.size());
  EXPECT_EQ(t->data, b.data() + 8 + header.size());
  int32_t v[4];
  std::memcpy(v, t->data, sizeof v);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[2], 3);
  EXPECT_EQ(v[3], -1);
}

// What the spec allows and other writers produce: whitespace and padding, keys in any order, unknown
// fields in an entry, gaps between tensors and after the last, tensors listed out of file order,
// empty tensors anywhere, an empty __metadata__.
TEST(SafetensorsHandWritten, LenientLayouts) {
  const std::string header = "  {\n \"b\": " + entry("F16", "[2]", 8, 12) +
                             ",\"a\":{\"shape\":[ 1 ],\"extra\":{\"x\":[1,2]},\"data_offsets\":[0,4],\"dtype\":\"F32\"}"
                             ",\"e1\":" + entry("U8", "[0]", 12, 12) + ",\"e2\":" + entry("U8", "[3,0]", 2, 2) +
                             ",\"__metadata__\":{}}     ";
  const bytes b = file_bytes(header, iota_bytes(20));
  auto f = file::from_memory(b);
  ASSERT_TRUE(f.is_ok()) << f.message();
  const auto& ts = (*f)->tensors();
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts[0].name, "a");
  EXPECT_EQ(ts[1].name, "e2");
  EXPECT_EQ(ts[2].name, "b");
  EXPECT_EQ(ts[3].name, "e1");
  EXPECT_EQ(ts[2].data[0], 9);  // iota from 1: byte 8 of the data section
  EXPECT_EQ(ts[2].n_bytes, 4u);
  EXPECT_TRUE((*f)->metadata().empty());
}

TEST(SafetensorsWriter, Refusals) {
  writer w;
  const bytes four(4, 0);
  EXPECT_TRUE(w.add("x", dtype::f32, {1}, four).is_ok());
  EXPECT_EQ(w.add("x", dtype::u8, {4}, four).message(), "tensor \"x\" added twice");
  EXPECT_EQ(w.add("y", dtype::f32, {2}, four).message(),
            "tensor \"y\": 4 bytes of data, but shape [2] of F32 is 8 bytes");
  EXPECT_EQ(w.add("y", dtype::f32, {-1}, four).message(), "tensor \"y\": shape [-1]: dim 0 is negative");
  EXPECT_EQ(w.add("__metadata__", dtype::u8, {4}, four).message(),
            "tensor name \"__metadata__\" is the header's metadata key");
  EXPECT_FALSE(w.add("bad\xff", dtype::u8, {4}, four).is_ok());
  EXPECT_FALSE(w.add("overlong\xc0\xaf", dtype::u8, {4}, four).is_ok());
  EXPECT_FALSE(w.add("surrogate\xed\xa0\x80", dtype::u8, {4}, four).is_ok());
  EXPECT_FALSE(w.add("cut\xe2\x82", dtype::u8, {4}, four).is_ok());
  EXPECT_TRUE(w.add("ok \xe2\x82\xac \xf0\x9f\x98\x80", dtype::u8, {4}, four).is_ok());
  // A refused tensor left nothing behind.
  auto f = file::from_memory(*w.to_bytes());
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_EQ((*f)->tensors().size(), 2u);

  w.set_metadata("k", "bad\xfe");
  auto b = w.to_bytes();
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.message(), "metadata \"k\" is not UTF-8");
  w.set_metadata("k", "fine");  // replaces the bad value
  EXPECT_TRUE(w.to_bytes().is_ok());
}

}  // namespace
}  // namespace glia::safetensors::test
