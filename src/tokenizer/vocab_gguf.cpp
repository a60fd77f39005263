// Loading tokenizer.ggml.* into a vocab. Defaults, id handling and the text-based fixups follow
// llama.cpp's llama_vocab::load so that the same file tokenizes the same way in both engines.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <span>
#include <string_view>

#include "gguf/gguf.h"
#include "gguf/hf_keys.h"
#include "tokenizer/pre_table.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_hf.h"

namespace glia::tok {

namespace {

constexpr std::string_view k_model = "tokenizer.ggml.model";
constexpr std::string_view k_tokens = "tokenizer.ggml.tokens";
constexpr std::string_view k_scores = "tokenizer.ggml.scores";
constexpr std::string_view k_types = "tokenizer.ggml.token_type";
constexpr std::string_view k_merges = "tokenizer.ggml.merges";
constexpr std::string_view k_pre = "tokenizer.ggml.pre";

void sort_unique(std::vector<int32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

// Fetches an optional array key and checks its element type and length (n_expected 0: any length).
result<const std::vector<gguf::value>*> get_array(const gguf::file& f, std::string_view key,
                                                  std::initializer_list<gguf::value_type> elem_types,
                                                  size_t n_expected) {
  const gguf::value* v = f.find(key);
  if (!v) return static_cast<const std::vector<gguf::value>*>(nullptr);
  if (v->type != gguf::value_type::array || !v->as_array())
    return make_error("{}: expected an array, found {}", key, gguf::value_type_name(v->type));
  if (std::find(elem_types.begin(), elem_types.end(), v->elem_type) == elem_types.end()) {
    std::string want;
    for (auto t : elem_types) want += fmt::format("{}{}", want.empty() ? "" : " or ", gguf::value_type_name(t));
    return make_error("{}: expected an array of {}, found an array of {}", key, want,
                      gguf::value_type_name(v->elem_type));
  }
  const auto* arr = v->as_array();
  if (n_expected != 0 && arr->size() != n_expected)
    return make_error("{}: has {} entries but {} has {}", key, arr->size(), k_tokens, n_expected);
  return arr;
}

status read_tokens(const gguf::file& f, vocab& v) {
  auto arr = get_array(f, k_tokens, {gguf::value_type::string}, 0);
  if (!arr) return arr.take_error();
  if (!*arr) return make_error("{}: missing (the file has no vocabulary)", k_tokens);
  const auto& elems = **arr;
  if (elems.empty()) return make_error("{}: is empty", k_tokens);
  if (elems.size() > size_t(INT32_MAX)) return make_error("{}: {} entries is too many", k_tokens, elems.size());

  v.tokens.resize(elems.size());
  v.ids.reserve(v.tokens, elems.size());
  for (size_t i = 0; i < elems.size(); ++i) {
    const std::string* s = elems[i].as_string();
    if (!s) return make_error("{}[{}]: not a string", k_tokens, i);
    // llama.cpp renames empty texts so that they stay unique and never match input.
    std::string text = s->empty() ? fmt::format("[EMPTY_{}]", i) : *s;
    v.tokens[i].text = std::move(text);
    const int32_t first = v.ids.insert(v.tokens, static_cast<int32_t>(i));
    if (first != static_cast<int32_t>(i))
      return make_error("{}: duplicate token text '{}' at ids {} and {}", k_tokens, v.tokens[i].text, first, i);
  }
  return {};
}

status read_scores(const gguf::file& f, vocab& v) {
  // llama.cpp also accepts integer scores.
  auto arr = get_array(f, k_scores, {gguf::value_type::f32, gguf::value_type::i32}, v.tokens.size());
  if (!arr) return arr.take_error();
  if (!*arr) return {};  // absent: every score 0, as in llama.cpp
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    auto s = (**arr)[i].as_float();
    if (!s || std::isnan(*s)) return make_error("{}[{}]: not a number", k_scores, i);
    v.tokens[i].score = static_cast<float>(*s);
  }
  return {};
}

token_attr attr_of(token_type t) {
  switch (t) {
    case token_type::normal: return token_attr::normal;
    case token_type::unknown: return token_attr::unknown;
    case token_type::control: return token_attr::control;
    case token_type::user_defined: return token_attr::user_defined;
    case token_type::unused: return token_attr::unused;
    case token_type::byte: return token_attr::byte;
    case token_type::undefined: break;
  }
  return token_attr::undefined;
}

status read_types(const gguf::file& f, vocab& v) {
  auto arr = get_array(f, k_types, {gguf::value_type::i32}, v.tokens.size());
  if (!arr) return arr.take_error();
  if (!*arr) return {};  // absent: every token normal
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    auto t = (**arr)[i].as_int();
    if (!t || *t < 0 || *t > 6)
      return make_error("{}[{}] = {}: not a token type (0..6)", k_types, i, t ? std::to_string(*t) : "?");
    v.tokens[i].attr = attr_of(static_cast<token_type>(*t));
    if (*t == static_cast<int>(token_type::byte) && parse_byte_token(v.tokens[i].text) < 0)
      return make_error("{}[{}] = '{}': token type 6 (byte) needs a text of the form <0xNN>", k_tokens, i,
                        v.tokens[i].text);
  }
  return {};
}

// Special ids. A stored 0xFFFFFFFF (or -1) means "none" and keeps the default, like llama.cpp; any
// other id outside the vocabulary is an error when `strict`, else ignored (llama.cpp warns and keeps
// the default: real files carry e.g. padding ids equal to the vocabulary size).
status read_special_id(const gguf::file& f, std::string_view key, int32_t& id, bool strict, int32_t n) {
  if (id >= n) id = no_token;  // a default outside a small vocabulary is disabled
  const gguf::value* v = f.find(key);
  if (!v) return {};
  if (!v->is_integer()) return make_error("{}: expected an integer id, found {}", key, gguf::value_type_name(v->type));
  const auto x = v->as_int();  // nullopt: a u64 above INT64_MAX
  if (x && (*x == -1 || *x == 0xFFFFFFFFll)) return {};
  if (!x || *x < 0 || *x >= n) {
    if (strict)
      return make_error("{} = {}: outside the vocabulary (n_vocab {})", key, x ? std::to_string(*x) : "> INT64_MAX", n);
    return {};
  }
  id = static_cast<int32_t>(*x);
  return {};
}

status read_flag(const gguf::file& f, std::string_view key, bool& flag) {
  const gguf::value* v = f.find(key);
  if (!v) return {};
  auto b = v->as_bool();
  if (v->type != gguf::value_type::boolean || !b)
    return make_error("{}: expected a bool, found {}", key, gguf::value_type_name(v->type));
  flag = *b;
  return {};
}

// Defaults by model (llama.cpp): SentencePiece <unk> 0, <s> 1, </s> 2, BOS added, space prefix on;
// byte-level BPE BOS = EOS = 11 (GPT-2's convention), nothing added unless the pre-tokenizer says so;
// gemma4 no defaults.
status read_specials(const gguf::file& f, vocab& v, const pre_type* pre) {
  const int32_t n = v.size();
  if (v.kind == vocab_kind::spm) {
    v.unk = 0, v.bos = 1, v.eos = 2;
    v.add_bos = true, v.add_eos = false, v.add_space_prefix = true;
  } else {
    if (v.model == "gpt2") v.bos = 11, v.eos = 11;
    if (pre && pre->no_bos) v.bos = no_token;
    v.add_bos = pre && pre->add_bos;
    v.add_eos = false, v.add_space_prefix = false;
  }
  GLIA_TRY(read_special_id(f, "tokenizer.ggml.bos_token_id", v.bos, true, n));
  GLIA_TRY(read_special_id(f, "tokenizer.ggml.eos_token_id", v.eos, true, n));
  GLIA_TRY(read_special_id(f, "tokenizer.ggml.unknown_token_id", v.unk, true, n));
  GLIA_TRY(read_special_id(f, "tokenizer.ggml.eot_token_id", v.eot, true, n));
  GLIA_TRY(read_special_id(f, "tokenizer.ggml.eom_token_id", v.eom, true, n));
  GLIA_TRY(read_special_id(f, "tokenizer.ggml.padding_token_id", v.pad, false, n));
  // FIM markers by id, as llama.cpp reads them: the current keys, then the deprecated prefix/suffix/
  // middle ones (which win where both are set); an id outside the vocabulary is left out, not an
  // error (only /infill reads them).
  for (const auto& [key, id] : {std::pair<const char*, int32_t*>{"tokenizer.ggml.fim_pre_token_id", &v.fim_pre},
                                {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf}, {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid},
                                {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad}, {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep},
                                {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep}, {"tokenizer.ggml.prefix_token_id", &v.fim_pre},
                                {"tokenizer.ggml.suffix_token_id", &v.fim_suf}, {"tokenizer.ggml.middle_token_id", &v.fim_mid}})
    GLIA_TRY(read_special_id(f, key, *id, false, n));
  GLIA_TRY(read_flag(f, "tokenizer.ggml.add_bos_token", v.add_bos));
  GLIA_TRY(read_flag(f, "tokenizer.ggml.add_eos_token", v.add_eos));
  GLIA_TRY(read_flag(f, "tokenizer.ggml.add_space_prefix", v.add_space_prefix));
  if (v.model == "gemma4") v.add_bos = true;  // llama.cpp forces it for Gemma 4
  if (v.add_bos && v.bos == no_token)
    return make_error("tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set");
  if (v.add_eos && v.eos == no_token)
    return make_error("tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set");
  if (v.add_bos) v.prefix_ids = {v.bos};
  if (v.add_eos) v.suffix_ids = {v.eos};
  return {};
}

// "left right", split at the first space after the first character (llama.cpp), so that a merge
// whose left part starts with a space survives.
status read_merges(const gguf::file& f, vocab& v) {
  auto arr = get_array(f, k_merges, {gguf::value_type::string}, 0);
  if (!arr) return arr.take_error();
  if (!*arr) return make_error("{}: missing (a BPE vocabulary needs its merges)", k_merges);
  v.merges.reserve((*arr)->size());
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    const std::string* s = (**arr)[i].as_string();
    if (!s) return make_error("{}[{}]: not a string", k_merges, i);
    const size_t sp = s->size() > 1 ? s->find(' ', 1) : std::string::npos;
    if (sp == std::string::npos || sp + 1 >= s->size())
      return make_error("{}[{}] = '{}': expected two parts separated by a space", k_merges, i, *s);
    v.merges.emplace_back(s->substr(0, sp), s->substr(sp + 1));
  }
  return {};
}

