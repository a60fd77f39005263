#include "tokenizer/vocab_hf.h"

#include <zlib.h>

#include <algorithm>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/json_scan.h"

namespace glia::tok {

namespace {

using json = nlohmann::json;

// The largest vocabulary accepted; ids beyond it are treated as malformed rather than allocated.
constexpr int64_t max_vocab = 1 << 24;

// A token given as "text" or as {"content": "text", ...} (tokenizer_config.json writes both).
std::string token_text_of(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object())
    if (auto c = j.find("content"); c != j.end() && c->is_string()) return c->get<std::string>();
  return {};
}

status add_token(vocab& v, int64_t id, const std::string& text, std::string_view where) {
  if (id < 0 || id >= max_vocab) return make_error("{}: id {} of '{}' is outside 0..{}", where, id, text, max_vocab - 1);
  if (text.empty()) return make_error("{}: id {} has an empty text", where, id);
  if (static_cast<size_t>(id) >= v.tokens.size()) v.tokens.resize(static_cast<size_t>(id) + 1, token_data{"", 0.0f, token_attr::unused});
  token_data& t = v.tokens[static_cast<size_t>(id)];
  if (!t.text.empty() && t.text != text)
    return make_error("{}: id {} is both '{}' and '{}'", where, id, t.text, text);
  t.text = text;
  t.attr = token_attr::normal;
  return {};
}

// The two large members, read straight from the document text (see json_scan.h).
struct big_members {
  std::string_view doc;
  std::optional<json_scan::span> vocab, merges;
};

status read_model_vocab(const big_members& b, vocab& v) {
  if (!b.vocab) return make_error("model.vocab: missing");
  v.tokens.reserve(50000);
  auto s = json_scan::for_each_text_id(b.doc, *b.vocab, [&](std::string&& text, int64_t id) -> status {
    return add_token(v, id, text, "model.vocab");
  });
  if (!s) return s.message().starts_with("model.vocab") ? s : make_error("model.vocab: {}", s.message());  // once
  return {};
}

status read_merges(const big_members& b, vocab& v) {
  if (!b.merges) return {};  // a BPE without merges: characters only
  if (b.doc.substr(b.merges->begin, 4) == "null") return {};
  auto s = json_scan::for_each_merge(b.doc, *b.merges, [&](size_t, std::string&& l, std::string&& r) -> status {
    v.merges.emplace_back(std::move(l), std::move(r));
    return {};
  });
  if (!s) return s.message().starts_with("model.") ? s : make_error("model.merges: {}", s.message());
  return {};
}

status read_model(const json& model, const big_members& b, vocab& v) {
  if (!model.is_object()) return make_error("model: missing or not an object");
  std::string type = "BPE";
  if (auto t = model.find("type"); t != model.end()) {
    if (!t->is_string()) return make_error("model.type: expected a string");
    type = t->get<std::string>();
  }
  if (type != "BPE") return make_error("model.type = '{}': unsupported (supported: BPE)", type);
  v.model = "hf:BPE";
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      return make_error("model.{} = {}: not supported", key, it->dump());
  }
  auto flag = [&](const char* key, bool& out) -> status {
    auto it = model.find(key);
    if (it == model.end() || it->is_null()) return {};
    if (!it->is_boolean()) return make_error("model.{}: expected a boolean, found {}", key, it->dump());
    out = it->get<bool>();
    return {};
  };
  GLIA_TRY(flag("byte_fallback", v.pipeline.byte_fallback));
  GLIA_TRY(flag("ignore_merges", v.pipeline.ignore_merges));
  GLIA_TRY(read_model_vocab(b, v));
  GLIA_TRY(read_merges(b, v));
  return {};
}

status read_added_tokens(const json& root, vocab& v) {
  const auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return {};
  if (!it->is_array()) return make_error("added_tokens: expected an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& a = (*it)[i];
    const std::string where = fmt::format("added_tokens[{}]", i);
    if (!a.is_object()) return make_error("{}: expected an object", where);
    auto id = a.find("id");
    auto content = a.find("content");
    if (id == a.end() || !id->is_number_integer()) return make_error("{}: \"id\" must be an integer", where);
    if (content == a.end() || !content->is_string()) return make_error("{}: \"content\" must be a string", where);
    const int64_t n = id->get<int64_t>();
    const std::string text = content->get<std::string>();
    // An added token may restate a vocabulary entry or replace the text at its id (tokenizers lets the
    // added token win).
    if (n >= 0 && n < static_cast<int64_t>(v.tokens.size())) v.tokens[static_cast<size_t>(n)].text.clear();
    GLIA_TRY(add_token(v, n, text, where));
    auto flag = [&](const char* key) {
      auto f = a.find(key);
      return f != a.end() && f->is_boolean() && f->get<bool>();
    };
    token_attr attr = flag("special") ? token_attr::control : token_attr::user_defined;
    if (flag("lstrip")) attr = attr | token_attr::lstrip;
    if (flag("rstrip")) attr = attr | token_attr::rstrip;
    v.tokens[static_cast<size_t>(n)].attr = attr;
  }
  return {};
}

