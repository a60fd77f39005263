#include "model/hf/hf_checkpoint.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <limits>
#include <set>

#include "core/read_file.h"
#include "gguf/hf_keys.h"
#include "model/hf/hf_config.h"
#include "model/hf/hf_tensor_names.h"
#include "model/rope_rows.h"
#include "quant/types.h"
#include "safetensors/safetensors.h"

namespace glia::hf {

namespace {

namespace fs = std::filesystem;

// What the assembled file's tensors point into: the mapped shards and the converted copies.
struct checkpoint_data {
  std::vector<std::shared_ptr<const safetensors::file>> shards;
  std::deque<std::vector<uint8_t>> copies;  // a deque: growing it never moves a copy
  std::vector<std::shared_ptr<const std::string>> buffers;  // shards read into memory (no mmap)
};

// Messages name the file alone: the folder's path starts the message already.
result<std::string> read_text(const fs::path& p) {
  // read_whole_file would wait on a pipe for ever, or read a device until memory runs out (the
  // shards of --no-mmap come here; mapping refuses them itself).
  std::error_code ec;
  if (fs::exists(p, ec) && !fs::is_regular_file(p, ec)) return make_error("{}: not a regular file", p.filename().string());
  auto text = read_whole_file(p.string());
  if (!text && text.message().starts_with(p.string() + ": "))
    return make_error("{}: {}", p.filename().string(), text.message().substr(p.string().size() + 2));
  return text;
}

bool has_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// For a file that may be absent: a name that is there but is no regular file (a folder, a pipe, a
// broken link: a deleted blob of the Hugging Face cache) is an error, not the file missing.
status absent_or_regular(const fs::path& p) {
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(p, ec);
  if (ec || link.type() == fs::file_type::not_found || has_file(p)) return {};
  if (fs::is_symlink(link) && !fs::exists(p, ec))
    return make_error("{}: a broken symbolic link (a deleted blob of the Hugging Face cache?)", p.filename().string());
  return make_error("{}: not a regular file", p.filename().string());
}

// The weight files, in transformers' order of preference: model.safetensors, else the files
// model.safetensors.index.json's weight_map names, else every model*.safetensors (as llama.cpp's
// converter globs them: other *.safetensors, such as Mistral's consolidated.safetensors, hold the
// same weights in another layout).
result<std::vector<fs::path>> shard_paths(const fs::path& dir, json& weight_map) {
  GLIA_TRY(absent_or_regular(dir / "model.safetensors"));
  if (has_file(dir / "model.safetensors")) return std::vector<fs::path>{dir / "model.safetensors"};
  const fs::path index_path = dir / "model.safetensors.index.json";
  GLIA_TRY(absent_or_regular(index_path));
  if (has_file(index_path)) {
    GLIA_ASSIGN(const std::string text, read_text(index_path));
    GLIA_ASSIGN(const json index, parse_json_file(text, "model.safetensors.index.json"));
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      return make_error("model.safetensors.index.json: expected an object with a \"weight_map\" object");
    weight_map = index["weight_map"];
    std::set<std::string> files;
    for (const auto& [tensor, file] : weight_map.items()) {
      if (!file.is_string()) return make_error("model.safetensors.index.json: weight_map[\"{}\"] is not a file name", tensor);
      const std::string f = file.get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
        return make_error("model.safetensors.index.json: weight_map[\"{}\"] = \"{}\" is not a file name in this folder", tensor, f);
      files.insert(f);
    }
    if (files.empty()) return make_error("model.safetensors.index.json: weight_map is empty");
    std::vector<fs::path> out;
    for (const auto& f : files) out.push_back(dir / f);
    return out;
  }
  std::vector<fs::path> out;
  bool pytorch = false, other_safetensors = false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto ext = e.path().extension();
    if (ext == ".safetensors") (e.path().filename().string().starts_with("model") ? out.push_back(e.path()) : void(other_safetensors = true));
    pytorch |= ext == ".bin" || ext == ".pt" || ext == ".pth";
  }
  std::sort(out.begin(), out.end());
  if (!out.empty()) return out;
  if (pytorch)
    return make_error("the weights are PyTorch pickles (.bin/.pt), which glia does not read; it reads *.safetensors "
                      "(transformers saves them with save_pretrained(..., safe_serialization=True))");
  if (other_safetensors)
    return make_error("no model*.safetensors weights (the other *.safetensors files are not in transformers' layout)");
  return make_error("no *.safetensors weights in the folder");
}

result<uint32_t> ggml_type_of(const safetensors::tensor_info& t) {
  switch (t.type) {
    case safetensors::dtype::f32: return uint32_t(glia::dtype::f32);
    case safetensors::dtype::f16: return uint32_t(glia::dtype::f16);
    case safetensors::dtype::bf16: return uint32_t(glia::dtype::bf16);
    default:
      return make_error("tensor {} has dtype {}; glia reads F32, F16 and BF16 checkpoints (not quantized ones such "
                        "as GPTQ, AWQ or FP8)",
                        t.name, safetensors::dtype_name(t.type));
  }
}

std::span<const uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

struct translation {
  model_config cfg;
  std::vector<gguf::file::part> parts;
  std::shared_ptr<checkpoint_data> data = std::make_shared<checkpoint_data>();
  std::set<uint32_t> matrix_types;
  bool metadata_only = false;  // leave out the tensors that would be converted (copied)
  std::vector<int64_t> tied_head_dims;  // ggml order: an lm_head.weight left out for a tied head
};

// One checkpoint tensor into its GGUF part (converted when the GGUF conventions differ).
status add_tensor(const safetensors::tensor_info& t, const std::string& gguf_name, translation& tr) {
  GLIA_ASSIGN(uint32_t type, ggml_type_of(t));
  if (t.shape.empty()) return make_error("tensor {} is a scalar; a weight has at least one dimension", t.name);
  // Checked here as well as by assemble: the conversions below divide by dims and index rows.
  if (t.shape.size() > 4) return make_error("tensor {} has {} dimensions; weights have 1 to 4", t.name, t.shape.size());
  for (int64_t d : t.shape)
    if (d < 1) return make_error("tensor {} has shape [{}]; every dimension must be at least 1", t.name, fmt::join(t.shape, ", "));
  std::vector<int64_t> dims(t.shape.rbegin(), t.shape.rend());  // row-major shape -> ggml order
  std::span<const uint8_t> bytes(t.data, size_t(t.n_bytes));
  const family& fam = *tr.cfg.fam;
  if (tr.metadata_only && dims.size() == 1) return {};
  if (dims.size() == 1) {
    // Vectors become F32, as the converter writes them; Gemma's norms become 1 + w.
    std::vector<float> f(static_cast<size_t>(dims[0]));
    find_type(type)->dequantize_row(bytes.data(), f.data(), dims[0]);
    if (fam.norm_plus_one && gguf_name.ends_with("norm.weight"))
      for (float& x : f) x += 1.0f;
    auto& copy = tr.data->copies.emplace_back(as_bytes(f).begin(), as_bytes(f).end());
    tr.parts.push_back({gguf_name, uint32_t(glia::dtype::f32), std::move(dims), copy});
    return {};
  }
  tr.matrix_types.insert(type);
  tr.parts.push_back({gguf_name, type, std::move(dims), bytes});
  return {};
}

status add_shard(const std::string& file_name, const std::shared_ptr<const safetensors::file>& shard,
                 const json& weight_map, std::set<std::string>& seen, translation& tr) {
  tr.data->shards.push_back(shard);
  for (const auto& t : shard->tensors()) {
    if (!seen.insert(t.name).second) return make_error("{}: tensor {} is also in another shard", file_name, t.name);
    if (!weight_map.is_null()) {
      auto it = weight_map.find(t.name);
      if (it != weight_map.end() && *it != file_name)
        return make_error("{}: holds tensor {}, which model.safetensors.index.json places in {}", file_name, t.name, it->dump());
    }
    auto mapped = map_tensor_name(t.name, *tr.cfg.fam);
    if (!mapped)
      return make_error("{}: tensor {} is not part of a {} model as glia knows it", file_name, t.name, tr.cfg.fam->hf_arch);
    if (mapped->kind == name_kind::skipped) continue;
    // A layer the config does not count would be left out without a word (llama.cpp refuses such a file).
    if (mapped->layer >= tr.cfg.n_layer)
      return make_error("{}: tensor {} belongs to layer {}, but config.json says num_hidden_layers is {}", file_name, t.name,
                        mapped->layer, tr.cfg.n_layer);
    if (mapped->gguf == "output.weight" && tr.cfg.tied) {  // the head is the embedding
      tr.tied_head_dims.assign(t.shape.rbegin(), t.shape.rend());
      continue;
    }
    status s = add_tensor(t, mapped->gguf, tr);
    if (!s) return make_error("{}: {}", file_name, s.message());
  }
  return {};
}

// The folder's files besides config.json and the weights that translate() reads.
constexpr const char* kSideFiles[] = {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                                      "chat_template.json", "generation_config.json"};

const std::string* text_of(const checkpoint_files& files, std::string_view name) {
  for (const auto& [file, text] : files.texts)
    if (file == name) return &text;
  return nullptr;
}

// tokenizer.json, tokenizer_config.json and the chat templates travel as they are, for the tokenizer
// layer to read.
void add_tokenizer(const checkpoint_files& files, gguf::writer& md) {
  constexpr std::string_view named_dir = "additional_chat_templates/";
  for (const auto& [file, text] : files.texts) {
    if (file == "tokenizer.json") md.set_string(std::string(gguf::key_hf_tokenizer_json), text);
    if (file == "tokenizer_config.json") md.set_string(std::string(gguf::key_hf_tokenizer_config), text);
    if (file == "chat_template.jinja") md.set_string(std::string(gguf::key_hf_chat_template), text);
    if (file == "chat_template.json") md.set_string(std::string(gguf::key_hf_chat_template_json), text);
    if (file.starts_with(named_dir) && file.ends_with(".jinja"))
      md.set_string(fmt::format("{}.{}", gguf::key_hf_chat_template, file.substr(named_dir.size(), file.size() - named_dir.size() - 6)), text);
  }
}

// From config.json and generation_config.json: the end-of-generation ids (transformers stops at any
// eos_token_id, an id or a list of ids), the bos_token_id (for llama.cpp's keys where the tokenizer
// names no BOS, as its converter takes it) and generation_config's sampling settings, which become the
// model's sampling defaults (general.sampling.*) as vLLM applies them: those that differ from
// transformers' GenerationConfig defaults.
status add_generation_config(const json& config, const checkpoint_files& files, gguf::writer& md) {
  std::vector<int32_t> eos, bos;
  // The eos_token_id and bos_token_id of one JSON object.
  auto add_ids = [&](const json& j, std::string_view where) -> status {
    for (auto [key, ids] : {std::pair{"eos_token_id", &eos}, std::pair{"bos_token_id", &bos}}) {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) continue;
      const json list = it->is_array() ? *it : json::array({*it});
      for (const auto& id : list) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          return make_error("{}: {} must be a token id or a list of them, found {}", where, key, it->dump());
        // config.json and generation_config.json usually repeat each other: each id once.
        const auto value = int32_t(id.get<int64_t>());
        if (std::find(ids->begin(), ids->end(), value) == ids->end()) ids->push_back(value);
      }
    }
    return {};
  };
  GLIA_TRY(add_ids(config, "config.json"));
  if (config.contains("text_config") && config["text_config"].is_object()) GLIA_TRY(add_ids(config["text_config"], "config.json"));
  if (const std::string* text = text_of(files, "generation_config.json")) {
    GLIA_ASSIGN(const json j, parse_json_file(*text, "generation_config.json"));
    if (!j.is_object()) return make_error("generation_config.json: not a JSON object");
    GLIA_TRY(add_ids(j, "generation_config.json"));
    struct setting {
      const char* hf_key;
      const char* gguf_key;
      double transformers_default;  // NaN: none
    };
    constexpr setting settings[] = {{"temperature", "general.sampling.temp", 1.0},
                                    {"top_k", "general.sampling.top_k", 50.0},
                                    {"top_p", "general.sampling.top_p", 1.0},
                                    {"min_p", "general.sampling.min_p", std::numeric_limits<double>::quiet_NaN()},
                                    {"repetition_penalty", "general.sampling.penalty_repeat", 1.0}};
    for (const auto& [hf_key, gguf_key, fallback] : settings) {
      auto it = j.find(hf_key);
      if (it == j.end() || it->is_null()) continue;
      if (!it->is_number() || !std::isfinite(it->get<double>()))
        return make_error("generation_config.json: {} must be a number, found {}", hf_key, it->dump());
      const double v = it->get<double>();
      if (v == fallback) continue;
      if (std::string_view(hf_key) == "top_k") {
        md.set_i32(gguf_key, int32_t(std::clamp(v, -1.0, double(INT32_MAX))));
      } else {
        md.set_f32(gguf_key, float(v));
      }
    }
  }
  if (!eos.empty()) md.set_i32_array(std::string(gguf::key_hf_eos_token_ids), eos);
  if (!bos.empty()) md.set_i32(std::string(gguf::key_hf_bos_token_id), bos.front());
  return {};
}

