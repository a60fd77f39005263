#include "tokenizer/tokenizer.h"

#include "gguf/gguf.h"
#include "tokenizer/special_split.h"

namespace glia {

using tok::token_attr;

tokenizer::tokenizer(tok::vocab v) : vocab_(std::move(v)), algorithm_(tok::make_algorithm(vocab_)) {}

result<std::unique_ptr<tokenizer>> tokenizer::from_gguf(const gguf::file& f) {
  auto v = tok::load_vocab_from_gguf(f);
  if (!v) return v.take_error();
  return from_vocab(std::move(v).value());
}

std::unique_ptr<tokenizer> tokenizer::from_vocab(tok::vocab v) {
  return std::unique_ptr<tokenizer>(new tokenizer(std::move(v)));
}

std::vector<int32_t> tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
  const auto fragments = tok::split_special(vocab_, text, parse_special);
  algorithm_->encode(fragments, out);
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
  return out;
}

std::string tokenizer::token_to_piece(int32_t id, bool special) const {
  if (!vocab_.valid(id)) return {};
  const tok::token_data& t = vocab_.tokens[id];
  const token_attr special_attrs = token_attr::control | token_attr::unknown;
  if (has_any(t.attr, special_attrs)) return special ? t.text : std::string();
  if (has_any(t.attr, token_attr::user_defined)) return t.text;
  if (has_any(t.attr, token_attr::normal)) return algorithm_->normal_piece(t);
  if (has_any(t.attr, token_attr::byte)) return std::string(1, static_cast<char>(tok::parse_byte_token(t.text)));
  return {};  // unused / undefined
}

std::string tokenizer::decode(std::span<const int32_t> ids, const decode_options& opt) const {
  bool strip_space = vocab_.add_space_prefix;
  if (opt.remove_special && vocab_.add_bos && !ids.empty() && ids.front() == vocab_.bos) {
    strip_space = false;  // llama.cpp keeps the space after a dropped BOS
    ids = ids.subspan(1);
  }
  if (opt.remove_special && vocab_.add_eos && !ids.empty() && ids.back() == vocab_.eos) ids = ids.first(ids.size() - 1);

  std::string out;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, opt.special);
    // Only the first token's piece loses a space, even when that piece is empty.
    if (strip_space && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
    strip_space = false;
    out += piece;
  }
  return out;
}

std::string_view tokenizer::token_text(int32_t id) const {
  return vocab_.valid(id) ? std::string_view(vocab_.tokens[id].text) : std::string_view();
}

}  // namespace glia
