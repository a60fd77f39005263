// Malformed files: each case forges one defect (with the writer or by patching the bytes of a valid
// small file) and checks that the reader refuses it with a one-line message naming the field.
// Every prefix of the valid file, and every single-byte mutation of it, must parse or fail cleanly.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "gguf/gguf.h"
#include "gguf_test_util.h"
#include "test_support.h"

namespace glia::gguf::test {
namespace {

value u16v(uint64_t x) {
  value v;
  v.type = value_type::u16;
  v.data = x;
  return v;
}

writer base_writer() {
  writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("test.count", 7);
  w.set_bool("test.flag", true);
  w.set_string_array("test.strings", {"x", "yz"});
  w.set("test.nested", array_of(value_type::array, {array_of(value_type::u16, {u16v(1), u16v(2)})}));
  w.set_u32("test.k1", 1);
  w.set_u32("test.k2", 2);
  bytes a(64, 1), b(68, 2), c(32, 3);
  // w.a at 0 (64 B), w.b at 64 (68 B), w.c at 160 (32 B): the file ends exactly at w.c's end, so
  // that every shorter prefix is invalid.
  EXPECT_TRUE(w.add_tensor("w.a", t_f32, {8, 2}, a).is_ok());
  EXPECT_TRUE(w.add_tensor("w.b", t_q8_0, {32, 2}, b).is_ok());
  EXPECT_TRUE(w.add_tensor("w.c", t_f32, {8}, c).is_ok());
  return w;
}

bytes base_file() { return *base_writer().to_bytes(); }

bytes with_key(std::function<void(writer&)> edit) {
  writer w = base_writer();
  edit(w);
  return *w.to_bytes();
}

bytes patched(std::function<void(bytes&)> edit) {
  bytes b = base_file();
  edit(b);
  return b;
}

// Parses `b` from an exactly sized heap copy, so that an over-read is caught by AddressSanitizer.
// Only the error (or the counts) may be looked at afterwards: the copy dies on return.
result<std::shared_ptr<file>> parse(const bytes& b, const read_limits& limits = {}) {
  auto copy = std::make_unique<uint8_t[]>(b.size());
  std::copy(b.begin(), b.end(), copy.get());
  return file::from_memory({copy.get(), b.size()}, limits);
}

struct malformed_case {
  std::string name;
  std::function<bytes()> make;
  std::string phrase;  // must appear in the message
  read_limits limits = {};
};

uint64_t data_offset_of_base() { return (*file::from_memory(base_file()))->data_offset(); }

std::vector<malformed_case> cases() {
  const uint64_t big = uint64_t(1) << 40;
  auto tensor = [](bytes& b, std::string_view name, uint32_t n_dims) { return locate_tensor(b, name, n_dims); };
  return {
      {"empty file", [] { return bytes{}; }, "file is empty"},
      {"short file", [] { auto b = base_file(); b.resize(10); return b; }, "too short for a GGUF header"},
      {"three bytes", [] { auto b = base_file(); b.resize(3); return b; }, "too short for a GGUF header"},
      {"wrong magic", [] { return patched([](bytes& b) { b[3] = 'G'; }); }, "magic"},
      {"GGUF v1", [] { return patched([](bytes& b) { put_u32(b, 4, 1); }); }, "GGUF version 1 is not supported"},
      {"version 4", [] { return patched([](bytes& b) { put_u32(b, 4, 4); }); }, "GGUF version 4 is not supported"},
      {"big-endian", [] { return patched([](bytes& b) { b[4] = 0; b[7] = 3; }); }, "big-endian"},
      {"huge tensor count", [=] { return patched([=](bytes& b) { put_u64(b, 8, big); }); },
       "tensor count 1099511627776 exceeds the limit"},
      {"tensor count beyond the bytes", [] { return patched([](bytes& b) { put_u64(b, 8, 100000); }); },
       "tensor count 100000 needs"},
      {"huge kv count", [=] { return patched([=](bytes& b) { put_u64(b, 16, big); }); },
       "metadata kv count 1099511627776 exceeds the limit"},
      {"kv count beyond the bytes", [] { return patched([](bytes& b) { put_u64(b, 16, 100000); }); },
       "metadata kv count 100000 needs"},
      {"huge string length",
       [=] { return patched([=](bytes& b) { put_u64(b, after_string(b, "general.architecture") + 4, big); }); },
       "key 'general.architecture': string length 1099511627776 exceeds the limit"},
      {"string length beyond the file",
       [] { return patched([](bytes& b) { put_u64(b, after_string(b, "general.architecture") + 4, 1 << 20); }); },
       "key 'general.architecture': string length 1048576"},
      {"huge key length",
       [=] { return patched([=](bytes& b) { put_u64(b, after_string(b, "test.count") - 18, big); }); },
       "metadata entry 1 key: string length 1099511627776"},
      {"huge array length",
       [=] { return patched([=](bytes& b) { put_u64(b, after_string(b, "test.strings") + 8, big); }); },
       "key 'test.strings': array length 1099511627776 exceeds the limit"},
      {"array length beyond the bytes",
       [] { return patched([](bytes& b) { put_u64(b, after_string(b, "test.strings") + 8, 1 << 25); }); },
       "key 'test.strings': array length 33554432"},
      // With the limits lifted, the bytes left still bound every count before anything is reserved.
      {"huge array length, no limit",
       [=] { return patched([=](bytes& b) { put_u64(b, after_string(b, "test.strings") + 8, big); }); },
       "key 'test.strings': array length 1099511627776 (string elements of at least 8 bytes) exceeds the",
       {.max_array_elems = UINT64_MAX}},
      {"huge string length, no limit",
       [=] { return patched([=](bytes& b) { put_u64(b, after_string(b, "general.architecture") + 4, big); }); },
       "key 'general.architecture': string length 1099511627776 at offset 56 exceeds the",
       {.max_string_bytes = UINT64_MAX}},
      {"huge tensor count, no limit", [=] { return patched([=](bytes& b) { put_u64(b, 8, big); }); },
       "tensor count 1099511627776 needs", {.max_tensors = UINT64_MAX}},
      {"huge kv count, no limit", [=] { return patched([=](bytes& b) { put_u64(b, 16, big); }); },
       "metadata kv count 1099511627776 needs", {.max_kv = UINT64_MAX}},
      {"unknown value type", [] { return patched([](bytes& b) { put_u32(b, after_string(b, "test.count"), 99); }); },
       "key 'test.count': unknown value type 99"},
      {"unknown array element type",
       [] { return patched([](bytes& b) { put_u32(b, after_string(b, "test.strings") + 4, 13); }); },
       "key 'test.strings': unknown array element type 13"},
      {"bool neither 0 nor 1", [] { return patched([](bytes& b) { b[after_string(b, "test.flag") + 4] = 2; }); },
       "key 'test.flag': bool value 2"},
      {"duplicate key", [] { return patched([](bytes& b) { b[after_string(b, "test.k2") - 1] = '1'; }); },
       "duplicate metadata key 'test.k1'"},
      {"duplicate tensor name", [] { return patched([](bytes& b) { b[after_string(b, "w.c") - 1] = 'a'; }); },
       "duplicate tensor name 'w.a'"},
      {"alignment 0", [] { return with_key([](writer& w) { w.set_u32("general.alignment", 0); }); },
       "general.alignment is 0"},
      {"alignment 3", [] { return with_key([](writer& w) { w.set_u32("general.alignment", 3); }); },
       "general.alignment is 3"},
      {"alignment as a string", [] { return with_key([](writer& w) { w.set_string("general.alignment", "32"); }); },
       "general.alignment has type string"},
      {"alignment as a u64", [] { return with_key([](writer& w) { w.set_u64("general.alignment", 32); }); },
       "general.alignment has type u64"},
      {"n_dims 0", [=] { return patched([=](bytes& b) { put_u32(b, tensor(b, "w.a", 2).n_dims, 0); }); },
       "tensor 'w.a': n_dims 0"},
      {"n_dims 5", [=] { return patched([=](bytes& b) { put_u32(b, tensor(b, "w.a", 2).n_dims, 5); }); },
       "tensor 'w.a': n_dims 5"},
      {"dimension 0", [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.a", 2).dims + 8, 0); }); },
       "tensor 'w.a': ne[1] = 0"},
      {"dimension above int64",
       [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.a", 2).dims, ~uint64_t(0)); }); },
       "tensor 'w.a': ne[0] = 18446744073709551615"},
      {"dimension product overflow", [=] {
         return patched([=](bytes& b) {
           put_u64(b, tensor(b, "w.a", 2).dims, uint64_t(1) << 32);
           put_u64(b, tensor(b, "w.a", 2).dims + 8, uint64_t(1) << 32);
         });
       },
       "tensor 'w.a': dims [4294967296, 4294967296] have more elements than int64"},
      {"byte size overflow", [=] {
         return patched([=](bytes& b) {
           put_u64(b, tensor(b, "w.a", 2).dims, uint64_t(1) << 62);
           put_u64(b, tensor(b, "w.a", 2).dims + 8, 1);
         });
       },
       "tensor 'w.a': F32 data of dims [4611686018427387904, 1] is larger than 2^64 bytes"},
      {"unknown type id", [=] { return patched([=](bytes& b) { put_u32(b, tensor(b, "w.a", 2).type, 77); }); },
       "tensor 'w.a': unknown type id 77"},
      {"row not a multiple of the block size",
       [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.b", 2).dims, 48); }); },
       "tensor 'w.b': row length ne[0] = 48 is not a multiple of the Q8_0 block size 32"},
      {"misaligned offset", [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.c", 1).offset, 164); }); },
       "tensor 'w.c': data offset 164 is not a multiple of the alignment 32"},
      {"overlapping tensors", [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.b", 2).offset, 32); }); },
       "tensor 'w.b': data [offset 32, size 68] overlaps tensor 'w.a' [offset 0, size 64]"},
      {"a type that says fewer bytes than were written",  // F32 -> F16: 32 of w.a's 64 bytes belong to nothing
       [=] { return patched([=](bytes& b) { put_u32(b, tensor(b, "w.a", 2).type, 1); }); },
       "tensor 'w.b': data starts at offset 64, but tensor 'w.a' [offset 0, size 32] ends at 32: the 32 bytes between belong to no tensor"},
      {"bytes before the first tensor", [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.a", 2).offset, 32); }); },
       "tensor 'w.a': data starts at offset 32 of the data section, after 32 bytes that belong to no tensor"},
      {"same offset twice", [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.c", 1).offset, 0); }); },
       "overlaps tensor"},
      {"offset past the end", [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.c", 1).offset, 1 << 20); }); },
       "tensor 'w.c': data [offset 1048576, size 32] ends past the end of the file"},
      {"offset + size overflows",
       [=] { return patched([=](bytes& b) { put_u64(b, tensor(b, "w.c", 1).offset, ~uint64_t(31)); }); },
       "tensor 'w.c': data [offset 18446744073709551584, size 32] ends past the end of the file"},
      {"last tensor one byte short", [] { auto b = base_file(); b.pop_back(); return b; },
       "tensor 'w.c': data [offset 160, size 32] ends past the end of the file"},
      {"data section past the end", [] { auto b = base_file(); b.resize(data_offset_of_base() - 1); return b; },
       "data section starts at offset"},
      {"arrays nested too deep",
       [] {
         return with_key([](writer& w) {
           value v = array_of(value_type::u16, {u16v(1)});
           for (int i = 1; i < 9; ++i) v = array_of(value_type::array, {v});
           w.set("test.deep", v);
         });
       },
       "key 'test.deep' element 0 element 0 element 0 element 0 element 0 element 0 element 0 element 0: arrays "
       "nested 9 deep exceed the limit 8"},
      {"limit: kv count", [] { return base_file(); }, "metadata kv count 7 exceeds the limit 3", {.max_kv = 3}},
      {"limit: tensor count", [] { return base_file(); }, "tensor count 3 exceeds the limit 2", {.max_tensors = 2}},
      {"limit: string bytes", [] { return base_file(); },
       "metadata entry 0 key: string length 20 exceeds the limit 4", {.max_string_bytes = 4}},
      {"limit: array length", [] { return base_file(); }, "key 'test.strings': array length 2 exceeds the limit 1",
       {.max_array_elems = 1}},
      {"limit: array depth", [] { return base_file(); }, "key 'test.nested' element 0: arrays nested 2 deep exceed the limit 1",
       {.max_array_depth = 1}},
  };
}

TEST(GgufMalformed, BaseFileIsValid) {
  auto f = parse(base_file());
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ((*f)->tensors().size(), 3u);
  EXPECT_EQ((*f)->metadata().size(), 7u);
  EXPECT_EQ((*f)->find_tensor("w.c")->offset, 160u);
  EXPECT_EQ((*f)->data_offset() + 192, (*f)->size());
}

TEST(GgufMalformed, EachDefectIsRefusedWithItsField) {
  for (const malformed_case& c : cases()) {
    SCOPED_TRACE(c.name);
    bytes b = c.make();
    auto f = parse(b, c.limits);
    ASSERT_FALSE(f) << "accepted";
    EXPECT_TRUE(contains(f.message(), c.phrase)) << "message: " << f.message() << "\nexpected: " << c.phrase;
    EXPECT_FALSE(contains(f.message(), "\n")) << f.message();
  }
}

// The exact wording is relied on by users of the reader.
TEST(GgufMalformed, UnimplementedTypeMessage) {
  bytes b = patched([](bytes& x) { put_u32(x, locate_tensor(x, "w.a", 2).type, t_iq2_xxs); });
  auto f = parse(b);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.message(), "tensor w.a: type IQ2_XXS is not supported");
}

TEST(GgufMalformed, EveryTruncationIsAnError) {
  const bytes full = base_file();
  for (size_t n = 0; n < full.size(); ++n) {
    auto f = parse(bytes(full.begin(), full.begin() + n));
    ASSERT_FALSE(f) << "prefix of " << n << " bytes accepted";
    ASSERT_FALSE(f.message().empty());
    ASSERT_FALSE(contains(f.message(), "\n")) << f.message();
  }
}

// Any single-byte change either parses to a consistent index or is refused; the reader must never
// crash (run under AddressSanitizer + UBSan to catch over-reads).
TEST(GgufMalformed, SingleByteMutationsParseConsistentlyOrFail) {
  const bytes full = base_file();
  size_t accepted = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t replacement : {uint8_t(0x00), uint8_t(0xff), uint8_t(0x80), uint8_t(full[i] ^ 1)}) {
      if (replacement == full[i]) continue;
      bytes b = full;
      b[i] = replacement;
      auto copy = std::make_unique<uint8_t[]>(b.size());
      std::copy(b.begin(), b.end(), copy.get());
      auto f = file::from_memory({copy.get(), b.size()});
      if (!f) {
        ASSERT_FALSE(f.message().empty());
        continue;
      }
      ++accepted;
      const file& r = **f;
      ASSERT_EQ(r.data_offset() % r.alignment(), 0u);
      for (const tensor_info& t : r.tensors()) {
        ASSERT_GE(t.data, copy.get() + r.data_offset()) << "byte " << i;
        ASSERT_LE(t.data + t.n_bytes, copy.get() + b.size()) << "byte " << i;
        ASSERT_EQ(t.offset % r.alignment(), 0u);
        for (const tensor_info& u : r.tensors()) {
          if (&u == &t) continue;
          ASSERT_TRUE(t.offset + t.n_bytes <= u.offset || u.offset + u.n_bytes <= t.offset)
              << t.name << " and " << u.name << " overlap after changing byte " << i;
        }
      }
    }
  }
  // Changes inside string bytes and tensor data are harmless; the rest must have been refused.
  EXPECT_GT(accepted, 0u);
}

TEST(GgufMalformed, OpenReportsFileErrorsWithThePath) {
  auto missing = file::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(contains(missing.message(), "/nonexistent/dir/model.gguf: cannot open")) << missing.message();

  auto dir = file::open(glia::test::scratch(""));
  ASSERT_FALSE(dir);
  EXPECT_TRUE(contains(dir.message(), "not a regular file")) << dir.message();

  // A named pipe nobody writes to is refused, mapped or read, rather than waited on.
  const std::string fifo = glia::test::scratch("gguf_fifo_" + std::to_string(::getpid()) + ".gguf");
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (bool use_mmap : {true, false}) {
    auto p = file::open(fifo, use_mmap);
    ASSERT_FALSE(p);
    EXPECT_TRUE(contains(p.message(), "not a regular file")) << p.message();
  }
  std::remove(fifo.c_str());

  std::string empty = glia::test::scratch("gguf_empty.gguf");
  { std::FILE* f = std::fopen(empty.c_str(), "wb"); ASSERT_NE(f, nullptr); std::fclose(f); }
  for (bool use_mmap : {true, false}) {
    auto e = file::open(empty, use_mmap);
    ASSERT_FALSE(e);
    EXPECT_TRUE(contains(e.message(), empty + ": file is empty")) << e.message();
  }

  std::string cut = glia::test::scratch("gguf_cut.gguf");
  bytes b = base_file();
  b.pop_back();
  { std::FILE* f = std::fopen(cut.c_str(), "wb"); ASSERT_NE(f, nullptr); std::fwrite(b.data(), 1, b.size(), f); std::fclose(f); }
  for (bool use_mmap : {true, false}) {
    auto e = file::open(cut, use_mmap);
    ASSERT_FALSE(e);
    EXPECT_TRUE(contains(e.message(), "ends past the end of the file")) << e.message();
  }
}

}  // namespace
}  // namespace glia::gguf::test
