// GGUF (v2, v3) reader: maps a file (or reads a caller's buffer), validates every count, length,
// offset and size before use, and exposes metadata and a tensor index. It knows nothing of models.
// Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
// Choices where the spec is silent or llama.cpp is looser: every dimension must be >= 1 (no empty
// tensors), n_dims 1..4, bools must be 0 or 1, tensors may not share bytes (any order and gap is
// fine), and a file without tensors may end without the padding before the (empty) data section.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"

namespace glia::gguf {

// The data alignment of a file without general.alignment (GGUF spec).
inline constexpr uint32_t default_alignment = 32;

enum class value_type : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
std::string_view value_type_name(value_type t);

// One metadata value. Arrays hold their elements (which may themselves be arrays).
struct value {
  value_type type = value_type::u8;
  value_type elem_type = value_type::u8;  // arrays only
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<value>> data;

  bool is_integer() const;  // any of the eight integer types
  bool is_float() const;    // f32 or f64
  std::optional<int64_t> as_int() const;   // integers (u64 above INT64_MAX -> nullopt)
  std::optional<double> as_float() const;  // floats and integers
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const std::vector<value>* as_array() const;
};

struct tensor_info {
  std::string name;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ggml order: ne[0] is the contiguous (row) dimension
  uint32_t type = 0;             // ggml type id (see quant/types.h)
  uint64_t offset = 0;           // relative to the start of the data section
  uint64_t n_bytes = 0;          // validated against the type's block layout
  const uint8_t* data = nullptr; // points into the mapping / buffer

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

// Limits that a caller may tighten (fuzzing, untrusted input). Defaults accept every real model.
struct read_limits {
  uint64_t max_string_bytes = uint64_t(1) << 30;
  uint64_t max_array_elems = uint64_t(1) << 30;
  uint32_t max_array_depth = 8;
  uint64_t max_kv = uint64_t(1) << 20;
  uint64_t max_tensors = uint64_t(1) << 20;
};

class file {
 public:
  // Maps `path` read-only (or reads it fully when use_mmap is false) and validates it.
  // progress(done, total) is called as a read (use_mmap false) advances, for a progress bar.
  static result<std::shared_ptr<file>> open(const std::string& path, bool use_mmap = true,
                                            const read_limits& limits = {},
                                            const std::function<void(uint64_t, uint64_t)>& progress = {});
  // Parses a caller-owned buffer (which must outlive the file object).
  static result<std::shared_ptr<file>> from_memory(std::span<const uint8_t> bytes,
                                                   const read_limits& limits = {});
  // A file put together rather than parsed: a checkpoint in another format (Hugging Face safetensors)
  // translated into GGUF metadata and tensor names at load, so that everything above this layer reads
  // one kind of file. Each part's data lives in `owner` (the source mappings and any converted copies),
  // which the file keeps alive. Names, dims and sizes are validated as the reader validates a file's;
  // `source_bytes` is what size() reports (the checkpoint's size on disk).
  struct part {
    std::string name;
    uint32_t type = 0;
    std::vector<int64_t> dims;  // ggml order
    std::span<const uint8_t> data;
  };
  // `origin` says what was translated ("Hugging Face checkpoint, 2 safetensors files"); `mappings` are
  // the read-only private file mappings (whole, page-aligned) that parts point into, whose pages
  // release_pages and map_pages_now may act on as they do on a GGUF file's mapping.
  static result<std::shared_ptr<file>> assemble(std::vector<std::pair<std::string, value>> metadata,
                                                std::vector<part> parts, std::shared_ptr<const void> owner,
                                                uint64_t source_bytes, std::string origin,
                                                std::vector<std::span<const uint8_t>> mappings);
  ~file();
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section
  uint64_t size() const { return size_; }
  bool is_mapped() const { return mapping_.size() > 0 || !assembled_mappings_.empty(); }
  // What the file is: "GGUF v3", or the origin an assembled file was given.
  std::string origin() const;
  bool is_assembled() const { return !origin_.empty(); }
  // Says that bytes [p, p + n) of a mapped file will not be read soon (e.g. weights a backend
  // repacked into its own copy): the whole pages inside the range leave this process's resident
  // memory and come back from the page cache if they are read again. No effect on a file read into
  // memory or on a range outside the mapping.
  void release_pages(const void* p, size_t n) const;
  // Says that bytes [p, p + n) of a mapped file will be read at random soon (the embedding table:
  // a row per new token): their pages are mapped now (they stay shared with the page cache), so
  // that a read does not first take a page fault. Returns false where the kernel cannot (before
  // Linux 5.14) or the range is outside the mapping; reads work the same either way.
  bool map_pages_now(const void* p, size_t n) const;

  // Metadata in file order.
  const std::vector<std::pair<std::string, value>>& metadata() const { return kv_; }
  const value* find(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;

  const std::vector<tensor_info>& tensors() const { return tensors_; }
  const tensor_info* find_tensor(std::string_view name) const;

 private:
  file() = default;
  status parse(const read_limits& limits);
  // [first, last) page addresses of [p, p + n) when the range lies in the mapping and is not empty:
  // the pages wholly inside it (whole_only) or every page it touches.
  std::optional<std::pair<uintptr_t, uintptr_t>> mapped_pages(const void* p, size_t n, bool whole_only) const;

  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  mapped_file mapping_;             // the file mapped, if it is
  std::string owned_;               // its contents when read instead
  std::shared_ptr<const void> owner_;  // an assembled file's data
  std::string origin_;                 // an assembled file's origin
  std::vector<std::span<const uint8_t>> assembled_mappings_;
  uint32_t version_ = 0;
  uint64_t alignment_ = default_alignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, value>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<tensor_info> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Writes GGUF v3 files (tests, the quantize and synth tools).
class writer {
 public:
  void set(std::string key, value v);  // replaces an existing key, keeps first position
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_u64(std::string key, uint64_t v);
  void set_f32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_string(std::string key, std::string v);
  void set_string_array(std::string key, const std::vector<std::string>& v);
  void set_f32_array(std::string key, const std::vector<float>& v);
  void set_i32_array(std::string key, const std::vector<int32_t>& v);
  void remove(std::string_view key);
  const std::vector<std::pair<std::string, value>>& metadata() const { return kv_; }
  void set_alignment(uint32_t alignment);  // also written as general.alignment when not 32

  // `data` must hold exactly the bytes the type and dims require; it is copied.
  status add_tensor(std::string name, uint32_t type, std::vector<int64_t> dims, std::span<const uint8_t> data);
  // Copies every key of an existing file (general.alignment included, which sets the alignment).
  void copy_metadata(const file& f);
  // Copies every tensor (name, type, dims, data) of an existing file, in file order.
  status copy_tensors(const file& f);

  result<std::vector<uint8_t>> to_bytes() const;
  status write(const std::string& path) const;

 private:
  struct pending_tensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> data;
  };
  std::vector<std::pair<std::string, value>> kv_;
  std::vector<pending_tensor> tensors_;
  uint32_t alignment_ = default_alignment;
};

}  // namespace glia::gguf
