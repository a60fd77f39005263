// writer: serializes metadata and tensors as GGUF v3, little-endian, with every tensor's data
// padded to the alignment (as llama.cpp lays files out, so that they round-trip byte for byte).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <bit>

#include "gguf/gguf.h"
#include "gguf/printable.h"
#include "gguf/tensor_layout.h"

namespace glia::gguf {

namespace {

constexpr uint32_t gguf_version = 3;
constexpr std::string_view alignment_key = "general.alignment";

class byte_sink {
 public:
  explicit byte_sink(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put_le(T v) {
    uint64_t bits = uint64_t(v);
    for (size_t i = 0; i < sizeof(T); ++i) out_.push_back(uint8_t(bits >> (8 * i)));
  }
  void put_string(std::string_view s) {
    put_le(uint64_t(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) { out_.resize(size_t(detail::align_up(out_.size(), alignment)), 0); }

 private:
  std::vector<uint8_t>& out_;
};

// Integers may be held as uint64_t or int64_t (whichever a caller built); the range of the declared
// type decides whether the value fits.
result<uint64_t> integer_bits(const value& v, std::string_view where, int64_t lo, uint64_t hi) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    if (*u > hi) return make_error("{}: {} value {} exceeds the maximum {}", where, value_type_name(v.type), *u, hi);
    return *u;
  }
  if (const auto* i = std::get_if<int64_t>(&v.data)) {
    if (*i < lo || (*i > 0 && uint64_t(*i) > hi))
      return make_error("{}: {} value {} is outside {}..{}", where, value_type_name(v.type), *i, lo, hi);
    return uint64_t(*i);
  }
  return make_error("{}: a {} value must hold an integer", where, value_type_name(v.type));
}

// Appends the payload of `v` (not its type tag). Validates that the variant matches the declared
// type, that integers fit, and that array elements all have the array's element type.
status put_value(byte_sink& out, const value& v, const std::string& where) {
  auto put_int = [&](auto tag, int64_t lo, uint64_t hi) -> status {
    auto bits = integer_bits(v, where, lo, hi);
    if (!bits) return bits.take_error();
    out.put_le(decltype(tag)(*bits));
    return {};
  };
  switch (v.type) {
    case value_type::u8: return put_int(uint8_t{}, 0, UINT8_MAX);
    case value_type::i8: return put_int(uint8_t{}, INT8_MIN, INT8_MAX);
    case value_type::u16: return put_int(uint16_t{}, 0, UINT16_MAX);
    case value_type::i16: return put_int(uint16_t{}, INT16_MIN, INT16_MAX);
    case value_type::u32: return put_int(uint32_t{}, 0, UINT32_MAX);
    case value_type::i32: return put_int(uint32_t{}, INT32_MIN, INT32_MAX);
    case value_type::u64: return put_int(uint64_t{}, 0, UINT64_MAX);
    case value_type::i64: return put_int(uint64_t{}, INT64_MIN, INT64_MAX);
    case value_type::f32:
    case value_type::f64: {
      const auto* d = std::get_if<double>(&v.data);
      if (d == nullptr) return make_error("{}: a {} value must hold a double", where, value_type_name(v.type));
      if (v.type == value_type::f32) out.put_le(std::bit_cast<uint32_t>(float(*d)));
      else out.put_le(std::bit_cast<uint64_t>(*d));
      return {};
    }
    case value_type::boolean: {
      const auto* b = std::get_if<bool>(&v.data);
      if (b == nullptr) return make_error("{}: a bool value must hold a bool", where);
      out.put_le(uint8_t(*b ? 1 : 0));
      return {};
    }
    case value_type::string: {
      const auto* s = std::get_if<std::string>(&v.data);
      if (s == nullptr) return make_error("{}: a string value must hold a string", where);
      out.put_string(*s);
      return {};
    }
    case value_type::array: {
      const auto* elems = std::get_if<std::vector<value>>(&v.data);
      if (elems == nullptr) return make_error("{}: an array value must hold a vector of values", where);
      if (uint32_t(v.elem_type) > uint32_t(value_type::f64))
        return make_error("{}: unknown array element type {}", where, uint32_t(v.elem_type));
      out.put_le(uint32_t(v.elem_type));
      out.put_le(uint64_t(elems->size()));
      for (size_t i = 0; i < elems->size(); ++i) {
        const value& e = (*elems)[i];
        std::string elem_where = fmt::format("{} element {}", where, i);
        if (e.type != v.elem_type)
          return make_error("{}: has type {} but the array holds {}", elem_where, value_type_name(e.type),
                            value_type_name(v.elem_type));
        GLIA_TRY(put_value(out, e, elem_where));
      }
      return {};
    }
  }
  return make_error("{}: unknown value type {}", where, uint32_t(v.type));
}

value make_scalar(value_type t, decltype(value::data) data) {
  value v;
  v.type = t;
  v.data = std::move(data);
  return v;
}

template <typename T>
value make_array(value_type elem_type, const std::vector<T>& items, auto to_data) {
  value v;
  v.type = value_type::array;
  v.elem_type = elem_type;
  std::vector<value> elems;
  elems.reserve(items.size());
  for (const T& x : items) elems.push_back(make_scalar(elem_type, to_data(x)));
  v.data = std::move(elems);
  return v;
}

}  // namespace

void writer::set(std::string key, value v) {
  // Keeps the layout alignment in step with the key. A key that is not a valid u32 power of two is
  // still written as given (tests forge such files); the data then stays at the current alignment.
  if (key == alignment_key && v.type == value_type::u32) {
    const auto* a = std::get_if<uint64_t>(&v.data);
    if (a != nullptr && *a <= UINT32_MAX && detail::is_power_of_two(*a)) alignment_ = uint32_t(*a);
  }
  for (auto& [k, old] : kv_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(v));
}

void writer::set_u32(std::string key, uint32_t v) { set(std::move(key), make_scalar(value_type::u32, uint64_t(v))); }
void writer::set_i32(std::string key, int32_t v) { set(std::move(key), make_scalar(value_type::i32, int64_t(v))); }
void writer::set_u64(std::string key, uint64_t v) { set(std::move(key), make_scalar(value_type::u64, v)); }
void writer::set_f32(std::string key, float v) { set(std::move(key), make_scalar(value_type::f32, double(v))); }
void writer::set_bool(std::string key, bool v) { set(std::move(key), make_scalar(value_type::boolean, v)); }
void writer::set_string(std::string key, std::string v) {
  set(std::move(key), make_scalar(value_type::string, std::move(v)));
}
void writer::set_string_array(std::string key, const std::vector<std::string>& v) {
  set(std::move(key), make_array(value_type::string, v, [](const std::string& s) { return s; }));
}
void writer::set_f32_array(std::string key, const std::vector<float>& v) {
  set(std::move(key), make_array(value_type::f32, v, [](float x) { return double(x); }));
}
void writer::set_i32_array(std::string key, const std::vector<int32_t>& v) {
  set(std::move(key), make_array(value_type::i32, v, [](int32_t x) { return int64_t(x); }));
}

void writer::remove(std::string_view key) {
  if (key == alignment_key) alignment_ = default_alignment;
  std::erase_if(kv_, [&](const auto& kv) { return kv.first == key; });
}

void writer::set_alignment(uint32_t alignment) {
  if (alignment == default_alignment) {
    remove(alignment_key);
  } else {
    set(std::string(alignment_key), make_scalar(value_type::u32, uint64_t(alignment)));
  }
  alignment_ = alignment;  // also when invalid: to_bytes() reports it
}

status writer::add_tensor(std::string name, uint32_t type, std::vector<int64_t> dims, std::span<const uint8_t> data) {
  for (const auto& t : tensors_) {
    if (t.name == name) return make_error("tensor '{}' was already added", detail::printable(name));
  }
  auto n_bytes = detail::tensor_byte_size(detail::printable(name), type, dims);
  if (!n_bytes) return n_bytes.take_error();
  if (data.size() != *n_bytes)
    return make_error("tensor '{}': {} bytes of data given, its type and dims need {}", detail::printable(name),
                      data.size(), *n_bytes);
  tensors_.push_back({std::move(name), type, std::move(dims), std::vector<uint8_t>(data.begin(), data.end())});
  return {};
}

void writer::copy_metadata(const file& f) {
  for (const auto& [key, v] : f.metadata()) set(key, v);
}

status writer::copy_tensors(const file& f) {
  for (const tensor_info& t : f.tensors()) {
    GLIA_TRY(add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), {t.data, size_t(t.n_bytes)}));
  }
  return {};
}

