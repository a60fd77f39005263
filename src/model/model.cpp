#include "model/model.h"

#include <regex>

#include "model/hf/hf_tensor_names.h"
#include "model/model_file.h"

namespace glia {

namespace {

// A message about a translated checkpoint names GGUF tensors; this says which of the checkpoint's
// tensors that is (whose shapes list the dimensions the other way round).
std::string in_checkpoint_terms(const std::string& message, const std::string& arch) {
  static const std::regex gguf_name(R"((blk\.\d+\.[a-z_]+\.(weight|bias)|token_embd\.weight|output_norm\.weight|output\.weight))");
  std::smatch match;
  if (!std::regex_search(message, match, gguf_name)) return {};
  const std::string hf_name = hf::checkpoint_tensor_name(match.str(), arch);
  if (hf_name.empty()) return {};
  return fmt::format(" ({} is the checkpoint's {}{})", match.str(), hf_name,
                     message.find("shape") != std::string::npos ? ", whose shape lists the dimensions in reverse order" : "");
}

}  // namespace

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
  const bool checkpoint = (*f)->is_assembled();
  const std::string arch = (*f)->get_string("general.architecture").value_or("");
  auto m = load_model(std::move(*f));
  if (!m) return make_error("{}: {}{}", path, m.message(), checkpoint ? in_checkpoint_terms(m.message(), arch) : "");
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
