// file: opening (mmap or read), and the parse of header, metadata and tensor index. Nothing from the
// file is trusted: every count, length, offset and size is checked before it is used.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "core/read_file.h"

#include "gguf/byte_cursor.h"
#include "gguf/gguf.h"
#include "gguf/printable.h"
#include "gguf/tensor_layout.h"
#include "gguf/value_reader.h"

namespace glia::gguf {

namespace {

using detail::byte_cursor;
using detail::printable;

constexpr uint32_t gguf_magic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t header_bytes = 24;         // magic, version, tensor count, kv count
// Smallest possible encodings, used to bound counts by the bytes that follow: a kv entry is a
// key length, a value type and a one-byte value; a tensor info is a name length, n_dims, one dim,
// a type and an offset.
constexpr uint64_t min_kv_bytes = 8 + 4 + 1;
constexpr uint64_t min_tensor_info_bytes = 8 + 4 + 8 + 4 + 8;

struct header {
  uint32_t version = 0;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
};

result<header> read_header(byte_cursor& cur, const read_limits& limits) {
  if (cur.size() == 0) return make_error("file is empty (0 bytes); a GGUF file starts with a 24-byte header");
  if (cur.size() < 4)
    return make_error("file is {} bytes, too short for a GGUF header ({} bytes)", cur.size(), header_bytes);
  uint32_t magic = 0;
  (void)cur.read_le(magic);
  // The formats llama.cpp used before GGUF (magics from its old llama.cpp loader) get a message that
  // says what they are rather than only "not GGUF".
  constexpr std::pair<uint32_t, const char*> legacy[] = {
      {0x67676d6c, "GGML"}, {0x67676d66, "GGMF"}, {0x67676a74, "GGJT"}, {0x67676c61, "GGLA (LoRA)"}};
  for (const auto& [m, name] : legacy)
    if (magic == m)
      return make_error("legacy {} file (magic 0x{:08x}), a format from before GGUF; convert it to GGUF (llama.cpp's "
                        "convert_llama_ggml_to_gguf.py)",
                        name, magic);
  if (magic != gguf_magic)
    return make_error("not a GGUF file: magic is 0x{:08x} (bytes '{}'), expected 0x{:08x} ('GGUF')", magic,
                      printable(std::string_view(reinterpret_cast<const char*>(&magic), 4)), gguf_magic);
  header h;
  if (!cur.read_le(h.version))
    return make_error("file is {} bytes, too short for a GGUF header ({} bytes)", cur.size(), header_bytes);
  if (h.version != 2 && h.version != 3) {
    // A big-endian file has its small version number in the high bytes of the little-endian read.
    uint32_t swapped = __builtin_bswap32(h.version);
    if ((h.version & 0xffff) == 0 && swapped >= 1 && swapped <= 3)
      return make_error("GGUF file is big-endian (version field reads 0x{:08x}, i.e. version {} byte-swapped); only "
                        "little-endian files are supported",
                        h.version, swapped);
    return make_error("GGUF version {} is not supported (supported versions: 2 and 3)", h.version);
  }
  if (!cur.read_le(h.n_tensors) || !cur.read_le(h.n_kv))
    return make_error("file is {} bytes, too short for a GGUF header ({} bytes)", cur.size(), header_bytes);

  if (h.n_tensors > limits.max_tensors)
    return make_error("tensor count {} exceeds the limit {}", h.n_tensors, limits.max_tensors);
  if (h.n_tensors > cur.remaining() / min_tensor_info_bytes)
    return make_error("tensor count {} needs at least {} bytes per tensor info but only {} bytes follow the header",
                      h.n_tensors, min_tensor_info_bytes, cur.remaining());
  if (h.n_kv > limits.max_kv) return make_error("metadata kv count {} exceeds the limit {}", h.n_kv, limits.max_kv);
  if (h.n_kv > cur.remaining() / min_kv_bytes)
    return make_error("metadata kv count {} needs at least {} bytes per entry but only {} bytes follow the header",
                      h.n_kv, min_kv_bytes, cur.remaining());
  return h;
}

error truncated(const byte_cursor& cur, std::string_view where, std::string_view field, uint64_t need) {
  return make_error("{}: unexpected end of file reading {} at offset {} (needs {} bytes, {} left of {})", where,
                    field, cur.pos(), need, cur.remaining(), cur.size());
}

// Reads one tensor info and checks its shape and type; the data placement is checked later, once
// the start of the data section is known.
status read_tensor_info(byte_cursor& cur, detail::value_reader& values, uint64_t index, tensor_info& t) {
  std::string where = fmt::format("tensor {} name", index);
  GLIA_TRY(values.read_string(t.name, detail::location{where}));
  where = fmt::format("tensor '{}'", printable(t.name));
  if (!cur.read_le(t.n_dims)) return truncated(cur, where, "n_dims", 4);
  if (t.n_dims < 1 || t.n_dims > detail::max_dims)
    return make_error("{}: n_dims {} is outside the supported range 1..{}", where, t.n_dims, detail::max_dims);
  for (uint32_t d = 0; d < t.n_dims; ++d) {
    uint64_t ne = 0;
    if (!cur.read_le(ne)) return truncated(cur, where, fmt::format("ne[{}]", d), 8);
    if (ne > uint64_t(INT64_MAX))
      return make_error("{}: ne[{}] = {} exceeds the maximum {}", where, d, ne, INT64_MAX);
    t.ne[d] = int64_t(ne);
  }
  if (!cur.read_le(t.type)) return truncated(cur, where, "the type id", 4);
  if (!cur.read_le(t.offset)) return truncated(cur, where, "the data offset", 8);
  auto n_bytes = detail::tensor_byte_size(printable(t.name), t.type, std::span<const int64_t>(t.ne, t.n_dims));
  if (!n_bytes) return n_bytes.take_error();
  t.n_bytes = *n_bytes;
  return {};
}

// general.alignment, when present, must be a u32 power of two (spec: "must be a multiple of 8";
// llama.cpp accepts any non-zero power of two, and so do we).
result<uint64_t> alignment_from(const value* v) {
  if (v == nullptr) return default_alignment;
  if (v->type != value_type::u32)
    return make_error("general.alignment has type {}; it must be a u32", value_type_name(v->type));
  uint64_t a = std::get<uint64_t>(v->data);
  if (!detail::is_power_of_two(a))
    return make_error("general.alignment is {}; it must be a non-zero power of two", a);
  return a;
}

// Binds each tensor to its bytes: offsets aligned, data inside the file, no two tensors sharing a byte,
// and, as llama.cpp's reader requires, no bytes between them but alignment padding: a gap means a
// tensor's type or shape says fewer bytes than were written for it (a damaged type id would
// otherwise load and compute from the wrong bytes).
status place_tensors(std::vector<tensor_info>& tensors, const uint8_t* base, uint64_t size, uint64_t data_offset,
                     uint64_t alignment) {
  const uint64_t data_size = size - data_offset;
  for (tensor_info& t : tensors) {
    if (t.offset % alignment != 0)
      return make_error("tensor '{}': data offset {} is not a multiple of the alignment {}", printable(t.name),
                        t.offset, alignment);
    // Written as two comparisons so that offset + size cannot overflow.
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      return make_error("tensor '{}': data [offset {}, size {}] ends past the end of the file ({} bytes, data "
                        "section starts at {})",
                        printable(t.name), t.offset, t.n_bytes, size, data_offset);
    t.data = base + data_offset + t.offset;
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].offset != tensors[b].offset ? tensors[a].offset < tensors[b].offset : a < b;
  });
  if (!order.empty() && tensors[order[0]].offset != 0)
    return make_error("tensor '{}': data starts at offset {} of the data section, after {} bytes that belong to no tensor",
                      printable(tensors[order[0]].name), tensors[order[0]].offset, tensors[order[0]].offset);
  for (size_t k = 1; k < order.size(); ++k) {
    const tensor_info& prev = tensors[order[k - 1]];
    const tensor_info& t = tensors[order[k]];
    if (t.offset < prev.offset + prev.n_bytes)
      return make_error("tensor '{}': data [offset {}, size {}] overlaps tensor '{}' [offset {}, size {}]",
                        printable(t.name), t.offset, t.n_bytes, printable(prev.name), prev.offset, prev.n_bytes);
    const uint64_t next = detail::align_up(prev.offset + prev.n_bytes, alignment);
    if (t.offset != next)
      return make_error("tensor '{}': data starts at offset {}, but tensor '{}' [offset {}, size {}] ends at {}: the {} bytes "
                        "between belong to no tensor (a type or shape that says fewer bytes than were written?)",
                        printable(t.name), t.offset, printable(prev.name), prev.offset, prev.n_bytes, prev.offset + prev.n_bytes,
                        t.offset - (prev.offset + prev.n_bytes));
  }
  return {};
}

}  // namespace