result<std::vector<uint8_t>> writer::to_bytes() const {
  if (!detail::is_power_of_two(alignment_))
    return make_error("alignment {} is not a non-zero power of two", alignment_);
  std::vector<uint8_t> bytes;
  byte_sink out(bytes);
  out.put_le(uint32_t(0x46554747));  // "GGUF"
  out.put_le(gguf_version);
  out.put_le(uint64_t(tensors_.size()));
  out.put_le(uint64_t(kv_.size()));
  for (const auto& [key, v] : kv_) {
    out.put_string(key);
    out.put_le(uint32_t(v.type));
    GLIA_TRY(put_value(out, v, fmt::format("key '{}'", detail::printable(key))));
  }
  uint64_t offset = 0;
  for (const pending_tensor& t : tensors_) {
    out.put_string(t.name);
    out.put_le(uint32_t(t.dims.size()));
    for (int64_t d : t.dims) out.put_le(uint64_t(d));
    out.put_le(t.type);
    out.put_le(offset);
    offset = detail::align_up(offset + t.data.size(), alignment_);
  }
  out.pad_to(alignment_);
  for (const pending_tensor& t : tensors_) {
    bytes.insert(bytes.end(), t.data.begin(), t.data.end());
    out.pad_to(alignment_);
  }
  return bytes;
}

status writer::write(const std::string& path) const {
  auto bytes = to_bytes();
  if (!bytes) return bytes.take_error();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return make_error("{}: cannot create: {}", path, std::strerror(errno));
  size_t written = std::fwrite(bytes->data(), 1, bytes->size(), f);
  int err = std::ferror(f) ? errno : 0;
  if (std::fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  if (written != bytes->size() || err != 0)
    return make_error("{}: wrote {} of {} bytes: {}", path, written, bytes->size(), std::strerror(err ? err : EIO));
  return {};
}

}  // namespace glia::gguf