// general.file_type as the converter sets it when every matrix has one type.
void set_file_type(const std::set<uint32_t>& types, gguf::writer& md) {
  if (types.size() != 1) return;
  const auto t = glia::dtype(*types.begin());
  if (t == glia::dtype::f32) md.set_u32("general.file_type", 0);
  if (t == glia::dtype::f16) md.set_u32("general.file_type", 1);
  if (t == glia::dtype::bf16) md.set_u32("general.file_type", 32);
}

// A folder of the Hugging Face cache (models--org--name/snapshots/<revision>) is named org/name.
std::string model_name_of(const fs::path& dir) {
  fs::path normal = fs::absolute(dir).lexically_normal();
  if (normal.filename().empty()) normal = normal.parent_path();  // "dir/"
  const fs::path parent = normal.parent_path();
  const std::string repo = parent.parent_path().filename().string();
  if (parent.filename() == "snapshots" && repo.starts_with("models--")) {
    std::string name = repo.substr(8);
    if (const size_t sep = name.find("--"); sep != std::string::npos) name.replace(sep, 2, "/");
    return name;
  }
  return normal.filename().string();
}

result<std::shared_ptr<const safetensors::file>> open_shard(const fs::path& p, bool use_mmap, checkpoint_files& files) {
  if (use_mmap) {
    auto shard = safetensors::file::open(p.string());
    if (!shard) return make_error("{}", shard.message());
    return std::shared_ptr<const safetensors::file>(std::move(*shard));
  }
  GLIA_ASSIGN(std::string text, read_text(p));
  auto buffer = std::make_shared<const std::string>(std::move(text));
  files.buffers.push_back(buffer);
  auto shard = safetensors::file::from_memory({reinterpret_cast<const uint8_t*>(buffer->data()), buffer->size()});
  if (!shard) return make_error("{}: {}", p.filename().string(), shard.message());
  return std::shared_ptr<const safetensors::file>(std::move(*shard));
}

