// file::assemble: a GGUF view of tensors that live elsewhere (a translated Hugging Face checkpoint).
#include "gguf/gguf.h"
#include "gguf/printable.h"
#include "gguf/tensor_layout.h"

namespace glia::gguf {

result<std::shared_ptr<file>> file::assemble(std::vector<std::pair<std::string, value>> metadata, std::vector<part> parts,
                                             std::shared_ptr<const void> owner, uint64_t source_bytes, std::string origin,
                                             std::vector<std::span<const uint8_t>> mappings) {
  std::shared_ptr<file> f(new file());
  f->origin_ = origin.empty() ? "assembled file" : std::move(origin);
  f->assembled_mappings_ = std::move(mappings);
  f->version_ = 3;
  f->size_ = source_bytes;
  f->owner_ = std::move(owner);
  for (auto& [key, v] : metadata) {
    auto [it, inserted] = f->kv_index_.emplace(key, f->kv_.size());
    if (!inserted) return make_error("duplicate metadata key '{}'", detail::printable(key));
    f->kv_.emplace_back(std::move(key), std::move(v));
  }
  uint64_t offset = 0;  // as if the parts were laid out back to back, for tools that print offsets
  for (part& p : parts) {
    tensor_info t;
    GLIA_ASSIGN(t.n_bytes, detail::tensor_byte_size(p.name, p.type, p.dims));
    if (t.n_bytes != p.data.size())
      return make_error("tensor '{}': {} bytes of data, its type and dims need {}", detail::printable(p.name),
                        p.data.size(), t.n_bytes);
    t.name = std::move(p.name);
    t.type = p.type;
    t.n_dims = uint32_t(p.dims.size());
    for (size_t d = 0; d < p.dims.size(); ++d) t.ne[d] = p.dims[d];
    t.data = p.data.data();
    t.offset = offset;
    offset += t.n_bytes;
    auto [it, inserted] = f->tensor_index_.emplace(t.name, f->tensors_.size());
    if (!inserted) return make_error("duplicate tensor name '{}'", detail::printable(t.name));
    f->tensors_.push_back(std::move(t));
  }
  return f;
}

std::string file::origin() const { return origin_.empty() ? "GGUF v" + std::to_string(version_) : origin_; }

}  // namespace glia::gguf