// llama.cpp finds end-of-turn / end-of-generation tokens by their text (converters do not always
// store the ids) and forces such tokens to be control tokens, which also changes how they are
// matched in input and printed. The texts are llama.cpp's lists.
constexpr std::string_view eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
    "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<end_of_utterance>",
};
constexpr std::string_view eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~[",
};

bool in(std::string_view text, std::span<const std::string_view> list) {
  return std::find(list.begin(), list.end(), text) != list.end();
}

// Fill-in-the-middle markers, found by their texts where the file names no id (llama.cpp's lists:
// Qwen2.5-Coder and StarCoder, DeepSeek-Coder, CodeLlama, CodeGeeX); padding / repository /
// file-separator tokens end generation too.
constexpr std::string_view fim_pre_texts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
                                              "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>"};
constexpr std::string_view fim_suf_texts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>",
                                              "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>"};
constexpr std::string_view fim_mid_texts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>",
                                              "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>"};
constexpr std::string_view fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view fim_sep_texts[] = {"<|file_sep|>"};

}  // namespace

void detect_eog(vocab& v, bool force_control) {
  auto make_control = [&](int32_t id) {
    if (force_control) v.tokens[id].attr = v.tokens[id].attr | token_attr::control;
  };
  // Lowest id first where llama.cpp's (hash-map order) choice is unspecified.
  for (int32_t id = 0; id < v.size(); ++id) {
    const std::string& t = v.tokens[id].text;
    if (v.eot == no_token && in(t, eot_texts)) v.eot = id, make_control(id);
    if (v.eom == no_token && t == "<|eom_id|>") v.eom = id, make_control(id);
    if (v.fim_pre == no_token && in(t, fim_pre_texts)) v.fim_pre = id, make_control(id);
    if (v.fim_suf == no_token && in(t, fim_suf_texts)) v.fim_suf = id, make_control(id);
    if (v.fim_mid == no_token && in(t, fim_mid_texts)) v.fim_mid = id, make_control(id);
    if (v.fim_pad == no_token && in(t, fim_pad_texts)) v.fim_pad = id, make_control(id);
    if (v.fim_rep == no_token && in(t, fim_rep_texts)) v.fim_rep = id, make_control(id);
    if (v.fim_sep == no_token && in(t, fim_sep_texts)) v.fim_sep = id, make_control(id);
    if (in(t, eog_texts)) v.eog_ids.push_back(id), make_control(id);
  }
  for (int32_t id : {v.eos, v.eot, v.eom, v.fim_pad, v.fim_rep, v.fim_sep})
    if (id != no_token) v.eog_ids.push_back(id);
  sort_unique(v.eog_ids);

  auto eog_with_text = [&](std::string_view text) {
    for (int32_t id : v.eog_ids)
      if (v.tokens[id].text == text) return id;
    return no_token;
  };
  auto drop_eog = [&](int32_t id, token_attr attr) {
    v.eog_ids.erase(std::find(v.eog_ids.begin(), v.eog_ids.end(), id));
    if (force_control) v.tokens[id].attr = attr;
  };
  // gpt-oss / solar-open: "<|end|>" only ends a message there; gemma4: "</s>" is ordinary text.
  const int32_t end = eog_with_text("<|end|>");
  const bool has_call = eog_with_text("<|call|>") != no_token || eog_with_text("<|calls|>") != no_token;
  if (end != no_token && has_call &&
      (eog_with_text("<|return|>") != no_token || eog_with_text("<|flush|>") != no_token))
    drop_eog(end, token_attr::user_defined);
  const int32_t s = eog_with_text("</s>");
  if (s != no_token && eog_with_text("<|tool_response>") != no_token) drop_eog(s, token_attr::normal);
}

