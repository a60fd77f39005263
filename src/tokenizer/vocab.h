// The vocabulary a tokenizer works on: token texts, scores, attributes, special ids and flags, loaded
// from GGUF metadata (tokenizer.ggml.*) and validated once so the algorithms can trust it.
// Algorithm-independent: SentencePiece and BPE vocabularies, from GGUF or a Hugging Face tokenizer.json.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/pipeline.h"

namespace glia::gguf {
class file;
}

namespace glia::tok {

inline constexpr int32_t no_token = -1;

// Values of tokenizer.ggml.token_type (llama.cpp's LLAMA_TOKEN_TYPE_*).
enum class token_type : int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

// Token attributes as bit flags (llama.cpp's llama_token_attr): load-time fixups add flags such as
// control (for EOG-looking texts) or rstrip (phi-3) to a token without losing its kind.
enum class token_attr : uint32_t {
  none = 0,
  undefined = 1u << 0,
  unknown = 1u << 1,
  unused = 1u << 2,
  normal = 1u << 3,
  control = 1u << 4,
  user_defined = 1u << 5,
  byte = 1u << 6,
  lstrip = 1u << 8,  // special-token matching eats whitespace to the token's left
  rstrip = 1u << 9,  // ... and to its right
};
constexpr token_attr operator|(token_attr a, token_attr b) {
  return static_cast<token_attr>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr token_attr operator&(token_attr a, token_attr b) {
  return static_cast<token_attr>(static_cast<uint32_t>(a) & static_cast<uint32_t>(b));
}
constexpr token_attr operator~(token_attr a) { return static_cast<token_attr>(~static_cast<uint32_t>(a)); }
// True when `set` has any of the flags in `any_of`.
constexpr bool has_any(token_attr set, token_attr any_of) { return (set & any_of) != token_attr::none; }

enum class vocab_kind {
  spm,  // tokenizer.ggml.model "llama": SentencePiece, score-driven merges with byte fallback
  bpe,  // merges by rank: byte-level ("gpt2"), SPM-style ("gemma4"), tokenizer.json "BPE" models
};

// How special-token text is found in the input.
enum class special_match {
  longest_token_first,  // llama.cpp: each token, longest text first, splits every plain fragment
  leftmost_longest,     // Hugging Face: scan left to right, take the longest token starting there
};

struct token_data {
  std::string text;  // as stored: SPM writes spaces as U+2581 "▁" and bytes as "<0xNN>"
  float score = 0.0f;
  token_attr attr = token_attr::normal;
};

// Hash for heterogeneous lookup: find(std::string_view) without building a std::string.
struct text_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// text -> id over the texts of a token list: open addressing on ids, so a lookup costs a hash and
// (almost always) one comparison, with no per-entry allocation. Empty texts are never indexed.
class text_index {
 public:
  // Indexes tokens[id]; returns the id already holding that text (the index keeps it) or `id`.
  int32_t insert(const std::vector<token_data>& tokens, int32_t id);
  // Makes tokens[id]'s text map to id, replacing an earlier id with that text.
  void assign(const std::vector<token_data>& tokens, int32_t id);
  int32_t find(const std::vector<token_data>& tokens, std::string_view text) const;
  void reserve(const std::vector<token_data>& tokens, size_t n);
  size_t size() const { return count_; }

 private:
  struct slot {
    int32_t id = -1;      // -1: empty
    uint32_t check = 0;   // high bits of the text's hash: most mismatches never touch the token
  };
  size_t slot_of(const std::vector<token_data>& tokens, std::string_view text, size_t hash) const;
  std::vector<slot> slots_;  // size a power of two
  size_t count_ = 0;
};

struct vocab {
  vocab_kind kind = vocab_kind::spm;
  std::string model;  // tokenizer.ggml.model, or "hf:" + the tokenizer.json model type
  std::string pre;    // tokenizer.ggml.pre (BPE)
  std::vector<token_data> tokens;
  text_index ids;  // text -> id

  int32_t bos = no_token, eos = no_token, unk = no_token, pad = no_token;
  int32_t eot = no_token, eom = no_token;
  // Fill-in-the-middle markers (prefix, suffix, middle; padding, repository, file separator).
  int32_t fim_pre = no_token, fim_suf = no_token, fim_mid = no_token, fim_pad = no_token, fim_rep = no_token, fim_sep = no_token;
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = false;  // SPM: a " " before the text (and after each special token)
  // Ids add_special puts around the text: [BOS] / [EOS] from the flags above for GGUF files, the
  // post-processor's template for tokenizer.json.
  std::vector<int32_t> prefix_ids, suffix_ids;
  special_match matching = special_match::longest_token_first;

  // BPE: merges in rank order (first = applied first). A pair listed twice keeps its first rank
  // (llama.cpp) or its last (tokenizers), as merges_last_wins says.
  std::vector<std::pair<std::string, std::string>> merges;
  bool merges_last_wins = false;
  pipeline_spec pipeline;

  std::array<int32_t, 256> byte_tokens{};  // byte -> its fallback token, no_token when none
  std::vector<int32_t> special_tokens;      // control/user-defined/unknown ids, longest text first
  std::vector<int32_t> eog_ids;             // end-of-generation ids, ascending

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }
  int32_t find(std::string_view text) const { return ids.find(tokens, text); }
  bool has(int32_t id, token_attr any_of) const { return valid(id) && has_any(tokens[id].attr, any_of); }
  bool is_eog(int32_t id) const;
};

// The rows of token_embd.weight, the model's vocabulary size (every file has them; <arch>.vocab_size
// only newer ones); 0 when the file has no such matrix.
int64_t embedding_rows(const gguf::file& f);

// Reads and validates tokenizer.ggml.* from a GGUF file. Errors name the key and the offending value.
result<vocab> load_vocab_from_gguf(const gguf::file& f);

// Load-time passes shared by the GGUF and tokenizer.json loaders.
// End-of-generation ids (EOS, EOT, EOM and the texts llama.cpp recognizes); force_control also marks
// those tokens as control tokens, as llama.cpp does for GGUF files.
void detect_eog(vocab& v, bool force_control);
// v.special_tokens from the attributes: control, user-defined and unknown tokens, longest text first.
void build_special_cache(vocab& v);
// v.byte_tokens: <0xNN> tokens, else the byte itself as a one-character token.
void build_byte_table(vocab& v);

// The byte a byte token stands for, from its text "<0xNN>"; -1 when the text is not of that form.
int parse_byte_token(std::string_view text);

}  // namespace glia::tok
