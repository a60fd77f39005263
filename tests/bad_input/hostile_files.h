// Builders for hostile model files: a tiny valid llama model with a small SentencePiece vocabulary
// (written with the GGUF writer, options to drop, reshape or poison one tensor), and byte-level
// patching for what the writer refuses to write (bad dims, types, offsets, counts).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"

namespace glia::test {

using bytes = std::vector<uint8_t>;

struct tiny_options {
  int n_layer = 1;
  int n_embd = 8;
  int n_head = 2;
  int n_head_kv = 1;
  int n_ff = 16;
  int n_ctx = 16;
  uint32_t matrix_type = 0;                          // ggml type id of the 2-D weights (0 = F32, 8 = Q8_0)
  std::string skip{};                                 // a tensor left out
  std::map<std::string, std::vector<int64_t>> dims{};  // tensors written with other dims
  std::string poison{};                               // an F32 tensor whose element `poison_at` is NaN
  int64_t poison_at = 0;
};

// The vocabulary of the tiny model: 16 tokens (<unk> <s> </s>, 3 byte tokens, pieces of "abc").
inline constexpr int tiny_vocab = 16;

gguf::writer tiny_model(const tiny_options& o = {});
bytes to_bytes(const gguf::writer& w);

// Little-endian field edits of a serialized file.
void put_u32(bytes& b, size_t at, uint32_t v);
void put_u64(bytes& b, size_t at, uint64_t v);
// Position just past the only occurrence of the GGUF string `s` (u64 length + bytes); fails the
// current test (and returns 0) when it occurs zero or several times.
size_t after_string(const bytes& b, std::string_view s);

// Positions of the fields of a tensor info whose name is `name` and which has n_dims dims.
struct tensor_fields {
  size_t n_dims, dims, type, offset;
};
tensor_fields locate_tensor(const bytes& b, std::string_view name, uint32_t n_dims);

// Writes `b` under the scratch folder as NAME.gguf and returns the path.
std::string write_scratch(const std::string& name, const bytes& b);

}  // namespace glia::test
