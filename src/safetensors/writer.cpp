// writer: collects tensors and metadata, then lays out header and data section.
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

#include "safetensors/safetensors.h"

namespace glia::safetensors {

namespace {

constexpr uint64_t data_alignment = 8;  // of the data section's start, as the reference writes it

// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF): what a JSON
// reader accepts (nlohmann and serde_json both refuse the rest).
bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;        // continuation bytes
    uint32_t cp = 0;     // code point
    uint32_t least = 0;  // smallest code point that needs n continuation bytes
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f, least = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f, least = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07, least = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

}  // namespace

void writer::set_metadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }

status writer::add(std::string name, dtype type, std::vector<int64_t> shape, std::span<const uint8_t> data) {
  if (name == "__metadata__") return make_error("tensor name \"__metadata__\" is the header's metadata key");
  if (!is_utf8(name)) return make_error("tensor name \"{}\" is not UTF-8", name);
  if (names_.contains(name)) return make_error("tensor \"{}\" added twice", name);
  auto want = tensor_bytes(type, shape);
  if (!want) return make_error("tensor \"{}\": {}", name, want.message());
  if (data.size() != *want)
    return make_error("tensor \"{}\": {} bytes of data, but shape [{}] of {} is {} bytes", name, data.size(),
                      fmt::join(shape, ", "), dtype_name(type), *want);
  names_.insert(name);
  tensors_.push_back({std::move(name), type, std::move(shape), {data.begin(), data.end()}});
  return {};
}

result<std::vector<uint8_t>> writer::to_bytes() const {
  for (const auto& [key, value] : metadata_)
    if (!is_utf8(key) || !is_utf8(value)) return make_error("metadata \"{}\" is not UTF-8", key);

  // Widest elements first: with no gaps, each tensor then starts at a multiple of its element size.
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return dtype_bits(tensors_[a].type) > dtype_bits(tensors_[b].type); });

  // ordered_json keeps __metadata__ first and the tensors in file order, for a reader's eye.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    auto& m = header["__metadata__"] = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata_) m[key] = value;
  }
  uint64_t offset = 0;
  for (const size_t i : order) {
    const pending_tensor& t = tensors_[i];
    header[t.name] = {
        {"dtype", dtype_name(t.type)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  // Every string was checked above, so the replace handler never replaces: it only keeps dump from
  // throwing.
  std::string text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text.resize((text.size() + data_alignment - 1) / data_alignment * data_alignment, ' ');
  if (text.size() > max_header_bytes)
    return make_error("header is {} bytes, over the readers' {}-byte cap", text.size(), max_header_bytes);

  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(uint64_t(text.size()) >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const size_t i : order) out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
  return out;
}

status writer::write(const std::string& path) const {
  auto bytes = to_bytes();
  if (!bytes) return make_error("{}: {}", path, bytes.message());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return make_error("{}: cannot create: {}", path, std::strerror(errno));
  const size_t written = std::fwrite(bytes->data(), 1, bytes->size(), f);
  int err = std::ferror(f) ? errno : 0;
  if (std::fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  if (written != bytes->size() || err != 0)
    return make_error("{}: wrote {} of {} bytes: {}", path, written, bytes->size(), std::strerror(err ? err : EIO));
  return {};
}

}  // namespace glia::safetensors
