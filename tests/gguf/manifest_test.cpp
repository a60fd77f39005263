// Every model of the test-data pack, opened by our reader, must agree with models/MANIFEST.json (an
// independent listing: version, size, every metadata key, every tensor's type and dims), and its
// tensors must tile the data section exactly as llama.cpp lays files out.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "gguf_test_util.h"
#include "quant/types.h"
#include "test_support.h"

namespace glia::gguf::test {
namespace {

using json = nlohmann::ordered_json;

json load_manifest() {
  std::ifstream in(glia::test::testdata("models/MANIFEST.json"));
  return json::parse(in);
}

// Compares one of our values with the manifest's JSON rendering of it. Long arrays (token lists)
// are summarized there as "<array of N>".
void expect_matches(const value& v, const json& j, const std::string& path) {
  if (v.type == value_type::array && j.is_string()) {
    EXPECT_EQ(j.get<std::string>(), "<array of " + std::to_string(v.as_array()->size()) + ">") << path;
    return;
  }
  if (j.is_boolean()) {
    ASSERT_TRUE(v.as_bool().has_value()) << path << " should be a bool, is " << value_type_name(v.type);
    EXPECT_EQ(*v.as_bool(), j.get<bool>()) << path;
  } else if (j.is_number_integer()) {
    ASSERT_TRUE(v.is_integer()) << path << " should be an integer, is " << value_type_name(v.type);
    if (const auto* u = std::get_if<uint64_t>(&v.data)) {
      ASSERT_TRUE(j.is_number_unsigned()) << path << ": unsigned in the file, negative in the manifest";
      EXPECT_EQ(*u, j.get<uint64_t>()) << path;
    } else {
      EXPECT_EQ(std::get<int64_t>(v.data), j.get<int64_t>()) << path;
    }
  } else if (j.is_number_float()) {
    ASSERT_TRUE(v.is_float()) << path << " should be a float, is " << value_type_name(v.type);
    EXPECT_EQ(*v.as_float(), j.get<double>()) << path;
  } else if (j.is_string()) {
    ASSERT_NE(v.as_string(), nullptr) << path << " should be a string, is " << value_type_name(v.type);
    EXPECT_EQ(*v.as_string(), j.get<std::string>()) << path;
  } else if (j.is_array()) {
    ASSERT_NE(v.as_array(), nullptr) << path << " should be an array, is " << value_type_name(v.type);
    const auto& elems = *v.as_array();
    ASSERT_EQ(elems.size(), j.size()) << path;
    for (size_t i = 0; i < elems.size(); ++i) expect_matches(elems[i], j[i], path + "[" + std::to_string(i) + "]");
  } else {
    ADD_FAILURE() << path << ": unexpected manifest value " << j.dump();
  }
}

void check_against_manifest(const file& f, const json& entry) {
  EXPECT_EQ(f.version(), entry["gguf_version"].get<uint32_t>());
  EXPECT_EQ(f.size(), entry["bytes"].get<uint64_t>());
  EXPECT_EQ(f.get_string("general.architecture"), entry["architecture"].get<std::string>());

  // Metadata: same keys in the same order, same values.
  const json& meta = entry["metadata"];
  ASSERT_EQ(f.metadata().size(), meta.size());
  size_t i = 0;
  for (const auto& [key, j] : meta.items()) {
    const auto& [our_key, our_value] = f.metadata()[i++];
    EXPECT_EQ(our_key, key);
    const value* v = f.find(key);
    ASSERT_NE(v, nullptr) << key;
    expect_matches(*v, j, key);
  }

  // Tensors: same names in the same order, same types and dims.
  const json& tensors = entry["tensors"];
  ASSERT_EQ(f.tensors().size(), tensors.size());
  std::map<std::string, int> type_counts;
  i = 0;
  for (const auto& [name, j] : tensors.items()) {
    const tensor_info& t = f.tensors()[i++];
    EXPECT_EQ(t.name, name);
    ASSERT_EQ(f.find_tensor(name), &t) << name;
    EXPECT_EQ(glia::type_name(t.type), j["type"].get<std::string>()) << name;
    const json& dims = j["dims"];
    ASSERT_EQ(t.n_dims, dims.size()) << name;
    for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], d < t.n_dims ? dims[d].get<int64_t>() : 1) << name << " ne" << d;
    ++type_counts[j["type"].get<std::string>()];
  }
  std::map<std::string, int> expected_counts;
  for (const auto& [type, n] : entry["tensor_type_counts"].items()) expected_counts[type] = n.get<int>();
  EXPECT_EQ(type_counts, expected_counts);

  // llama.cpp writes tensors back to back, each padded to the alignment, and ends the file with
  // the last one's padding: so each size we computed from the type table must fill exactly the
  // gap up to the next offset.
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % f.alignment(), 0u);
  std::vector<const tensor_info*> by_offset;
  for (const auto& t : f.tensors()) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  uint64_t expected_offset = 0;
  for (const tensor_info* t : by_offset) {
    EXPECT_EQ(t->offset, expected_offset) << t->name;
    expected_offset = (t->offset + t->n_bytes + f.alignment() - 1) / f.alignment() * f.alignment();
  }
  EXPECT_EQ(f.data_offset() + expected_offset, f.size());
}

TEST(GgufManifest, EveryModelAgreesWithTheManifest) {
  json manifest = load_manifest();
  ASSERT_EQ(manifest.size(), 25u);
  for (const json& entry : manifest) {
    std::string rel = entry["file"].get<std::string>();
    SCOPED_TRACE(rel);
    auto f = file::open(glia::test::testdata(rel));
    ASSERT_TRUE(f) << f.message();
    check_against_manifest(**f, entry);
  }
}

