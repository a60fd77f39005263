#include "tokenizer/vocab_export.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "gguf/hf_keys.h"
#include "tokenizer/pre_table.h"
#include "tokenizer/replace_all.h"
#include "tokenizer/text_pipeline.h"
#include "tokenizer/utf8.h"

namespace glia::tok {

namespace {

// Text that tells pre-tokenizers apart: contractions in both cases, digit runs of every length up to
// a thousands group, punctuation runs, whitespace runs and line ends of each kind, letters and marks
// of several scripts, symbols and emoji. Already in NFC, so that a tokenizer.json NFC normalizer
// (which llama.cpp does not run) leaves it as it is.
constexpr const char* kBattery[] = {
    "Hello world! It's a TEST: they'll've done it, we'RE sure, I'M, you'D, he'S, 'twas.",
    "1 12 123 1234 12345 1234567 3.14159 1,000,000 0x1F 2nd 10th 1/2 -7 +8 ^9 $100 100% #1",
    "  leading spaces\tand\ttabs\n\nnew lines\r\nwindows\rmac \n \n\t\n   trailing   ",
    "(parens) [brackets] {braces} <angle> \"quotes\" `code` ... --- !!! ??? ;;; @@@ ~~~ ||| ===",
    "```python\ndef f(x):\n    return x ** 2  # comment\n```",
    "Ünïcödé façade naïve résumé Straße ÆØÅ æøå ĳ ǅ ﬁ",
    "Привет мир! Γειά σου κόσμε. שלום עולם. مرحبا بالعالم. नमस्ते दुनिया क्‍ष",
    "你好，世界！こんにちは、世界。カタカナ ひらがな 안녕하세요 세계 ㄱㄴㄷ 一二三",
    "emoji 🦙🚀 👩‍💻 ❤️ 🇺🇸 ™ © ® ° ± × ÷ € £ ¥ → ← ∞ ≠ ≤",
    "ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ\u00A0nbsp\u2009thin\u3000ideographic ½ ¾ ² ³ Ⅻ ①",
    "camelCaseWord PascalCase snake_case kebab-case SCREAMING_CASE mIxEd123abc a1b2c3",
    "ก่อน ไทย ภาษา ກາ ລາວ ខ្មែរ",
};

// The words `spec` cuts each battery line into, with its normalizers except NFC; nullopt when it
// does not compile.
std::optional<std::vector<std::vector<std::string>>> battery_words(pipeline_spec spec) {
  std::erase_if(spec.normalizers, [](const normalizer_spec& n) { return n.what == normalizer_spec::kind::nfc; });
  auto compiled = text_pipeline::compile(spec);
  if (!compiled) return std::nullopt;
  std::vector<std::vector<std::string>> out;
  pipeline_scratch scratch;
  std::vector<std::string_view> words;
  for (const char* line : kBattery) {
    scratch.clear();
    words.clear();
    compiled->run(line, 0, scratch, words);
    out.emplace_back(words.begin(), words.end());
  }
  return out;
}

// llama.cpp pre-tokenizer names to try, the converter's usual ones first (several share regexes and
// differ in their flags).
constexpr const char* kPreNames[] = {"llama-bpe", "qwen2",    "qwen35",     "gpt-2",     "default",        "smollm",
                                     "starcoder", "stablelm2", "deepseek-llm", "deepseek-coder", "deepseek-v3",
                                     "falcon",    "gpt-4o",   "tekken",     "dbrx",      "command-r",      "bloom",
                                     "chameleon", "viking",   "jais-2",     "trillion",  "superbpe",       "seed-coder"};

// The pre name whose llama.cpp pipeline cuts the battery as `hf` does, preferring one whose decode
// clean-up matches too.
result<std::string> matching_pre(const pipeline_spec& hf) {
  for (const auto& n : hf.normalizers)
    if (n.what != normalizer_spec::kind::nfc)
      return make_error("its normalizer is not one llama.cpp's byte-level tokenizers run");
  const auto want = battery_words(hf);
  if (!want) return make_error("its pre-tokenizer does not compile");
  const bool hf_cleans = hf.cleanup != cleanup_style::none;
  std::string fallback;
  for (const char* name : kPreNames) {
    const auto pre = find_pre_type(name);
    if (!pre || !pre->byte_encode || pre->ignore_merges != hf.ignore_merges) continue;
    if (battery_words(gguf_bpe_pipeline(*pre)) != want) continue;
    if (pre->clean_spaces == hf_cleans) return std::string(name);
    if (fallback.empty()) fallback = name;
  }
  if (!fallback.empty()) return fallback;
  return make_error("no llama.cpp pre-tokenizer splits text as its pre-tokenizer does");
}

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁"

// Whether a SentencePiece-style tokenizer.json pipeline (spaces as "▁", no word splits) is one
// llama.cpp's SPM tokenizer runs; add_space_prefix from its Prepend / Metaspace prefix.
status check_spm_pipeline(const pipeline_spec& p, bool& add_space_prefix) {
  add_space_prefix = false;
  bool spaces_replaced = false;
  for (const auto& n : p.normalizers) {
    if (n.what == normalizer_spec::kind::prepend && n.content == kSpace && !spaces_replaced && !add_space_prefix) {
      add_space_prefix = true;
    } else if (n.what == normalizer_spec::kind::replace && !n.pattern.is_regex && n.pattern.text == " " && n.content == kSpace) {
      spaces_replaced = true;
    } else {
      return make_error("its normalizer is not the SentencePiece one llama.cpp runs");
    }
  }
  for (const auto& t : p.pre_tokenizers) {
    using k = pre_tokenizer_spec::kind;
    if (t.what == k::split && spaces_replaced && !t.pattern.is_regex && t.pattern.text == " ") continue;  // cuts nothing
    // Metaspace adds no "▁" to a text that starts with a space, and with prepend_scheme "first" none
    // after a special token either; llama.cpp's add_space_prefix always does. llama.cpp's own
    // conversion of such a model (from its tokenizer.model) has the same two differences.
    if (t.what == k::metaspace && !spaces_replaced && t.replacement == kSpace && !t.split_words) {
      spaces_replaced = true;
      add_space_prefix = t.prepend_scheme != pre_tokenizer_spec::prepend::never;
      continue;
    }
    // Words cut at spaces can never merge across them; llama.cpp's SPM merges whole texts ("▁▁").
    return make_error("its pre-tokenizer splits words, which llama.cpp's SentencePiece tokenizer does not");
  }
  if (!spaces_replaced) return make_error("its spaces are not written as \"\xE2\x96\x81\"");
  if (p.ignore_merges) return make_error("its BPE model ignores merges, which llama.cpp's SentencePiece tokenizer cannot");
  return {};
}

// A merge's two parts as one hash key; 0xFF is in no UTF-8 text.
std::string pair_key(std::string_view left, std::string_view right) {
  std::string k;
  k.reserve(left.size() + 1 + right.size());
  k.append(left).push_back('\xFF');
  k.append(right);
  return k;
}

// The merges in rank order as llama.cpp ranks them (a pair's first listing): tokenizer.json's order
// (merges_last_wins: a pair's last listing) without the earlier copies.
std::vector<std::pair<std::string, std::string>> ranked_merges(const vocab& v) {
  if (!v.merges_last_wins) return v.merges;
  std::unordered_map<std::string, size_t, text_hash, std::equal_to<>> last;
  for (size_t i = 0; i < v.merges.size(); ++i) last[pair_key(v.merges[i].first, v.merges[i].second)] = i;
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(last.size());
  for (size_t i = 0; i < v.merges.size(); ++i)
    if (last.find(pair_key(v.merges[i].first, v.merges[i].second))->second == i) out.push_back(v.merges[i]);
  return out;
}

// llama.cpp's SPM merges any two adjacent pieces whose text is a token, highest token score first
// (leftmost among equals); tokenizer.json's BPE only listed pairs, lowest rank first. The same when
// every normal token that two tokens spell is a listed merge of them, as in merges extracted from a
// SentencePiece model; then a token scoring minus the rank of its first merge orders them alike.
// Tokens no merge makes (single characters, bytes, added tokens) score lowest: llama.cpp would
// make one only where no merge is left. Fails naming a token llama.cpp would make from two pieces
// that tokenizer.json never joins, or whose merges are not consecutive in rank (another token's
// merge between them would come first in tokenizer.json and after in llama.cpp).
constexpr float kNeverMerged = -1e9f;

result<std::vector<float>> spm_scores(const vocab& v, const std::vector<std::pair<std::string, std::string>>& merges) {
  std::vector<size_t> first(v.tokens.size(), std::numeric_limits<size_t>::max());
  std::unordered_set<std::string, text_hash, std::equal_to<>> listed;  // "left\xFFright"
  listed.reserve(merges.size());
  std::vector<bool> done(v.tokens.size(), false);  // normal tokens whose run of merges has ended
  int32_t running = no_token;
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {  // in rank order: a token's first merge comes first
    const auto& [a, b] = merges[rank];
    listed.insert(pair_key(a, b));
    joined.assign(a).append(b);
    const int32_t id = v.find(joined);
    if (id == no_token) continue;
    if (first[size_t(id)] == std::numeric_limits<size_t>::max()) first[size_t(id)] = rank;
    // Added tokens are matched in the text before merging, in both tokenizers.
    if (v.tokens[size_t(id)].attr != token_attr::normal || id == running) continue;
    if (done[size_t(id)])
      return make_error("its merges making token '{}' ({}) are not consecutive in rank (the last one is merge {}), which "
                        "token scores cannot express",
                        joined, id, rank);
    if (running != no_token) done[size_t(running)] = true;
    running = id;
  }
  for (int32_t id = 0; id < v.size(); ++id) {
    const std::string_view text = v.tokens[size_t(id)].text;
    if (v.tokens[size_t(id)].attr != token_attr::normal || text.empty()) continue;
    for (size_t cut = utf8_lead_length(uint8_t(text[0])); cut < text.size(); cut += utf8_lead_length(uint8_t(text[cut]))) {
      const std::string_view left = text.substr(0, cut), right = text.substr(cut);
      if (v.find(left) == no_token || v.find(right) == no_token) continue;
      if (!listed.contains(pair_key(left, right)))
        return make_error("its token '{}' ({}) is spelled by the tokens '{}' and '{}', which no merge joins; llama.cpp's "
                          "SentencePiece tokenizer would join them",
                          text, id, left, right);
    }
  }
  std::vector<float> scores(v.tokens.size(), kNeverMerged);
  for (size_t id = 0; id < v.tokens.size(); ++id)
    if (first[id] != std::numeric_limits<size_t>::max()) scores[id] = -float(first[id] + 1);  // exact below 2^24
  return scores;
}

// What llama.cpp's SentencePiece tokenizer needs of a vocabulary: a <0xNN> token for every byte (its
// fallback looks each up and fails on a missing one).
status check_spm_tokens(const vocab& v) {
  for (int b = 0; b < 256; ++b)  // byte_tokens holds the <0xNN> token, else a one-byte text's
    if (const int32_t id = v.byte_tokens[size_t(b)]; id == no_token || parse_byte_token(v.tokens[size_t(id)].text) != b)
      return make_error("it has no byte token <0x{:02X}>, which llama.cpp's SentencePiece tokenizer needs for every byte", b);
  return {};
}

// tokenizer.ggml.token_type (llama.cpp's LLAMA_TOKEN_TYPE_*) of token `id`.
int32_t ggml_type_of(const vocab& v, int32_t id, bool byte_fallback) {
  const token_data& t = v.tokens[size_t(id)];
  if (id == v.unk) return int32_t(token_type::unknown);
  if (has_any(t.attr, token_attr::control)) return int32_t(token_type::control);
  if (has_any(t.attr, token_attr::user_defined)) return int32_t(token_type::user_defined);
  if (has_any(t.attr, token_attr::unused) || t.text.empty()) return int32_t(token_type::unused);
  if (byte_fallback && parse_byte_token(t.text) >= 0) return int32_t(token_type::byte);
  return int32_t(token_type::normal);
}

}  // namespace

status write_ggml_vocab(const vocab& v, int64_t n_rows, const checkpoint_ids& ids, gguf::writer& out) {
  const pipeline_spec& p = v.pipeline;
  const bool byte_level = std::any_of(p.pre_tokenizers.begin(), p.pre_tokenizers.end(),
                                      [](const auto& t) { return t.what == pre_tokenizer_spec::kind::byte_level; });
  std::string pre;
  bool add_space_prefix = false;
  if (byte_level) {
    if (p.byte_fallback) return make_error("it is byte-level with byte fallback, which llama.cpp's tokenizers are not");
    GLIA_ASSIGN(pre, matching_pre(p));
  } else {
    if (!p.byte_fallback) return make_error("it is neither byte-level nor SentencePiece-style with byte fallback");
    GLIA_TRY(check_spm_pipeline(p, add_space_prefix));
    GLIA_TRY(check_spm_tokens(v));
  }
  // llama.cpp puts one BOS / EOS around the text by two flags. Without tokenizer_config.json the
  // tokenizer names none: then the ones the post-processor adds, else config.json's.
  if (v.prefix_ids.size() > 1 || v.suffix_ids.size() > 1)
    return make_error("its post-processor adds more than one token before or after the text");
  const int32_t bos = v.bos != no_token ? v.bos : !v.prefix_ids.empty() ? v.prefix_ids[0] : ids.bos;
  const int32_t eos = v.eos != no_token ? v.eos : !v.suffix_ids.empty() ? v.suffix_ids[0] : ids.eos;
  if ((!v.prefix_ids.empty() && v.prefix_ids[0] != bos) || (!v.suffix_ids.empty() && v.suffix_ids[0] != eos))
    return make_error("its post-processor adds a token other than its BOS / EOS");
  // Without an EOS id llama.cpp takes a default one (11 for byte-level vocabularies, often ",") as
  // the end of generation.
  if (eos == no_token) return make_error("it names no EOS token, nor do config.json and generation_config.json");
  // llama.cpp strips around added tokens only for the models it knows to need it.
  for (int32_t id = 0; id < v.size(); ++id)
    if (v.has(id, token_attr::lstrip | token_attr::rstrip))
      return make_error("its added token '{}' ({}) strips the whitespace around it, which llama.cpp does not", v.tokens[size_t(id)].text, id);
  const auto merges = ranked_merges(v);
  std::vector<float> scores;
  if (!byte_level) {
    GLIA_ASSIGN(scores, spm_scores(v, merges));
  }

  const int64_t n = std::max<int64_t>(v.size(), n_rows);
  std::vector<std::string> texts(static_cast<size_t>(n));
  std::vector<int32_t> types(size_t(n), int32_t(token_type::unused));
  for (int32_t id = 0; id < n; ++id) {
    const bool real = id < v.size() && !v.tokens[size_t(id)].text.empty();
    texts[size_t(id)] = real ? v.tokens[size_t(id)].text : fmt::format("[PAD{}]", id);
    if (!real) continue;
    types[size_t(id)] = ggml_type_of(v, id, p.byte_fallback);
    // llama.cpp matches and prints user-defined tokens as their raw text, where tokenizer.json's
    // SentencePiece-style ones ("▁▁▁▁" in Gemma) hold normalized text (the converter does the same).
    if (!byte_level && types[size_t(id)] == int32_t(token_type::user_defined))
      texts[size_t(id)] = replace_all(texts[size_t(id)], kSpace, " ");
  }
  // llama.cpp requires each text once (tokenizer.json lets an added token repeat a vocabulary text).
  std::unordered_map<std::string_view, int64_t> first_id;
  first_id.reserve(texts.size());
  for (int64_t id = 0; id < n; ++id)
    if (auto [it, fresh] = first_id.emplace(texts[size_t(id)], id); !fresh)
      return make_error("its tokens {} and {} have the same text '{}', which llama.cpp refuses", it->second, id, texts[size_t(id)]);
  out.set_string("tokenizer.ggml.model", byte_level ? "gpt2" : "llama");
  if (byte_level) out.set_string("tokenizer.ggml.pre", pre);
  out.set_string_array("tokenizer.ggml.tokens", texts);
  if (!byte_level) {
    scores.resize(size_t(n), 0.0f);
    out.set_f32_array("tokenizer.ggml.scores", scores);
  }
  out.set_i32_array("tokenizer.ggml.token_type", types);
  if (byte_level) {
    std::vector<std::string> joined;
    joined.reserve(merges.size());
    for (const auto& [a, b] : merges) {
      joined.push_back(a);
      joined.back().append(" ").append(b);
    }
    out.set_string_array("tokenizer.ggml.merges", joined);
  }
  for (const auto& [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", bos}, std::pair{"tokenizer.ggml.eos_token_id", eos},
                                std::pair{"tokenizer.ggml.unknown_token_id", v.unk}, std::pair{"tokenizer.ggml.padding_token_id", v.pad}})
    if (id != no_token) out.set_u32(key, uint32_t(id));
  out.set_bool("tokenizer.ggml.add_bos_token", !v.prefix_ids.empty());
  out.set_bool("tokenizer.ggml.add_eos_token", !v.suffix_ids.empty());
  if (!byte_level) out.set_bool("tokenizer.ggml.add_space_prefix", add_space_prefix);
  out.set_bool(std::string(gguf::key_hf_ggml_derived), true);
  return {};
}

result<std::string> write_ggml_tokenizer(const gguf::file& in, gguf::writer& out) {
  if (in.find("tokenizer.ggml.model") || !in.find(gguf::key_hf_tokenizer_json)) return std::string();
  auto v = load_vocab_from_gguf(in);
  if (!v) return make_error("its tokenizer does not load: {}", v.message());
  checkpoint_ids ids;
  if (auto bos = in.get_int(gguf::key_hf_bos_token_id); bos && *bos >= 0 && *bos < v->size()) ids.bos = int32_t(*bos);
  if (const gguf::value* eos = in.find(gguf::key_hf_eos_token_ids); eos && eos->as_array()) {
    for (const gguf::value& e : *eos->as_array()) {  // the first that is a token
      if (auto id = e.as_int(); id && *id >= 0 && *id < v->size()) {
        ids.eos = int32_t(*id);
        break;
      }
    }
  }
  if (status s = write_ggml_vocab(*v, embedding_rows(in), ids, out); !s)
    return fmt::format("those keys cannot express its tokenizer ({}); glia reads the tokenizer.json the file keeps", s.message());
  return std::string();
}

}  // namespace glia::tok