void build_special_cache(vocab& v) {
  for (int32_t id = 0; id < v.size(); ++id)
    if (v.has(id, token_attr::control | token_attr::user_defined | token_attr::unknown))
      v.special_tokens.push_back(id);
  // Longest first so that a special token is never split by a shorter one it contains. Ties keep id
  // order (llama.cpp's unstable sort leaves them unspecified).
  std::stable_sort(v.special_tokens.begin(), v.special_tokens.end(), [&](int32_t a, int32_t b) {
    return v.tokens[a].text.size() > v.tokens[b].text.size();
  });
}

namespace {

// llama.cpp sets per-token strip flags by model name; for Phi-3 every special token eats the
// whitespace after it, except <unk>, <s> and <|endoftext|>.
void apply_name_fixups(const gguf::file& f, vocab& v) {
  std::string name = f.get_string("general.name").value_or("");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  auto set_rstrip = [&](int32_t id, bool on) {
    if (id == no_token) return;
    auto& a = v.tokens[id].attr;
    a = on ? (a | token_attr::rstrip) : (a & ~token_attr::rstrip);
  };
  for (int32_t id : v.special_tokens) set_rstrip(id, true);
  set_rstrip(v.find("</s>"), true);
  for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(v.find(t), false);
}

}  // namespace