result<checkpoint_files> read_dir(const fs::path& dir, bool use_mmap) {
  // transformers loads such an adapter onto the model; running the bare weights would answer differently.
  GLIA_TRY(absent_or_regular(dir / "adapter_config.json"));
  if (has_file(dir / "adapter_config.json"))
    return make_error("adapter_config.json: a PEFT (LoRA) adapter sits beside the model, which transformers would apply "
                      "and glia does not; merge it into the weights (peft's merge_and_unload) or move it out of the folder");
  checkpoint_files files;
  files.name = model_name_of(dir);
  GLIA_ASSIGN(files.config_json, read_text(dir / "config.json"));
  GLIA_ASSIGN(auto paths, shard_paths(dir, files.weight_map));
  for (const auto& p : paths) {
    GLIA_ASSIGN(auto shard, open_shard(p, use_mmap, files));
    files.shards.emplace_back(p.filename().string(), std::move(shard));
  }
  for (const char* file : kSideFiles) {
    GLIA_TRY(absent_or_regular(dir / file));
    if (!has_file(dir / file)) continue;
    GLIA_ASSIGN(std::string text, read_text(dir / file));
    files.texts.emplace_back(file, std::move(text));
  }
  // Named chat templates as newer transformers save them (additional_chat_templates/tool_use.jinja).
  for (const auto& p : files_with_extension(dir / "additional_chat_templates", ".jinja")) {
    GLIA_ASSIGN(std::string text, read_text(p));
    files.texts.emplace_back("additional_chat_templates/" + p.filename().string(), std::move(text));
  }
  return files;
}