// Reading into memory must give the same index as mapping, and every tensor's data pointer must lie
// inside the file at data_offset + offset.
TEST(GgufManifest, ReadAndMapAgree) {
  for (std::string rel : {"models/stories260K.gguf", "models/llama-hd128-Q5_K_M.gguf", "models/gemma4-F16.gguf"}) {
    SCOPED_TRACE(rel);
    auto mapped = file::open(glia::test::testdata(rel), true);
    auto read = file::open(glia::test::testdata(rel), false);
    ASSERT_TRUE(mapped) << mapped.message();
    ASSERT_TRUE(read) << read.message();
    std::vector<uint8_t> raw = glia::test::read_file(glia::test::testdata(rel));
    ASSERT_EQ((*read)->size(), raw.size());
    ASSERT_EQ((*mapped)->tensors().size(), (*read)->tensors().size());
    ASSERT_EQ((*mapped)->metadata().size(), (*read)->metadata().size());
    for (size_t i = 0; i < (*mapped)->metadata().size(); ++i)
      expect_same_value((*mapped)->metadata()[i].second, (*read)->metadata()[i].second, (*read)->metadata()[i].first);
    for (size_t i = 0; i < (*read)->tensors().size(); ++i) {
      const tensor_info& a = (*mapped)->tensors()[i];
      const tensor_info& b = (*read)->tensors()[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.offset, b.offset);
      ASSERT_EQ(a.n_bytes, b.n_bytes);
      uint64_t at = (*read)->data_offset() + b.offset;
      ASSERT_LE(at + b.n_bytes, raw.size());
      EXPECT_EQ(0, std::memcmp(a.data, raw.data() + at, a.n_bytes)) << a.name;
      EXPECT_EQ(0, std::memcmp(b.data, raw.data() + at, b.n_bytes)) << b.name;
    }
  }
}

// Pages released after a repack come back with the same bytes when read again; ranges outside
// the mapping, empty ones and files read into memory are left alone.
TEST(GgufManifest, ReleasedPagesReadBackTheSameBytes) {
  const std::string path = glia::test::testdata("models/llama-hd128-Q5_K_M.gguf");
  const std::vector<uint8_t> raw = glia::test::read_file(path);
  auto mapped = file::open(path, true);
  auto read = file::open(path, false);
  ASSERT_TRUE(mapped && read);
  for (const auto& f : {*mapped, *read}) {
    for (const tensor_info& t : f->tensors()) f->release_pages(t.data, t.n_bytes);
    f->release_pages(raw.data(), raw.size());  // not this file's memory
    f->release_pages(f->tensors()[0].data, 0);
    for (const tensor_info& t : f->tensors())
      EXPECT_EQ(0, std::memcmp(t.data, raw.data() + f->data_offset() + t.offset, t.n_bytes)) << t.name;
  }
}

// Mapping a range ahead (the embedding table) changes no byte, also after a release; ranges outside
// the mapping, empty ones and files read into memory are refused. (Whether the kernel maps pages
// ahead, Linux 5.14+, is the host's: the mapped file's answers only have to agree.)
TEST(GgufManifest, PagesMappedAheadReadTheSameBytes) {
  const std::string path = glia::test::testdata("models/llama-hd128-Q5_K_M.gguf");
  const std::vector<uint8_t> raw = glia::test::read_file(path);
  auto mapped = file::open(path, true);
  auto read = file::open(path, false);
  ASSERT_TRUE(mapped && read);
  const auto& m = *mapped;
  const bool kernel_maps = m->map_pages_now(m->tensors()[0].data, m->tensors()[0].n_bytes);
  for (const tensor_info& t : m->tensors()) {
    m->release_pages(t.data, t.n_bytes);
    EXPECT_EQ(kernel_maps, m->map_pages_now(t.data, t.n_bytes)) << t.name;
    EXPECT_EQ(0, std::memcmp(t.data, raw.data() + m->data_offset() + t.offset, t.n_bytes)) << t.name;
  }
  EXPECT_FALSE(m->map_pages_now(raw.data(), raw.size()));  // not this file's memory
  EXPECT_FALSE(m->map_pages_now(m->tensors()[0].data, 0));
  for (const tensor_info& t : (*read)->tensors()) EXPECT_FALSE((*read)->map_pages_now(t.data, t.n_bytes)) << t.name;
}

// Copying a llama.cpp-written file through our writer (keys, then tensors) must reproduce it byte
// for byte: llama.cpp is the oracle for the serialized layout.
TEST(GgufManifest, WriterReproducesLlamaCppFilesByteForByte) {
  for (std::string rel : {"models/stories260K.gguf", "models/llama-h160-Q4_1.gguf", "models/gemma4-F16.gguf",
                          "models/llama-hd128-IQ4_XS.gguf", "models/brown-q8_0.gguf"}) {
    SCOPED_TRACE(rel);
    auto f = file::open(glia::test::testdata(rel));
    ASSERT_TRUE(f) << f.message();
    writer w;
    w.copy_metadata(**f);
    ASSERT_TRUE(w.copy_tensors(**f).is_ok());
    auto out = w.to_bytes();
    ASSERT_TRUE(out) << out.message();
    std::vector<uint8_t> raw = glia::test::read_file(glia::test::testdata(rel));
    ASSERT_EQ(out->size(), raw.size());
    EXPECT_TRUE(*out == raw);
  }
}

}  // namespace
}  // namespace glia::gguf::test
