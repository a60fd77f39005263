// Streaming GGUF output. The metadata section is serialized by gguf::writer (one implementation of
// the value encoding); this file only appends the tensor index and streams the data after it.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gguf/tensor_layout.h"
#include "model/quantize.h"

namespace glia {
namespace {

constexpr size_t k_header_bytes = 4 + 4 + 8 + 8;  // magic, version, n_tensors, n_kv
constexpr std::string_view k_alignment_key = "general.alignment";

// Bytes gguf::writer emits for a value's payload (GGUF spec: strings are u64 length + bytes,
// arrays u32 element type + u64 count + elements).
uint64_t payload_bytes(const gguf::value& v) {
  using vt = gguf::value_type;
  switch (v.type) {
    case vt::u8: case vt::i8: case vt::boolean: return 1;
    case vt::u16: case vt::i16: return 2;
    case vt::u32: case vt::i32: case vt::f32: return 4;
    case vt::u64: case vt::i64: case vt::f64: return 8;
    case vt::string: {
      const std::string* s = v.as_string();
      return 8 + (s ? s->size() : 0);
    }
    case vt::array: {
      uint64_t n = 4 + 8;
      if (const auto* a = v.as_array())
        for (const auto& e : *a) n += payload_bytes(e);
      return n;
    }
  }
  return 0;
}

template <typename T>
void put_le(std::vector<uint8_t>& out, T v) {
  const uint64_t bits = uint64_t(v);
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(uint8_t(bits >> (8 * i)));
}

uint64_t alignment_of(const std::vector<std::pair<std::string, gguf::value>>& metadata) {
  for (const auto& [k, v] : metadata)
    if (k == k_alignment_key && v.type == gguf::value_type::u32) {
      auto a = v.as_int();
      if (a && gguf::detail::is_power_of_two(uint64_t(*a))) return uint64_t(*a);
    }
  return 32;
}

}  // namespace

void replace_key(std::vector<std::pair<std::string, gguf::value>>& metadata, const std::string& key, gguf::value v) {
  std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
  metadata.emplace_back(key, std::move(v));
}

void set_quantized_file_keys(std::vector<std::pair<std::string, gguf::value>>& metadata, file_type ft) {
  auto put_u32 = [&](const std::string& key, uint32_t v) {
    gguf::value val;
    val.type = gguf::value_type::u32;
    val.data = uint64_t(v);
    replace_key(metadata, key, std::move(val));
  };
  put_u32("general.quantization_version", 2);
  put_u32("general.file_type", uint32_t(ft));
}

result<std::unique_ptr<gguf_stream_writer>> gguf_stream_writer::create(
    const std::string& path, std::vector<std::pair<std::string, gguf::value>> metadata,
    std::vector<planned_tensor> tensors) {
  gguf::writer w;
  uint64_t kv_bytes = 0;
  for (auto& [k, v] : metadata) {
    kv_bytes += 8 + k.size() + 4 + payload_bytes(v);
    w.set(k, v);
  }
  auto head = w.to_bytes();  // header + metadata + padding, no tensors
  if (!head) return head.take_error();
  const uint64_t alignment = alignment_of(metadata);
  const uint64_t meta_end = k_header_bytes + kv_bytes;
  if (head->size() != gguf::detail::align_up(meta_end, alignment))
    return make_error("GGUF metadata of {} entries serialized to {} bytes, expected {} before padding (duplicate keys?)",
                      metadata.size(), head->size(), meta_end);
  head->resize(size_t(meta_end));
  const uint64_t n_tensors = tensors.size();
  std::memcpy(head->data() + 8, &n_tensors, 8);  // little-endian host (x86-64, AArch64)

  uint64_t offset = 0;
  for (const auto& t : tensors) {
    auto n_bytes = gguf::detail::tensor_byte_size(t.name, uint32_t(t.type), t.dims);
    if (!n_bytes) return n_bytes.take_error();
    put_le(*head, uint64_t(t.name.size()));
    head->insert(head->end(), t.name.begin(), t.name.end());
    put_le(*head, uint32_t(t.dims.size()));
    for (int64_t d : t.dims) put_le(*head, uint64_t(d));
    put_le(*head, uint32_t(t.type));
    put_le(*head, offset);
    offset = gguf::detail::align_up(offset + *n_bytes, alignment);
  }

  std::unique_ptr<gguf_stream_writer> s(new gguf_stream_writer());
  s->path_ = path;
  s->tensors_ = std::move(tensors);
  s->alignment_ = alignment;
  auto out = output_file::open(path);
  if (!out) return out.take_error();
  s->out_.emplace(std::move(*out));
  GLIA_TRY(s->put(head->data(), head->size()));
  GLIA_TRY(s->pad());
  return s;
}

gguf_stream_writer::~gguf_stream_writer() = default;  // an unfinished out_ removes its partial file

status gguf_stream_writer::put(const void* data, size_t n) {
  if (n == 0) return {};
  if (std::fwrite(data, 1, n, out_->stream()) != n) return make_error("{}: write failed: {}", path_, std::strerror(errno));
  offset_ += n;
  return {};
}

status gguf_stream_writer::pad() {
  static const uint8_t zeros[64] = {};
  uint64_t n = gguf::detail::align_up(offset_, alignment_) - offset_;
  while (n > 0) {
    const size_t k = size_t(std::min<uint64_t>(n, sizeof zeros));
    GLIA_TRY(put(zeros, k));
    n -= k;
  }
  return {};
}

status gguf_stream_writer::write_next(std::span<const uint8_t> data) {
  if (!out_) return make_error("{}: already closed", path_);
  if (next_ >= tensors_.size()) return make_error("{}: all {} tensors were already written", path_, tensors_.size());
  const planned_tensor& t = tensors_[next_];
  auto want = gguf::detail::tensor_byte_size(t.name, uint32_t(t.type), t.dims);
  if (!want) return want.take_error();
  if (data.size() != *want)
    return make_error("tensor {}: {} bytes of data given, its type {} and dims need {}", t.name, data.size(),
                      type_info(t.type).name, *want);
  GLIA_TRY(put(data.data(), data.size()));
  GLIA_TRY(pad());
  ++next_;
  return {};
}

status gguf_stream_writer::finish() {
  if (!out_) return make_error("{}: already closed", path_);
  if (next_ != tensors_.size())
    return make_error("{}: {} of {} tensors written", path_, next_, tensors_.size());
  status s = out_->commit();
  out_.reset();
  return s;
}

}  // namespace glia