const gguf::file::part* find_part(const translation& tr, std::string_view name) {
  for (const auto& p : tr.parts)
    if (p.name == name) return &p;
  return nullptr;
}

// transformers builds the embedding (and an untied head) with config.json's vocab_size rows and
// refuses weights of another shape; a tied head is the embedding, so an lm_head.weight beside it must
// have its shape to be the same matrix.
status check_vocabulary_rows(const json& config, const translation& tr) {
  const gguf::file::part* embd = find_part(tr, "token_embd.weight");
  if (!embd || embd->dims.size() != 2) return {};
  const json& text = config.contains("text_config") && config["text_config"].is_object() ? config["text_config"] : config;
  if (auto v = text.find("vocab_size"); v != text.end() && v->is_number_integer() && v->get<int64_t>() != embd->dims[1])
    return make_error("config.json: vocab_size is {}, but the embedding has {} rows", v->get<int64_t>(), embd->dims[1]);
  if (!tr.tied_head_dims.empty() && tr.tied_head_dims != embd->dims)
    return make_error("lm_head.weight is [{}] but config.json ties it to the embedding, which is [{}, {}]",
                      fmt::join(tr.tied_head_dims.rbegin(), tr.tied_head_dims.rend(), ", "), embd->dims[1], embd->dims[0]);
  return {};
}

}  // namespace

