// file: opening (mmap) and the parse of the header into the tensor index. Nothing from the file is
// trusted: the header length, every JSON value's type, every shape, offset and byte count is checked
// before a pointer into the data section is handed out.
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_set>

#include "core/json_depth.h"
#include "core/json_text.h"
#include "safetensors/safetensors.h"

namespace glia::safetensors {

namespace {

using json = nlohmann::json;

constexpr uint64_t length_bytes = 8;  // the little-endian u64 header length
constexpr std::string_view metadata_key = "__metadata__";
// A valid header nests 3 deep (root, tensor entry, shape); unknown fields in an entry are ignored and
// may nest a little. nlohmann destroys and compares values recursively, so deeper text is refused
// before it is parsed.
constexpr size_t max_header_depth = 16;

// "a number", "an array", ...: a JSON value's type for messages.
std::string a_type(const json& j) {
  const std::string_view name = j.type_name();
  return (name.starts_with('a') || name.starts_with('o') ? "an " : "a ") + std::string(name);
}

// A value quoted in a message, cut short: the header may hold a megabyte where a pair was expected.
std::string excerpt(const json& j) {
  constexpr size_t max_chars = 40;
  std::string text = json_text(j);
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

result<std::string_view> read_header_text(std::span<const uint8_t> bytes) {
  if (bytes.size() < length_bytes)
    return make_error("file is {} bytes, shorter than the 8-byte header length", bytes.size());
  uint64_t n = 0;
  for (size_t i = 0; i < length_bytes; ++i) n |= uint64_t(bytes[i]) << (8 * i);
  if (n > max_header_bytes) return make_error("header length {} is over the {}-byte cap", n, max_header_bytes);
  if (n > bytes.size() - length_bytes)
    return make_error("header length {} exceeds the {} bytes after it", n, bytes.size() - length_bytes);
  return std::string_view(reinterpret_cast<const char*>(bytes.data() + length_bytes), size_t(n));
}

// Notes the keys of the outermost object and the first one given twice.
struct top_level_keys {
  int depth = 0;
  std::unordered_set<std::string> names;
  std::string duplicate;

  bool key(std::string& k) {
    if (depth == 1 && duplicate.empty() && !names.insert(k).second) duplicate = k;
    return true;
  }
  bool start_object(std::size_t) { return ++depth, true; }
  bool end_object() { return --depth, true; }
  bool start_array(std::size_t) { return ++depth, true; }
  bool end_array() { return --depth, true; }
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }
};

// The header as a JSON object, refusing what nlohmann would take silently: text after a NUL byte
// (nlohmann stops reading there) and a tensor name given twice (the later entry would hide the first).
result<json> parse_header_json(std::string_view text) {
  if (const auto nul = json_nul_byte(text)) return make_error("header has a NUL byte at offset {} (JSON text cannot hold one)", *nul);
  if (const size_t depth = json_nesting_depth(text); depth > max_header_depth)
    return make_error("header nests {} deep, over the limit of {}", depth, max_header_depth);
  json header = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return make_error("header ({} bytes) is not valid JSON", text.size());
  if (!header.is_object()) return make_error("header is {}, not an object", a_type(header));
  // The names, in a second pass of their own: a parser callback would do it in one, but nlohmann
  // (3.11) then rescans the object for discarded entries after each tensor, quadratic in the
  // tensor count (40k tensors: 13 s).
  top_level_keys keys;
  json::sax_parse(text.begin(), text.end(), &keys, json::input_format_t::json, /*strict=*/true);
  if (!keys.duplicate.empty()) return make_error("header names \"{}\" twice", keys.duplicate);
  return header;
}

result<std::map<std::string, std::string, std::less<>>> read_metadata(const json& j) {
  if (!j.is_object()) return make_error("{} is {}, not an object of strings", metadata_key, a_type(j));
  std::map<std::string, std::string, std::less<>> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) return make_error("{} \"{}\" is {}, not a string", metadata_key, key, a_type(value));
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// A field of a tensor entry, or an error naming it when missing.
result<const json*> field(const json& entry, std::string_view key) {
  const auto it = entry.find(key);
  if (it == entry.end()) return make_error("no \"{}\"", key);
  return &*it;
}

result<dtype> read_dtype(const json& entry) {
  auto j = field(entry, "dtype");
  if (!j) return j.take_error();
  if (!(*j)->is_string()) return make_error("\"dtype\" is {}, not a string", a_type(**j));
  return parse_dtype((*j)->get_ref<const std::string&>());
}

result<std::vector<int64_t>> read_shape(const json& entry) {
  auto j = field(entry, "shape");
  if (!j) return j.take_error();
  if (!(*j)->is_array()) return make_error("\"shape\" is {}, not an array of integers", a_type(**j));
  std::vector<int64_t> shape;
  shape.reserve((*j)->size());
  for (const json& d : **j) {
    if (!d.is_number_integer()) return make_error("shape[{}] is {}, not an integer", shape.size(), a_type(d));
    if (d.is_number_unsigned() && d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return make_error("shape[{}] is {}, over 2^63 - 1", shape.size(), d.get<uint64_t>());
    if (d.get<int64_t>() < 0) return make_error("shape[{}] is {}, negative", shape.size(), d.get<int64_t>());
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

struct byte_range {
  uint64_t begin = 0;
  uint64_t end = 0;
};

result<byte_range> read_offsets(const json& entry, uint64_t data_bytes) {
  auto j = field(entry, "data_offsets");
  if (!j) return j.take_error();
  const json& o = **j;
  // nlohmann stores a non-negative literal as unsigned, but "-0" as a signed 0.
  const auto is_offset = [](const json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() == 0);
  };
  if (!o.is_array() || o.size() != 2 || !is_offset(o[0]) || !is_offset(o[1]))
    return make_error("\"data_offsets\" is {}, not 2 non-negative integers", excerpt(o));
  const byte_range r{o[0].get<uint64_t>(), o[1].get<uint64_t>()};
  if (r.begin > r.end) return make_error("data_offsets [{}, {}] begin after end", r.begin, r.end);
  if (r.end > data_bytes)
    return make_error("data_offsets [{}, {}] end past the data section's {} bytes", r.begin, r.end, data_bytes);
  return r;
}

result<tensor_info> read_tensor(const std::string& name, const json& entry, std::span<const uint8_t> data) {
  if (!entry.is_object()) return make_error("entry is {}, not an object", a_type(entry));
  tensor_info t;
  t.name = name;
  auto type = read_dtype(entry);
  if (!type) return type.take_error();
  t.type = *type;
  auto shape = read_shape(entry);
  if (!shape) return shape.take_error();
  t.shape = std::move(*shape);
  auto range = read_offsets(entry, data.size());
  if (!range) return range.take_error();
  auto want = tensor_bytes(t.type, t.shape);
  if (!want) return want.take_error();
  if (range->end - range->begin != *want)
    return make_error("data_offsets [{}, {}] span {} bytes, but shape [{}] of {} is {} bytes", range->begin, range->end,
                      range->end - range->begin, fmt::join(t.shape, ", "), dtype_name(t.type), *want);
  t.offset = range->begin;
  t.n_bytes = *want;
  t.data = data.data() + range->begin;
  return t;
}

// `sorted` is in offset order. Empty tensors hold no byte, so they overlap nothing.
status check_no_overlap(const std::vector<tensor_info>& sorted) {
  const tensor_info* reach = nullptr;  // the non-empty tensor that ends furthest so far
  for (const tensor_info& t : sorted) {
    if (t.n_bytes == 0) continue;
    if (reach != nullptr && t.offset < reach->offset + reach->n_bytes)
      return make_error("tensors \"{}\" [{}, {}) and \"{}\" [{}, {}) overlap", reach->name, reach->offset,
                        reach->offset + reach->n_bytes, t.name, t.offset, t.offset + t.n_bytes);
    if (reach == nullptr || t.offset + t.n_bytes > reach->offset + reach->n_bytes) reach = &t;
  }
  return {};
}

}  // namespace

status file::parse() {
  auto text = read_header_text(bytes_);
  if (!text) return text.take_error();
  data_offset_ = length_bytes + text->size();
  const std::span<const uint8_t> data = bytes_.subspan(size_t(data_offset_));
  auto header = parse_header_json(*text);
  if (!header) return header.take_error();
  for (const auto& [key, value] : header->items()) {
    if (key == metadata_key) {
      auto m = read_metadata(value);
      if (!m) return m.take_error();
      metadata_ = std::move(*m);
      continue;
    }
    auto t = read_tensor(key, value, data);
    if (!t) return make_error("tensor \"{}\": {}", key, t.message());
    tensors_.push_back(std::move(*t));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const tensor_info& a, const tensor_info& b) {
    return std::tie(a.offset, a.n_bytes, a.name) < std::tie(b.offset, b.n_bytes, b.name);
  });
  GLIA_TRY(check_no_overlap(tensors_));
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  return {};
}

result<std::shared_ptr<file>> file::from_memory(std::span<const uint8_t> bytes) {
  std::shared_ptr<file> f(new file());
  f->bytes_ = bytes;
  GLIA_TRY(f->parse());
  return f;
}

result<std::shared_ptr<file>> file::open(const std::string& path) {
  auto mapping = mapped_file::open(path);
  if (!mapping) return mapping.take_error();
  std::shared_ptr<file> f(new file());
  f->mapping_ = std::move(*mapping);
  f->bytes_ = f->mapping_.bytes();
  if (status s = f->parse(); !s) return make_error("{}: {}", path, s.message());
  return f;
}

file::~file() = default;

const tensor_info* file::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace glia::safetensors