void build_byte_table(vocab& v) {
  static constexpr char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    int32_t id = v.find(std::string_view(name, sizeof name));
    // Else the byte itself as a one-character token (llama.cpp looks that up as a C string, so
    // byte 0 never matches).
    if (id == no_token && b != 0) id = v.find(std::string(1, static_cast<char>(b)));
    v.byte_tokens[b] = id;
  }
}

int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return -1;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = nibble(text[3]), lo = nibble(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

size_t text_index::slot_of(const std::vector<token_data>& tokens, std::string_view text, size_t hash) const {
  const size_t mask = slots_.size() - 1;
  const auto check = static_cast<uint32_t>(hash >> 32);
  for (size_t s = hash & mask;; s = (s + 1) & mask) {
    const slot& e = slots_[s];
    if (e.id < 0 || (e.check == check && tokens[e.id].text == text)) return s;
  }
}

void text_index::reserve(const std::vector<token_data>& tokens, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap <= slots_.size()) return;
  std::vector<slot> old = std::move(slots_);
  slots_.assign(cap, slot{});
  for (const slot& e : old) {
    if (e.id < 0) continue;
    const size_t h = text_hash{}(tokens[e.id].text);
    slots_[slot_of(tokens, tokens[e.id].text, h)] = e;
  }
}