result<std::shared_ptr<gguf::file>> translate(const checkpoint_files& files, bool metadata_only) {
  GLIA_ASSIGN(const json config, parse_json_file(files.config_json, "config.json"));
  translation tr;
  tr.metadata_only = metadata_only;
  GLIA_ASSIGN(tr.cfg, read_model_config(config, files.name));
  std::set<std::string> seen;
  uint64_t source_bytes = 0;
  for (const auto& [file_name, shard] : files.shards) {
    GLIA_TRY(add_shard(file_name, shard, files.weight_map, seen, tr));
    source_bytes += shard->size();
  }
  if (files.weight_map.is_object())
    for (const auto& [name, file] : files.weight_map.items())
      if (!seen.count(name)) return make_error("model.safetensors.index.json: tensor {} is not in {}", name, file.dump());
  if (!metadata_only && !tr.cfg.tied && !find_part(tr, "output.weight"))
    return make_error("the checkpoint has no lm_head.weight, and config.json does not tie it to the embedding "
                      "(tie_word_embeddings is {})", tr.cfg.tied_given ? "false" : "absent");
  GLIA_TRY(check_vocabulary_rows(config, tr));
  if (!tr.cfg.rope_freq_factors.empty()) {
    const auto& f = tr.cfg.rope_freq_factors;
    auto& copy = tr.data->copies.emplace_back(as_bytes(f).begin(), as_bytes(f).end());
    tr.parts.push_back({"rope_freqs.weight", uint32_t(glia::dtype::f32), {int64_t(f.size())}, copy});
  }
  // Q and K stay in the checkpoint's row order (no copy): the model rotates them NeoX-style, and
  // quantize interleaves them as the converter does (model/rope_rows.h).
  if (tr.cfg.fam->mark_qk_checkpoint_order) tr.cfg.metadata.set_bool(std::string(key_rope_checkpoint_order), true);
  set_file_type(tr.matrix_types, tr.cfg.metadata);
  add_tokenizer(files, tr.cfg.metadata);
  GLIA_TRY(add_generation_config(config, files, tr.cfg.metadata));
  // The vocabulary size as the converter writes it: the tokenizer leaves out added tokens past it.
  if (const gguf::file::part* embd = find_part(tr, "token_embd.weight"); embd && embd->dims.size() == 2)
    tr.cfg.metadata.set_u32(std::string(tr.cfg.fam->gguf_arch) + ".vocab_size", uint32_t(embd->dims[1]));
  tr.data->buffers = files.buffers;
  auto metadata = tr.cfg.metadata.metadata();
  const size_t n = tr.data->shards.size();
  std::vector<std::span<const uint8_t>> mappings;
  for (const auto& shard : tr.data->shards)
    if (shard->is_mapped()) mappings.push_back(shard->bytes());
  return gguf::file::assemble(std::move(metadata), std::move(tr.parts), tr.data, source_bytes,
                              fmt::format("Hugging Face checkpoint, {} safetensors file{}", n, n == 1 ? "" : "s"),
                              std::move(mappings));
}