status file::parse(const read_limits& limits) {
  byte_cursor cur(base_, size_);
  auto h = read_header(cur, limits);
  if (!h) return h.take_error();
  version_ = h->version;

  detail::value_reader values(cur, limits);
  kv_.reserve(size_t(h->n_kv));
  for (uint64_t i = 0; i < h->n_kv; ++i) {
    std::string key;
    std::string where = fmt::format("metadata entry {} key", i);
    GLIA_TRY(values.read_string(key, detail::location{where}));
    where = fmt::format("key '{}'", printable(key));
    uint32_t type = 0;
    if (!cur.read_le(type)) return truncated(cur, where, "the value type", 4);
    if (type > detail::max_value_type)
      return make_error("{}: unknown value type {} (valid 0..{})", where, type, detail::max_value_type);
    value v;
    GLIA_TRY(values.read_value(value_type(type), 0, detail::location{where}, v));
    auto [it, inserted] = kv_index_.emplace(key, kv_.size());
    if (!inserted)
      return make_error("duplicate metadata key '{}' (entries {} and {})", printable(key), it->second, i);
    kv_.emplace_back(std::move(key), std::move(v));
  }
  auto alignment = alignment_from(find("general.alignment"));
  if (!alignment) return alignment.take_error();
  alignment_ = *alignment;

  if (h->n_tensors > cur.remaining() / min_tensor_info_bytes)
    return make_error("tensor count {} needs at least {} bytes per tensor info but only {} bytes follow the metadata",
                      h->n_tensors, min_tensor_info_bytes, cur.remaining());
  tensors_.resize(size_t(h->n_tensors));
  for (uint64_t i = 0; i < h->n_tensors; ++i) {
    GLIA_TRY(read_tensor_info(cur, values, i, tensors_[i]));
    auto [it, inserted] = tensor_index_.emplace(tensors_[i].name, size_t(i));
    if (!inserted)
      return make_error("duplicate tensor name '{}' (tensors {} and {})", printable(tensors_[i].name), it->second, i);
  }

  // cur.pos() <= size_ and alignment_ <= 2^32, so this cannot overflow.
  data_offset_ = detail::align_up(cur.pos(), alignment_);
  if (tensors_.empty()) {
    // A file without tensors may end right after its metadata, without the padding.
    data_offset_ = std::min(data_offset_, size_);
    return {};
  }
  if (data_offset_ > size_)
    return make_error("data section starts at offset {} (tensor infos end at {}, alignment {}), past the end of the "
                      "file ({} bytes)",
                      data_offset_, cur.pos(), alignment_, size_);
  return place_tensors(tensors_, base_, size_, data_offset_, alignment_);
}