// text -> id; ids whose entries are holes stay out of the map.
status index_tokens(vocab& v) {
  if (v.tokens.empty()) return make_error("model.vocab: is empty");
  size_t holes = 0;
  v.ids.reserve(v.tokens, v.tokens.size());
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i].text.empty()) {
      ++holes;
      continue;
    }
    // A text listed under two ids: the later (an added token's) wins, as in tokenizers.
    v.ids.assign(v.tokens, static_cast<int32_t>(i));
  }
  if (holes > v.tokens.size() / 2 + 1024)
    return make_error("model.vocab: ids up to {} but only {} tokens", v.tokens.size() - 1, v.tokens.size() - holes);
  return {};
}

int32_t id_of_config_token(const vocab& v, const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return no_token;
  const std::string text = token_text_of(*it);
  return text.empty() ? no_token : v.find(text);
}

status resolve_template(const vocab& v, const template_spec& t, std::vector<int32_t>& prefix,
                        std::vector<int32_t>& suffix) {
  for (const auto* side : {&t.prefix, &t.suffix}) {
    for (const std::string& text : *side) {
      const int32_t id = v.find(text);
      if (id == no_token) return make_error("post_processor: special token '{}' is not in the vocabulary", text);
      (side == &t.prefix ? prefix : suffix).push_back(id);
    }
  }
  return {};
}

status read_config(const json& config, vocab& v, const template_spec& tmpl) {
  v.bos = id_of_config_token(v, config, "bos_token");
  v.eos = id_of_config_token(v, config, "eos_token");
  v.unk = id_of_config_token(v, config, "unk_token");
  v.pad = id_of_config_token(v, config, "pad_token");
  // transformers' Llama and Gemma tokenizer classes (and CodeLlama's) rebuild the post-processor from
  // tokenizer_config's add_bos_token / add_eos_token (defaults true / false) whatever tokenizer.json
  // holds, as llama.cpp's converter reads them, with the class's own BOS / EOS where the config names
  // none; other classes keep tokenizer.json's template, and without one follow the flags (default
  // false). These classes also default clean_up_tokenization_spaces to false.
  std::string cls;
  if (auto it = config.find("tokenizer_class"); it != config.end() && it->is_string()) cls = it->get<std::string>();
  if (cls.ends_with("Fast")) cls.resize(cls.size() - 4);
  const bool gemma = cls == "GemmaTokenizer";
  const bool flags_rule = cls == "LlamaTokenizer" || gemma || cls == "CodeLlamaTokenizer";
  if (flags_rule && v.bos == no_token && !config.contains("bos_token")) v.bos = v.find(gemma ? "<bos>" : "<s>");
  if (flags_rule && v.eos == no_token && !config.contains("eos_token")) v.eos = v.find(gemma ? "<eos>" : "</s>");
  bool clean = !flags_rule;  // transformers' default
  if (auto it = config.find("clean_up_tokenization_spaces"); it != config.end() && it->is_boolean()) clean = it->get<bool>();
  v.pipeline.cleanup = clean ? cleanup_style::hf : cleanup_style::none;
  if (tmpl.present && !flags_rule) {
    GLIA_TRY(resolve_template(v, tmpl, v.prefix_ids, v.suffix_ids));
  } else {
    auto flag = [&](const char* key, bool fallback) {
      auto it = config.find(key);
      return it != config.end() && it->is_boolean() ? it->get<bool>() : fallback;
    };
    if (flag("add_bos_token", flags_rule)) {
      if (v.bos == no_token) return make_error("tokenizer_config.json: add_bos_token is true but bos_token is not a token");
      v.prefix_ids = {v.bos};
    }
    if (flag("add_eos_token", false)) {
      if (v.eos == no_token) return make_error("tokenizer_config.json: add_eos_token is true but eos_token is not a token");
      v.suffix_ids = {v.eos};
    }
  }
  v.add_bos = !v.prefix_ids.empty() && v.prefix_ids.front() == v.bos;
  v.add_eos = !v.suffix_ids.empty() && v.suffix_ids.back() == v.eos;
  return {};
}

