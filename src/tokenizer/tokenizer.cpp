#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "gguf/gguf.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_hf.h"

namespace glia {

using tok::token_attr;

tokenizer::tokenizer(tok::vocab v) : vocab_(std::move(v)) {}

status tokenizer::init() {
  auto a = tok::make_algorithm(vocab_);
  if (!a) return a.take_error();
  algorithm_ = std::move(*a);
  splitter_ = std::make_unique<tok::special_splitter>(vocab_);
  if (vocab_.pipeline.hf_decode) {
    auto d = tok::hf_decoder::compile(vocab_.pipeline);
    if (!d) return d.take_error();
    decoder_ = std::move(*d);
  }
  return {};
}

result<std::unique_ptr<tokenizer>> tokenizer::from_gguf(const gguf::file& f) {
  auto v = tok::load_vocab_from_gguf(f);
  if (!v) return v.take_error();
  return from_vocab(std::move(v).value());
}

result<std::unique_ptr<tokenizer>> tokenizer::from_vocab(tok::vocab v) {
  std::unique_ptr<tokenizer> t(new tokenizer(std::move(v)));
  GLIA_TRY(t->init());
  return t;
}

result<std::unique_ptr<tokenizer>> tokenizer::from_hf_json(std::string_view tokenizer_json, std::string_view config_json) {
  auto v = tok::load_vocab_from_hf_json(tokenizer_json, config_json);
  if (!v) return v.take_error();
  return from_vocab(std::move(v).value());
}

result<std::unique_ptr<tokenizer>> tokenizer::from_hf(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path json_path, dir;
  if (fs::is_directory(path, ec)) {
    dir = path;
    json_path = dir / "tokenizer.json";
    if (!fs::exists(json_path, ec)) json_path = dir / "tokenizer.json.gz";
    if (!fs::exists(json_path, ec)) return make_error("{}: no tokenizer.json (or tokenizer.json.gz) in this folder", path);
  } else if (fs::is_regular_file(path, ec)) {
    json_path = path;
    dir = json_path.parent_path();
  } else {
    return make_error("{}: no such file or folder", path);
  }
  auto json = tok::read_file_maybe_gz(json_path.string());
  if (!json) return json.take_error();
  std::string config;
  const fs::path config_path = dir / "tokenizer_config.json";
  if (fs::exists(config_path, ec)) {
    auto c = tok::read_file_maybe_gz(config_path.string());
    if (!c) return c.take_error();
    config = std::move(*c);
  }
  auto t = from_hf_json(*json, config);
  if (!t) return make_error("{}: {}", json_path.string(), t.message());
  return t;
}

std::vector<int32_t> tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) out.insert(out.end(), vocab_.prefix_ids.begin(), vocab_.prefix_ids.end());
  const auto fragments = splitter_->split(text, parse_special);
  algorithm_->encode(fragments, out);
  if (add_special) out.insert(out.end(), vocab_.suffix_ids.begin(), vocab_.suffix_ids.end());
  return out;
}

std::string tokenizer::token_to_piece(int32_t id, bool special) const {
  if (!vocab_.valid(id)) return {};
  const tok::token_data& t = vocab_.tokens[id];
  const token_attr special_attrs = token_attr::control | token_attr::unknown;
  if (decoder_) {
    if (has_any(t.attr, special_attrs) && !special) return {};
    if (t.text.empty()) return {};
    return decoder_->piece(t.text, has_any(t.attr, token_attr::control | token_attr::user_defined));
  }
  if (has_any(t.attr, special_attrs)) return special ? t.text : std::string();
  if (has_any(t.attr, token_attr::user_defined)) return t.text;
  if (has_any(t.attr, token_attr::normal)) return algorithm_->normal_piece(t);
  if (has_any(t.attr, token_attr::byte)) return std::string(1, static_cast<char>(tok::parse_byte_token(t.text)));
  return {};  // unused / undefined
}

std::string tokenizer::decode(std::span<const int32_t> ids, const decode_options& opt) const {
  if (decoder_) {
    const auto& pre = vocab_.prefix_ids;
    const auto& suf = vocab_.suffix_ids;
    if (opt.remove_special && !pre.empty() && ids.size() >= pre.size() && std::equal(pre.begin(), pre.end(), ids.begin()))
      ids = ids.subspan(pre.size());
    if (opt.remove_special && !suf.empty() && ids.size() >= suf.size() &&
        std::equal(suf.begin(), suf.end(), ids.end() - static_cast<std::ptrdiff_t>(suf.size())))
      ids = ids.first(ids.size() - suf.size());
    std::vector<std::string_view> texts;
    std::vector<bool> added;
    texts.reserve(ids.size());
    for (int32_t id : ids) {
      if (!vocab_.valid(id) || vocab_.tokens[id].text.empty()) continue;
      const token_attr a = vocab_.tokens[id].attr;
      if (!opt.special && has_any(a, token_attr::control | token_attr::unknown)) continue;
      texts.push_back(vocab_.tokens[id].text);
      added.push_back(has_any(a, token_attr::control | token_attr::user_defined));
    }
    std::string out = tok::repair_utf8(decoder_->decode(texts, added), tok::repair_mode::maximal_subpart);
    tok::clean_up(out, vocab_.pipeline.cleanup);
    return out;
  }

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
  tok::clean_up(out, vocab_.pipeline.cleanup);
  return out;
}

std::string_view tokenizer::token_text(int32_t id) const {
  return vocab_.valid(id) ? std::string_view(vocab_.tokens[id].text) : std::string_view();
}

}  // namespace glia