result<std::string> checkpoint_folder(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (p.filename() == "config.json") {
    if (!fs::is_regular_file(p, ec)) return make_error("{}: no such file", path);
    return (p.has_parent_path() ? p.parent_path() : fs::path(".")).string();
  }
  if (!fs::is_directory(p, ec)) return make_error("{}: not a folder", path);
  if (has_file(p / "config.json")) return path;
  // The Hugging Face cache's repository folder: the revision refs/main names, else its only snapshot.
  if (fs::is_directory(p / "snapshots", ec)) {
    if (has_file(p / "refs" / "main")) {
      GLIA_ASSIGN(std::string rev, read_text(p / "refs" / "main"));
      while (!rev.empty() && std::isspace(static_cast<unsigned char>(rev.back()))) rev.pop_back();
      if (rev.empty() || rev.find('/') != std::string::npos || rev == "." || rev == ".." || !fs::is_directory(p / "snapshots" / rev, ec))
        return make_error("{}: refs/main names revision '{}', which is not a folder in snapshots/", path, rev);
      return (p / "snapshots" / rev).string();
    }
    std::vector<std::string> revs;
    for (const auto& e : fs::directory_iterator(p / "snapshots", ec))
      if (e.is_directory(ec)) revs.push_back(e.path().filename().string());
    std::sort(revs.begin(), revs.end());
    if (revs.size() == 1) return (p / "snapshots" / revs[0]).string();
    if (revs.empty()) return make_error("{}: a Hugging Face cache folder without snapshots", path);
    return make_error("{}: a Hugging Face cache folder with several snapshots ({}) and no refs/main; give one of them",
                      path, fmt::join(revs, ", "));
  }
  if (has_file(p / "adapter_config.json"))
    return make_error("{}: a PEFT adapter (adapter_config.json), not a whole model; merge it into its base model first", path);
  if (has_file(p / "params.json"))
    return make_error("{}: a checkpoint in Mistral's own layout (params.json); glia reads the transformers layout (config.json)", path);
  if (const auto link = fs::symlink_status(p / "config.json", ec); fs::exists(link)) {
    if (fs::is_symlink(link) && !fs::exists(p / "config.json", ec))
      return make_error("{}: its config.json is a broken symbolic link (a deleted blob of the Hugging Face cache?)", path);
    return make_error("{}: its config.json is not a regular file", path);
  }
  return make_error("{}: a folder, but not a Hugging Face checkpoint (no config.json)", path);
}

result<std::shared_ptr<gguf::file>> open_checkpoint(const std::string& path, bool use_mmap, bool metadata_only) {
  GLIA_ASSIGN(const std::string dir, checkpoint_folder(path));
  auto files = read_dir(dir, use_mmap);
  if (!files) return make_error("{}: {}", path, files.message());
  auto f = translate(*files, metadata_only);
  if (!f) return make_error("{}: {}", path, f.message());
  return f;
}

}  // namespace glia::hf
