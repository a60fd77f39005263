// Hostile GGUF containers: every defect of the header, metadata and tensor index that a file can
// carry, each refused by the reader with a one-line message naming the field, its value and the
// limit, both through `glia info` and through gguf::file.
#include <gtest/gtest.h>

#include "hostile_case.h"

namespace glia::test {
namespace {

bytes base() { return to_bytes(tiny_model()); }

template <typename Edit>
std::function<bytes()> patched(Edit edit) {
  return [edit] {
    bytes b = base();
    edit(b);
    return b;
  };
}

std::function<bytes()> with_writer(std::function<void(gguf::writer&)> edit) {
  return [edit] {
    gguf::writer w = tiny_model();
    edit(w);
    return to_bytes(w);
  };
}

const uint64_t big = uint64_t(1) << 40;
// Offsets of the 24-byte header (gguf.md): magic, version u32, tensor count u64, kv count u64.
constexpr size_t at_version = 4, at_n_tensors = 8, at_n_kv = 16;

// Serialized GGUF values are: u64 key length, key, u32 value type, value. These return the
// position of the value type / value of key `k` in `b`.
size_t type_of(const bytes& b, std::string_view k) { return after_string(b, k); }
size_t value_of(const bytes& b, std::string_view k) { return after_string(b, k) + 4; }

tensor_fields norm(const bytes& b) { return locate_tensor(b, "output_norm.weight", 1); }
tensor_fields wq(const bytes& b) { return locate_tensor(b, "blk.0.attn_q.weight", 2); }

std::vector<hostile_case> gguf_cases() {
  return {
      {"empty_file", [] { return bytes{}; }, "file is empty (0 bytes)"},
      {"three_bytes", [] { return bytes{'G', 'G', 'U'}; }, "file is 3 bytes, too short for a GGUF header (24 bytes)"},
      {"header_cut_at_16", [] { bytes b = base(); b.resize(16); return b; }, "too short for a GGUF header"},
      {"wrong_magic", patched([](bytes& b) { b[0] = 'X'; }), "not a GGUF file: magic is 0x46554758"},
      {"legacy_ggml", patched([](bytes& b) { put_u32(b, 0, 0x67676d6c); }), "legacy GGML file (magic 0x67676d6c)"},
      {"legacy_ggjt", patched([](bytes& b) { put_u32(b, 0, 0x67676a74); }), "legacy GGJT file (magic 0x67676a74)"},
      {"version_1", patched([](bytes& b) { put_u32(b, at_version, 1); }), "GGUF version 1 is not supported (supported versions: 2 and 3)"},
      {"version_4", patched([](bytes& b) { put_u32(b, at_version, 4); }), "GGUF version 4 is not supported"},
      {"big_endian", patched([](bytes& b) { put_u32(b, at_version, 0x03000000); }), "GGUF file is big-endian"},
      {"huge_tensor_count", patched([](bytes& b) { put_u64(b, at_n_tensors, big); }),
       "tensor count 1099511627776 exceeds the limit 1048576"},
      {"tensor_count_past_the_bytes", patched([](bytes& b) { put_u64(b, at_n_tensors, 100000); }),
       "tensor count 100000 needs at least 32 bytes per tensor info"},
      {"huge_kv_count", patched([](bytes& b) { put_u64(b, at_n_kv, big); }),
       "metadata kv count 1099511627776 exceeds the limit 1048576"},
      {"huge_string_length", patched([](bytes& b) { put_u64(b, value_of(b, "general.architecture"), big); }),
       "key 'general.architecture': string length 1099511627776 exceeds the limit 1073741824"},
      {"string_length_past_the_file", patched([](bytes& b) { put_u64(b, value_of(b, "general.architecture"), 1 << 24); }),
       "key 'general.architecture': string length 16777216 at offset"},
      {"huge_array_length", patched([](bytes& b) { put_u64(b, value_of(b, "tokenizer.ggml.tokens") + 4, big); }),
       "key 'tokenizer.ggml.tokens': array length 1099511627776 exceeds the limit 1073741824"},
      {"array_length_past_the_file", patched([](bytes& b) { put_u64(b, value_of(b, "tokenizer.ggml.tokens") + 4, 1 << 26); }),
       "key 'tokenizer.ggml.tokens': array length 67108864 (string elements of at least 8 bytes) exceeds the"},
      {"unknown_value_type", patched([](bytes& b) { put_u32(b, type_of(b, "llama.block_count"), 99); }),
       "key 'llama.block_count': unknown value type 99 (valid 0..12)"},
      {"unknown_array_element_type", patched([](bytes& b) { put_u32(b, value_of(b, "tokenizer.ggml.scores"), 13); }),
       "key 'tokenizer.ggml.scores': unknown array element type 13 (valid 0..12)"},
      {"bool_value_2", [] {
         gguf::writer w = tiny_model();
         w.set_bool("test.flag", true);
         bytes b = to_bytes(w);
         b[value_of(b, "test.flag")] = 2;
         return b;
       },
       "key 'test.flag': bool value 2 at offset"},
      {"duplicate_key", [] {
         gguf::writer w = tiny_model();
         w.set_u32("test.k1", 1);
         w.set_u32("test.k2", 2);
         bytes b = to_bytes(w);
         b[after_string(b, "test.k2") - 1] = '1';
         return b;
       },
       "duplicate metadata key 'test.k1'"},
      {"duplicate_tensor_name", patched([](bytes& b) { b[after_string(b, "blk.0.attn_v.weight") - 8] = 'k'; }),
       "duplicate tensor name 'blk.0.attn_k.weight'"},
      {"alignment_0", with_writer([](gguf::writer& w) { w.set_u32("general.alignment", 0); }),
       "general.alignment is 0; it must be a non-zero power of two"},
      {"alignment_3", with_writer([](gguf::writer& w) { w.set_u32("general.alignment", 3); }),
       "general.alignment is 3; it must be a non-zero power of two"},
      {"alignment_not_u32", with_writer([](gguf::writer& w) { w.set_u64("general.alignment", 32); }),
       "general.alignment has type u64; it must be a u32"},
      {"n_dims_0", patched([](bytes& b) { put_u32(b, wq(b).n_dims, 0); }),
       "tensor 'blk.0.attn_q.weight': n_dims 0 is outside the supported range 1..4"},
      {"n_dims_5", patched([](bytes& b) { put_u32(b, wq(b).n_dims, 5); }),
       "tensor 'blk.0.attn_q.weight': n_dims 5 is outside the supported range 1..4"},
      {"dimension_0", patched([](bytes& b) { put_u64(b, wq(b).dims + 8, 0); }),
       "tensor 'blk.0.attn_q.weight': ne[1] = 0 is below the minimum 1"},
      {"dimension_product_overflow", patched([](bytes& b) {
         put_u64(b, wq(b).dims, uint64_t(1) << 32);
         put_u64(b, wq(b).dims + 8, uint64_t(1) << 32);
       }),
       "tensor 'blk.0.attn_q.weight': dims [4294967296, 4294967296] have more elements than int64 can count"},
      {"byte_size_overflow", patched([](bytes& b) {
         put_u64(b, wq(b).dims, uint64_t(1) << 62);
         put_u64(b, wq(b).dims + 8, 1);
       }),
       "tensor 'blk.0.attn_q.weight': F32 data of dims [4611686018427387904, 1] is larger than 2^64 bytes"},
      {"unknown_type_id", patched([](bytes& b) { put_u32(b, wq(b).type, 77); }),
       "tensor 'blk.0.attn_q.weight': unknown type id 77"},
      {"unimplemented_type", patched([](bytes& b) { put_u32(b, wq(b).type, 16); }),
       "tensor blk.0.attn_q.weight: type IQ2_XXS is not supported"},
      {"retired_type_id", patched([](bytes& b) { put_u32(b, wq(b).type, 4); }),
       "tensor 'blk.0.attn_q.weight': unknown type id 4"},
      {"row_not_a_block_multiple", patched([](bytes& b) { put_u32(b, wq(b).type, 8); }),
       "tensor 'blk.0.attn_q.weight': row length ne[0] = 8 is not a multiple of the Q8_0 block size 32"},
      {"misaligned_offset", patched([](bytes& b) { put_u64(b, norm(b).offset, 8); }),
       "tensor 'output_norm.weight': data offset 8 is not a multiple of the alignment 32"},
      {"overlapping_tensors", patched([](bytes& b) { put_u64(b, norm(b).offset, 0); }),
       "tensor 'output_norm.weight': data [offset 0, size 32] overlaps tensor 'token_embd.weight' [offset 0, size 512]"},
      {"offset_past_the_file", patched([](bytes& b) { put_u64(b, norm(b).offset, uint64_t(1) << 30); }),
       "tensor 'output_norm.weight': data [offset 1073741824, size 32] ends past the end of the file"},
      {"offset_plus_size_overflows", patched([](bytes& b) { put_u64(b, norm(b).offset, ~uint64_t(31)); }),
       "tensor 'output_norm.weight': data [offset 18446744073709551584, size 32] ends past the end of the file"},
      {"truncated_by_one_byte", patched([](bytes& b) { b.pop_back(); }), "ends past the end of the file"},
      {"truncated_in_metadata", patched([](bytes& b) {
         // The counts are lowered to what the bytes left can hold (else they are refused first):
         // no tensors, and the metadata up to llama.block_count, the 4th key.
         put_u64(b, at_n_tensors, 0);
         put_u64(b, at_n_kv, 4);
         b.resize(after_string(b, "llama.block_count") + 6);
       }),
       "key 'llama.block_count': unexpected end of file reading a u32 value"},
  };
}

class gguf_hostile : public ::testing::TestWithParam<hostile_case> {};

TEST_P(gguf_hostile, cli_info_refuses_with_one_line) { expect_cli_refuses(GetParam()); }
TEST_P(gguf_hostile, reader_refuses) { expect_library_refuses(GetParam()); }

INSTANTIATE_TEST_SUITE_P(bad_input, gguf_hostile, ::testing::ValuesIn(gguf_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace glia::test
