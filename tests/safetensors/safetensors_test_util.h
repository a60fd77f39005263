// Helpers for the safetensors tests: files assembled by hand (a header string written in the test,
// its length prepended), so that the reader is checked against the spec rather than our writer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "safetensors/safetensors.h"

namespace glia::safetensors::test {

using bytes = std::vector<uint8_t>;

// The 8-byte little-endian length of `header`, `header`, then `data`.
inline bytes file_bytes(std::string_view header, const bytes& data = {}) {
  bytes b;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) b.push_back(uint8_t(n >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// One tensor entry of a header: {"dtype":..., "shape":..., "data_offsets":[begin, end]}, with the
// shape written as JSON text ("[2, 3]").
inline std::string entry(std::string_view dtype, std::string_view shape, uint64_t begin, uint64_t end) {
  return "{\"dtype\":\"" + std::string(dtype) + "\",\"shape\":" + std::string(shape) + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

inline bytes iota_bytes(size_t n, uint8_t first = 1) {
  bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(first + i);
  return b;
}

// The reader's error for `b`, parsed from an exactly sized heap copy so that an over-read is caught by
// AddressSanitizer. A file that parses is a test failure (and gives "").
inline std::string error_of(const bytes& b) {
  auto copy = std::make_unique<uint8_t[]>(std::max<size_t>(b.size(), 1));
  std::copy(b.begin(), b.end(), copy.get());
  auto f = file::from_memory({copy.get(), b.size()});
  if (f.is_ok()) {
    ADD_FAILURE() << "parsed, but an error was expected";
    return "";
  }
  EXPECT_EQ(f.message().find('\n'), std::string::npos) << "message is not one line: " << f.message();
  return f.message();
}

}  // namespace glia::safetensors::test
