// Hugging Face .safetensors files: an 8-byte little-endian header length N, N bytes of JSON header
// (possibly padded with trailing spaces), then the data section. The header maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data section) and may
// hold "__metadata__", an object of strings. Tensors are row-major and little-endian.
// Spec: https://github.com/huggingface/safetensors (README, "Format").
//
// The reader trusts nothing in the file: every length, offset, shape and type is checked before a
// tensor is handed out, and a malformed file is an error value naming the tensor or key at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"

namespace glia::safetensors {

// Every element type of the spec. f4 and f6_* are packed below a byte (E2M1, E2M3, E3M2 floats of the
// OCP microscaling formats): a tensor of them is stored as n_elements * bits / 8 bytes.
enum class dtype {
  f64,
  f32,
  f16,
  bf16,
  i64,
  i32,
  i16,
  i8,
  u8,
  boolean,
  f8_e4m3,
  f8_e5m2,
  u64,
  u32,
  u16,
  f8_e8m0,
  c64,  // complex: two f32, real then imaginary
  f4,
  f6_e2m3,
  f6_e3m2,
};

// The spec's name: "F32", "BF16", "BOOL", "F8_E4M3", ...
std::string_view dtype_name(dtype t);
// Bytes per element; 0 for the sub-byte types (f4, f6_*), which have no whole size: count bytes with
// tensor_bytes instead.
size_t dtype_size(dtype t);
// Bits per element: 8 * dtype_size, or 4 / 6 for the sub-byte types.
size_t dtype_bits(dtype t);
// The dtype a header names, or an error naming the unknown name.
result<dtype> parse_dtype(std::string_view name);
// Bytes a tensor of `shape` takes: refuses negative dims, more than 2^63 - 1 elements, and sub-byte
// tensors whose bits do not fill whole bytes (the spec stores no partial byte).
result<uint64_t> tensor_bytes(dtype t, std::span<const int64_t> shape);

struct tensor_info {
  std::string name;
  dtype type = dtype::f32;
  std::vector<int64_t> shape;     // row-major, outermost first (as in the header); [] is a scalar
  uint64_t offset = 0;            // relative to the start of the data section
  uint64_t n_bytes = 0;           // validated: tensor_bytes(type, shape)
  const uint8_t* data = nullptr;  // into the mapping / buffer

  int64_t n_elements() const;  // product of shape; 1 for a scalar
};

class file {
 public:
  // Maps `path` read-only and validates it; errors begin with the path.
  static result<std::shared_ptr<file>> open(const std::string& path);
  // Parses a caller-owned buffer, which must outlive the file object.
  static result<std::shared_ptr<file>> from_memory(std::span<const uint8_t> bytes);
  ~file();
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  // Sorted by offset (file order). Byte ranges never overlap; gaps between them are allowed.
  const std::vector<tensor_info>& tensors() const { return tensors_; }
  const tensor_info* find(std::string_view name) const;
  // "__metadata__"; empty when the header has none.
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }
  uint64_t size() const { return bytes_.size(); }
  // The whole file: the mapping for open(), the caller's buffer for from_memory().
  std::span<const uint8_t> bytes() const { return bytes_; }
  bool is_mapped() const { return mapping_.size() > 0; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section: 8 + header length

 private:
  file() = default;
  status parse();

  mapped_file mapping_;             // empty for from_memory
  std::span<const uint8_t> bytes_;  // the whole file
  uint64_t data_offset_ = 0;
  std::vector<tensor_info> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string, std::less<>> metadata_;
};

// Builds a file in memory. The data section is packed without gaps (as the reference implementation
// writes it, and as its reader requires), in order of decreasing element size, insertion order within
// one size: every tensor then starts at a multiple of its element size, since the header is padded
// with spaces so that the data section starts 8-byte aligned.
class writer {
 public:
  // Sets (or replaces) one "__metadata__" entry.
  void set_metadata(std::string key, std::string value);
  // Copies `data`, whose size must be tensor_bytes(type, shape). Refuses a name already added,
  // "__metadata__", and names that are not UTF-8 (JSON text cannot carry them).
  status add(std::string name, dtype type, std::vector<int64_t> shape, std::span<const uint8_t> data);
  // Fails on metadata that is not UTF-8, or a header past the readers' 100 MB cap.
  result<std::vector<uint8_t>> to_bytes() const;
  status write(const std::string& path) const;

 private:
  struct pending_tensor {
    std::string name;
    dtype type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
  };
  std::vector<pending_tensor> tensors_;
  std::set<std::string, std::less<>> names_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

// The largest header length accepted (and written): the reference implementation's cap.
inline constexpr uint64_t max_header_bytes = 100'000'000;

}  // namespace glia::safetensors
