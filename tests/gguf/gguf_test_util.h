// Helpers for the GGUF tests: ggml type ids and block geometry written out from the ggml spec
// (independent of src/quant), byte patching of serialized files, and a deep value comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"

namespace glia::gguf::test {

// ggml type ids (ggml.h enum ggml_type).
inline constexpr uint32_t t_f32 = 0, t_f16 = 1, t_q4_0 = 2, t_q8_0 = 8, t_q4_k = 12, t_iq2_xxs = 16, t_bf16 = 30;

using bytes = std::vector<uint8_t>;

// An array value of elements of type `elem`.
inline value array_of(value_type elem, std::vector<value> elems) {
  value v;
  v.type = value_type::array;
  v.elem_type = elem;
  v.data = std::move(elems);
  return v;
}

inline void put_u32(bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.at(at + i) = uint8_t(v >> (8 * i));
}
inline void put_u64(bytes& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.at(at + i) = uint8_t(v >> (8 * i));
}
inline uint64_t get_u64(const bytes& b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(b.at(at + i)) << (8 * i);
  return v;
}

// Position just past the GGUF string `s` (u64 length + bytes) in `b`; the string must occur once.
inline size_t after_string(const bytes& b, std::string_view s) {
  bytes needle(8 + s.size());
  for (int i = 0; i < 8; ++i) needle[i] = uint8_t(uint64_t(s.size()) >> (8 * i));
  std::memcpy(needle.data() + 8, s.data(), s.size());
  size_t found = SIZE_MAX;
  for (size_t i = 0; i + needle.size() <= b.size(); ++i) {
    if (std::memcmp(b.data() + i, needle.data(), needle.size()) == 0) {
      EXPECT_EQ(found, SIZE_MAX) << "string '" << s << "' occurs more than once";
      found = i + needle.size();
    }
  }
  EXPECT_NE(found, SIZE_MAX) << "string '" << s << "' not found";
  return found;
}

// Field positions inside the serialized tensor info of tensor `name` (n_dims as written).
struct tensor_fields {
  size_t n_dims, dims, type, offset;
};
inline tensor_fields locate_tensor(const bytes& b, std::string_view name, uint32_t n_dims) {
  size_t p = after_string(b, name);
  return {p, p + 4, p + 4 + 8 * size_t(n_dims), p + 4 + 8 * size_t(n_dims) + 4};
}

inline bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// Deep equality of two metadata values, reporting the first difference at `path`.
inline void expect_same_value(const value& a, const value& b, const std::string& path) {
  ASSERT_EQ(int(a.type), int(b.type)) << path;
  ASSERT_EQ(a.data.index(), b.data.index()) << path;
  if (a.type == value_type::array) {
    ASSERT_EQ(int(a.elem_type), int(b.elem_type)) << path;
    const auto& ea = *a.as_array();
    const auto& eb = *b.as_array();
    ASSERT_EQ(ea.size(), eb.size()) << path;
    for (size_t i = 0; i < ea.size(); ++i) expect_same_value(ea[i], eb[i], path + "[" + std::to_string(i) + "]");
    return;
  }
  if (const auto* d = std::get_if<double>(&a.data)) {
    // Compare bits so that NaNs and signed zeros are checked too.
    double e = std::get<double>(b.data);
    EXPECT_EQ(0, std::memcmp(d, &e, sizeof e)) << path << ": " << *d << " vs " << e;
    return;
  }
  if (const auto* u = std::get_if<uint64_t>(&a.data)) {
    EXPECT_EQ(*u, std::get<uint64_t>(b.data)) << path;
  } else if (const auto* i = std::get_if<int64_t>(&a.data)) {
    EXPECT_EQ(*i, std::get<int64_t>(b.data)) << path;
  } else if (const auto* f = std::get_if<bool>(&a.data)) {
    EXPECT_EQ(*f, std::get<bool>(b.data)) << path;
  } else if (const auto* s = std::get_if<std::string>(&a.data)) {
    EXPECT_EQ(*s, std::get<std::string>(b.data)) << path;
  }
}

}  // namespace glia::gguf::test