result<std::shared_ptr<file>> file::from_memory(std::span<const uint8_t> bytes, const read_limits& limits) {
  std::shared_ptr<file> f(new file());
  f->base_ = bytes.data();
  f->size_ = bytes.size();
  GLIA_TRY(f->parse(limits));
  return f;
}

std::optional<std::pair<uintptr_t, uintptr_t>> file::mapped_pages(const void* p, size_t n, bool whole_only) const {
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  auto inside = [&](const void* m, size_t size) {
    const auto map_begin = reinterpret_cast<uintptr_t>(m), map_end = map_begin + size;
    return m != nullptr && begin >= map_begin && end <= map_end;
  };
  bool mapped = inside(mapping_.bytes().data(), mapping_.size());
  for (const auto& m : assembled_mappings_) mapped = mapped || inside(m.data(), m.size());
  if (!mapped || n == 0) return std::nullopt;
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  if (whole_only) return std::pair{(begin + page - 1) / page * page, end / page * page};
  return std::pair{begin / page * page, (end + page - 1) / page * page};
}

void file::release_pages(const void* p, size_t n) const {
  const auto pages = mapped_pages(p, n, true);
  // MADV_DONTNEED on a private read-only file mapping drops the pages; a later read refills them
  // from the file, so the bytes never change.
  if (pages && pages->first < pages->second)
    ::madvise(reinterpret_cast<void*>(pages->first), pages->second - pages->first, MADV_DONTNEED);
}

bool file::map_pages_now(const void* p, size_t n) const {
  const auto pages = mapped_pages(p, n, false);
  constexpr int madv_populate_read = 22;  // Linux 5.14+; older headers lack the name
  return pages && ::madvise(reinterpret_cast<void*>(pages->first), pages->second - pages->first, madv_populate_read) == 0;
}

result<std::shared_ptr<file>> file::open(const std::string& path, bool use_mmap, const read_limits& limits,
                                         const std::function<void(uint64_t, uint64_t)>& progress) {
  std::shared_ptr<file> f(new file());
  if (use_mmap) {
    // Private and read-only: weights are shared with the page cache and never written.
    GLIA_ASSIGN(f->mapping_, mapped_file::open(path));
    f->base_ = f->mapping_.bytes().data();
    f->size_ = f->mapping_.size();
  } else {
    // mapped_file refuses what is not a regular file; read_whole_file would read a device or a pipe.
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
      return make_error("{}: not a regular file", path);
    GLIA_ASSIGN(f->owned_, read_whole_file(path, progress));
    f->base_ = reinterpret_cast<const uint8_t*>(f->owned_.data());
    f->size_ = f->owned_.size();
  }
  status s = f->parse(limits);
  if (!s) return make_error("{}: {}", path, s.message());
  return f;
}

file::~file() = default;

const value* file::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<int64_t> file::get_int(std::string_view key) const {
  const value* v = find(key);
  return v ? v->as_int() : std::nullopt;
}

std::optional<double> file::get_float(std::string_view key) const {
  const value* v = find(key);
  return v ? v->as_float() : std::nullopt;
}

std::optional<bool> file::get_bool(std::string_view key) const {
  const value* v = find(key);
  return v ? v->as_bool() : std::nullopt;
}

std::optional<std::string> file::get_string(std::string_view key) const {
  const value* v = find(key);
  const std::string* s = v ? v->as_string() : nullptr;
  return s ? std::optional<std::string>(*s) : std::nullopt;
}

const tensor_info* file::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace glia::gguf