result<vocab> load(const json& root, const big_members& big, const json& config, int64_t n_embedding_rows) {
  if (!root.is_object()) return make_error("tokenizer.json: expected a JSON object");
  vocab v;
  v.kind = vocab_kind::bpe;
  v.matching = special_match::leftmost_longest;
  v.merges_last_wins = true;
  pipeline_spec& p = v.pipeline;
  p.dialect = regex_dialect::ecmascript;
  p.repair = repair_mode::maximal_subpart;
  p.missing = missing_piece::hf;
  p.hf_decode = true;

  const auto model = root.find("model");
  if (model == root.end()) return make_error("tokenizer.json: \"model\" is missing");
  GLIA_TRY(read_model(*model, big, v));
  const size_t n_model_tokens = v.tokens.size();
  GLIA_TRY(read_added_tokens(root, v));
  if (n_embedding_rows > 0 && v.tokens.size() > size_t(n_embedding_rows)) {
    if (n_model_tokens > size_t(n_embedding_rows))
      return make_error("tokenizer.json: model.vocab has ids up to {}, but the model's embedding has only {} rows",
                        n_model_tokens - 1, n_embedding_rows);
    // Added tokens past the embedding (Gemma 3 1B's <image_soft_token>) could never be evaluated;
    // llama.cpp's converter leaves them out too, so their text is tokenized as text.
    v.tokens.resize(size_t(n_embedding_rows));
  }
  GLIA_TRY(index_tokens(v));

  auto part = [&](const char* key) -> const json& {
    static const json null_json;
    auto it = root.find(key);
    return it == root.end() ? null_json : *it;
  };
  GLIA_TRY(parse_normalizer(part("normalizer"), p.normalizers));
  GLIA_TRY(parse_pre_tokenizer(part("pre_tokenizer"), p.pre_tokenizers));
  GLIA_TRY(parse_decoder(part("decoder"), p.decoders));
  p.has_decoder = !part("decoder").is_null();
  template_spec tmpl;
  GLIA_TRY(parse_post_processor(part("post_processor"), tmpl));

  // The model's unk_token is the <unk> BPE falls back to.
  if (auto u = model->find("unk_token"); u != model->end() && u->is_string()) {
    v.unk = v.find(u->get<std::string>());
  }
  const int32_t model_unk = v.unk;
  GLIA_TRY(read_config(config, v, tmpl));
  if (model_unk != no_token) v.unk = model_unk;

  detect_eog(v, false);
  build_special_cache(v);
  build_byte_table(v);
  return v;
}

// Finds model.vocab and model.merges in the document; the rest of the document (those two replaced
// by empty values) is small enough for nlohmann::json.
result<big_members> find_big_members(std::string_view doc, std::string& rest) {
  big_members b;
  b.doc = doc;
  const std::string_view root_keys[] = {"model"};
  std::optional<json_scan::span> model[1];
  if (auto s = json_scan::find_members(doc, 0, root_keys, model); !s) return make_error("tokenizer.json: {}", s.message());
  if (model[0] && doc[model[0]->begin] == '{') {
    const std::string_view keys[] = {"vocab", "merges"};
    std::optional<json_scan::span> found[2];
    if (auto s = json_scan::find_members(doc, model[0]->begin, keys, found); !s)
      return make_error("tokenizer.json: model: {}", s.message());
    b.vocab = found[0];
    b.merges = found[1];
  }
  std::vector<std::pair<json_scan::span, std::string_view>> cuts;
  if (b.vocab) cuts.push_back({*b.vocab, "{}"});
  if (b.merges) cuts.push_back({*b.merges, "[]"});
  std::sort(cuts.begin(), cuts.end(), [](const auto& x, const auto& y) { return x.first.begin < y.first.begin; });
  rest.clear();
  size_t pos = 0;
  for (const auto& [s, empty] : cuts) {
    rest.append(doc.substr(pos, s.begin - pos));
    rest.append(empty);
    pos = s.end;
  }
  rest.append(doc.substr(pos));
  return b;
}

}  // namespace

result<vocab> load_vocab_from_hf_json(std::string_view tokenizer_json, std::string_view config_json,
                                      int64_t n_embedding_rows) {
  if (const auto nul = json_nul_byte(tokenizer_json)) return make_error("tokenizer.json: not valid JSON (a NUL byte at offset {})", *nul);
  if (const auto nul = json_nul_byte(config_json))
    return make_error("tokenizer_config.json: not valid JSON (a NUL byte at offset {})", *nul);
  std::string rest;
  auto big = find_big_members(tokenizer_json, rest);
  if (!big) return big.take_error();
  const json root = json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return make_error("tokenizer.json: not valid JSON");
  json config = json::object();
  if (!config_json.empty()) {
    config = json::parse(config_json, nullptr, false);
    if (config.is_discarded() || !config.is_object()) return make_error("tokenizer_config.json: not a JSON object");
  }
  try {
    return load(root, *big, config, n_embedding_rows);
  } catch (const json::exception& e) {  // a member of an unexpected type that a check above missed
    return make_error("tokenizer.json: {}", e.what());
  }
}

result<std::string> read_file_maybe_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return make_error("{}: cannot open", path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int errnum = 0;
      std::string msg = gzerror(f, &errnum);
      gzclose(f);
      return make_error("{}: read error ({})", path, msg);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (size_t(1) << 31)) {
      gzclose(f);
      return make_error("{}: larger than 2 GiB", path);
    }
  }
  gzclose(f);
  return out;
}

}  // namespace glia::tok
