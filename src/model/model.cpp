#include "model/model.h"

#include "model/hf/hf_tensor_names.h"
#include "model/model_file.h"

namespace glia {


result<std::shared_ptr<const model>> load_model(std::shared_ptr<gguf::file> file) {
  auto profile = profile_from_gguf(*file);
  if (!profile) return profile.take_error();
  auto weights = bind_weights(*file, *profile);
  if (!weights) return weights.take_error();
  auto m = std::make_shared<model>();
  m->file = std::move(file);
  m->profile = std::move(*profile);
  m->weights = std::move(*weights);
  return std::shared_ptr<const model>(std::move(m));
}

result<std::shared_ptr<const model>> load_model(const std::string& path, const load_options& opts) {
  auto f = open_model_file(path, opts.use_mmap, opts.progress);
  if (!f) return f.take_error();  // its messages name the path already
  std::shared_ptr<gguf::file> file = std::move(*f);
  auto m = load_model(file);
  if (!m) return make_error("{}: {}{}", path, m.message(), hf::in_checkpoint_terms(m.message(), *file));
  return m;
}

size_t model::decode_weight_bytes() const {
  auto bytes = [](const weight_view& w) { return w.data ? w.row_stride * size_t(w.n_out) : size_t(0); };
  // Small vectors are read as the floats they were converted to at load.
  auto floats = [](const std::vector<float>& v) { return v.size() * sizeof(float); };
  size_t total = weights.token_embd.row_stride + bytes(weights.output) + floats(weights.output_norm) +
                 floats(weights.rope_freqs);
  for (const auto& l : weights.layers) {
    for (const weight_view* w : l.matrices()) total += bytes(*w);
    for (const auto* v : l.vectors()) total += floats(*v);
    if (l.output_scale) total += sizeof(float);
  }
  return total;
}

}  // namespace glia
