// The synthetic SentencePiece-style vocabulary of `glia synth`.
#include <cctype>
#include <unordered_set>

#include "model/synth.h"

namespace glia {
namespace {

constexpr int32_t k_type_normal = 1, k_type_unknown = 2, k_type_control = 3, k_type_byte = 6;
constexpr std::string_view k_space = "\xE2\x96\x81";  // U+2581, SentencePiece's word-boundary mark
// Characters of the base pieces. No '<', '>', '[', ']' or '|', so that no joined piece can spell a
// special token such as "<eos>" or "[EOT]" (loaders recognise those by their text).
constexpr std::string_view k_chars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:'\"-()/&%$#*+=_";
constexpr size_t k_max_piece_bytes = 16;
constexpr int64_t k_fixed_tokens = 3 + 256;  // <unk> <s> </s>, the byte tokens

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

int64_t synth_min_vocab() {
  const int64_t n_base = 1 + int64_t(k_chars.size()) + 52;  // "▁", the characters, "▁" + each letter
  return k_fixed_tokens + n_base;
}

result<synth_vocab> make_synth_vocab(int64_t n_vocab, uint64_t seed) {
  if (n_vocab < synth_min_vocab() || n_vocab > synth_max_vocab)
    return make_error("vocabulary size {} is outside {}..{}", n_vocab, synth_min_vocab(), synth_max_vocab);
  synth_vocab v;
  v.tokens.reserve(size_t(n_vocab));
  std::unordered_set<std::string> seen;
  auto add = [&](std::string text, int32_t type) {
    if (!seen.insert(text).second) return false;
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
    return true;
  };
  add("<unk>", k_type_unknown);
  add("<s>", k_type_control);
  add("</s>", k_type_control);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), k_type_byte);

  // Pieces, most frequent (highest score) first: the boundary mark, single characters, word starts.
  std::vector<std::string> pieces;
  auto add_piece = [&](std::string text) {
    if (add(text, k_type_normal)) pieces.push_back(std::move(text));
  };
  add_piece(std::string(k_space));
  for (char c : k_chars) add_piece(std::string(1, c));
  for (char c : k_chars)
    if (std::isalpha(static_cast<unsigned char>(c))) add_piece(std::string(k_space) + c);

  // Joined pieces: a + b where b does not start with the boundary mark, so that a word's pieces
  // can only begin at a boundary (as in a trained SentencePiece model). Early (short, high-score)
  // pieces are picked more often: index = floor(n * u^2).
  uint64_t rng = seed ^ 0x5eed5eed5eed5eedull;
  auto pick = [&](size_t n) {
    const double u = double(splitmix64(rng) >> 11) * (1.0 / 9007199254740992.0);
    return size_t(double(n) * u * u);
  };
  const uint64_t max_attempts = uint64_t(n_vocab) * 200;
  for (uint64_t attempt = 0; int64_t(v.tokens.size()) < n_vocab; ++attempt) {
    if (attempt > max_attempts) return make_error("could not build {} distinct pieces", n_vocab);
    const std::string& a = pieces[pick(pieces.size())];
    const std::string& b = pieces[pick(pieces.size())];
    if (b.rfind(k_space, 0) == 0 || a.size() + b.size() > k_max_piece_bytes) continue;
    add_piece(a + b);
  }

  v.scores.assign(v.tokens.size(), 0.0f);
  for (size_t i = size_t(k_fixed_tokens); i < v.tokens.size(); ++i) v.scores[i] = -float(i - size_t(k_fixed_tokens));
  return v;
}

}  // namespace glia