int32_t text_index::insert(const std::vector<token_data>& tokens, int32_t id) {
  if (2 * (count_ + 1) > slots_.size()) reserve(tokens, 2 * (count_ + 1));
  const size_t h = text_hash{}(tokens[id].text);
  slot& e = slots_[slot_of(tokens, tokens[id].text, h)];
  if (e.id >= 0) return e.id;
  e = {id, static_cast<uint32_t>(h >> 32)};
  ++count_;
  return id;
}

void text_index::assign(const std::vector<token_data>& tokens, int32_t id) {
  if (insert(tokens, id) == id) return;
  const size_t h = text_hash{}(tokens[id].text);
  slots_[slot_of(tokens, tokens[id].text, h)].id = id;
}

int32_t text_index::find(const std::vector<token_data>& tokens, std::string_view text) const {
  if (slots_.empty()) return no_token;
  const int32_t id = slots_[slot_of(tokens, text, text_hash{}(text))].id;
  return id < 0 ? no_token : id;
}

int64_t embedding_rows(const gguf::file& f) {
  const gguf::tensor_info* embd = f.find_tensor("token_embd.weight");
  return embd && embd->n_dims == 2 ? embd->ne[1] : 0;
}

bool vocab::is_eog(int32_t id) const { return std::binary_search(eog_ids.begin(), eog_ids.end(), id); }

result<vocab> load_vocab_from_gguf(const gguf::file& f) {
  const gguf::value* m = f.find(k_model);
  // A translated Hugging Face checkpoint (model/hf/) carries its tokenizer.json as it is, and so does a
  // GGUF quantized from one, beside the tokenizer.ggml.* keys derived from it for llama.cpp.
  if (auto json = f.get_string(gguf::key_hf_tokenizer_json); json && gguf::hf_tokenizer_rules(f)) {
    // Added tokens past the embedding's rows are left out.
    auto v = load_vocab_from_hf_json(*json, f.get_string(gguf::key_hf_tokenizer_config).value_or(""), embedding_rows(f));
    if (!v) return v;
    // transformers stops at any eos_token_id of config.json / generation_config.json.
    if (const gguf::value* eos = f.find(gguf::key_hf_eos_token_ids); eos && eos->as_array()) {
      for (const auto& e : *eos->as_array())
        if (auto id = e.as_int(); id && *id >= 0 && *id < v->size()) v->eog_ids.push_back(int32_t(*id));
      sort_unique(v->eog_ids);
    }
    return v;
  }
  if (!m) {
    if (f.is_assembled()) return make_error("the checkpoint has no tokenizer.json");
    return make_error("{}: missing (the file has no tokenizer)", k_model);
  }
  if (!m->as_string()) return make_error("{}: expected a string, found {}", k_model, gguf::value_type_name(m->type));
  vocab v;
  v.model = *m->as_string();
  std::optional<pre_type> pre;
  if (v.model == "llama") {
    v.kind = vocab_kind::spm;
  } else if (v.model == "gpt2" || v.model == "gemma4") {
    v.kind = vocab_kind::bpe;
    if (const gguf::value* p = f.find(k_pre)) {
      if (!p->as_string()) return make_error("{}: expected a string, found {}", k_pre, gguf::value_type_name(p->type));
      v.pre = *p->as_string();
    }
    if (v.model == "gemma4") v.pre = "gemma4";
    pre = find_pre_type(v.pre);
    if (!pre) return make_error("{} = '{}': unknown or unsupported pre-tokenizer", k_pre, v.pre);
  } else {
    return make_error("{} = '{}': unsupported tokenizer (supported: 'llama' (SentencePiece), 'gpt2' (byte-level "
                      "BPE), 'gemma4')",
                      k_model, v.model);
  }

  GLIA_TRY(read_tokens(f, v));
  GLIA_TRY(read_scores(f, v));
  GLIA_TRY(read_types(f, v));
  if (v.kind == vocab_kind::bpe) {
    GLIA_TRY(read_merges(f, v));
    v.pipeline = gguf_bpe_pipeline(*pre);
  }
  GLIA_TRY(read_specials(f, v, pre ? &*pre : nullptr));
  detect_eog(v, true);
  // gpt-oss: these structure its output and are always printed (llama.cpp).
  for (std::string_view t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    if (const int32_t id = v.find(t); id != no_token) v.tokens[id].attr = token_attr::user_defined;
  build_special_cache(v);
  apply_name_fixups(f, v);
  build_byte_table(v);
  return v;
}

}  // namespace glia::tok
