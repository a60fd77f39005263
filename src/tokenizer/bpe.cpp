#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace glia::tok {

namespace {

constexpr std::string_view space_mark = "\xE2\x96\x81";  // U+2581, SPM's escaped space

// A run of the pre-token in the doubly linked list of current symbols; len 0 once merged away.
struct symbol {
  int32_t id;  // merge_table symbol id, no_token for a character no merge involves
  int32_t prev, next;
  uint32_t start, len;
};

// A mergeable adjacent pair. It is stale once either side changed; the symbol ids it was made from
// detect that (symbols only grow rightwards, so an unchanged pair of ids is the same pair).
struct candidate {
  int32_t rank;
  int32_t left, right;
  int32_t left_id, right_id;
  int32_t result;
};

// Min-heap order: lowest rank first, then the leftmost pair (left indices are positions).
struct pops_later {
  bool operator()(const candidate& a, const candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

// The character before the "▁" at `pos` (pos > 0) of UTF-8 text.
std::string_view char_before(std::string_view s, size_t pos) {
  size_t b = pos - 1;
  while (b > 0 && (static_cast<uint8_t>(s[b]) & 0xC0) == 0x80) --b;
  return s.substr(b, pos - b);
}

// Every character other than "▁" that some merge joins to a following "▁" (e.g. Gemma 3 merges
// ">" and "▁</"): only before those can a symbol span the start of a "▁word".
std::vector<std::string> chars_merged_into_space_mark(const vocab& v) {
  std::vector<std::string> found;
  std::string joined;
  for (const auto& [a, b] : v.merges) {
    joined.assign(a).append(b);
    for (size_t q = joined.find(space_mark, 1); q != std::string::npos; q = joined.find(space_mark, q + 1)) {
      const std::string_view c = char_before(joined, q);
      if (c != space_mark && std::find(found.begin(), found.end(), c) == found.end()) found.emplace_back(c);
    }
  }
  return found;
}

}  // namespace

result<merge_table> merge_table::build(const vocab& v) {
  merge_table m;
  m.v_ = &v;
  m.n_vocab_ = v.size();
  size_t cap = 16;
  while (cap < 2 * v.merges.size()) cap *= 2;
  m.slots_.assign(cap, entry{empty, {0, 0}});
  m.mask_ = cap - 1;
  std::string joined;
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const auto& [a, b] = v.merges[i];
    if (a.empty() || b.empty())
      return make_error("merges[{}] = '{} {}': a merge needs two non-empty parts", i, a, b);
    if (i > size_t(INT32_MAX)) return make_error("{} merges is too many", v.merges.size());
    joined.assign(a).append(b);
    const rule r{static_cast<int32_t>(i), m.intern(joined)};
    m.put(key(m.intern(a), m.intern(b)), r, v.merges_last_wins);
  }
  return m;
}

void merge_table::put(uint64_t k, rule r, bool replace) {
  for (size_t s = slot(k);; s = (s + 1) & mask_) {
    if (slots_[s].key == empty) {
      slots_[s] = {k, r};
      ++count_;
      return;
    }
    if (slots_[s].key == k) {
      if (replace) slots_[s].r = r;
      return;
    }
  }
}

int32_t merge_table::intern(std::string_view text) {
  const int32_t id = v_->find(text);
  if (id != no_token) return id;
  auto [it, inserted] = extra_.emplace(std::string(text), n_vocab_ + static_cast<int32_t>(extra_.size()));
  return it->second;
}

int32_t merge_table::symbol(std::string_view text) const {
  const int32_t id = v_->find(text);
  if (id != no_token) return id;
  auto it = extra_.find(text);
  return it == extra_.end() ? no_token : it->second;
}

bpe_algorithm::bpe_algorithm(const vocab& v, merge_table m, text_pipeline p)
    : vocab_(v), merges_(std::move(m)), pipeline_(std::move(p)) {
  byte_level_ = pipeline_.byte_level();
  for (const auto& n : v.pipeline.normalizers)
    if (n.what == normalizer_spec::kind::replace && n.pattern.text == " " && n.content == space_mark)
      escaped_spaces_ = true;
  split_at_words_ = escaped_spaces_ && !v.pipeline.ignore_merges;
  if (split_at_words_) joined_before_mark_ = chars_merged_into_space_mark(v);
  if (!byte_level_) {
    bmp_symbol_.assign(0x10000, no_token);
    std::string ch;
    for (uint32_t cp = 0; cp < 0x10000; ++cp) {
      if (cp >= 0xD800 && cp < 0xE000) continue;
      ch.clear();
      append_utf8(cp, ch);
      bmp_symbol_[cp] = merges_.symbol(ch);
    }
  }
  const auto& chars = byte_level_chars();
  static constexpr char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    byte_symbol_[b] = merges_.symbol(chars[b]);
    const char name[] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    hex_byte_[b] = v.find(std::string_view(name, sizeof name));
  }
}

result<std::unique_ptr<bpe_algorithm>> bpe_algorithm::create(const vocab& v) {
  auto m = merge_table::build(v);
  if (!m) return m.take_error();
  auto p = text_pipeline::compile(v.pipeline);
  if (!p) return p.take_error();
  return std::unique_ptr<bpe_algorithm>(new bpe_algorithm(v, std::move(*m), std::move(*p)));
}

std::string bpe_algorithm::normal_piece(const token_data& t) const {
  if (byte_level_) {
    std::string out;
    decode_byte_level(t.text, out);
    return out;
  }
  if (!escaped_spaces_) return t.text;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = t.text.find(space_mark, pos)) != std::string::npos; pos = hit + space_mark.size()) {
    out.append(t.text, pos, hit - pos);
    out += ' ';
  }
  out.append(t.text, pos);
  return out;
}

void bpe_algorithm::emit_missing(std::string_view piece, std::vector<int32_t>& out) const {
  switch (vocab_.pipeline.missing) {
    case missing_piece::llama_cpp_bytes: {
      // llama.cpp looks up each byte of the piece's (byte-level) text as a one-byte token.
      const std::string text = byte_level_ ? encode_byte_level(piece) : std::string(piece);
      for (char c : text) {
        const int32_t id = vocab_.find(std::string_view(&c, 1));
        if (id != no_token) out.push_back(id);
      }
      return;
    }
    case missing_piece::llama_cpp_hex:
      for (char c : piece)
        if (hex_byte_[static_cast<uint8_t>(c)] != no_token) out.push_back(hex_byte_[static_cast<uint8_t>(c)]);
      return;
    case missing_piece::hf: {
      bool all = vocab_.pipeline.byte_fallback;
      for (char c : piece) all = all && hex_byte_[static_cast<uint8_t>(c)] != no_token;
      if (all) {
        for (char c : piece) out.push_back(hex_byte_[static_cast<uint8_t>(c)]);
      } else if (vocab_.unk != no_token) {
        out.push_back(vocab_.unk);
      }
      return;
    }
  }
}

int32_t bpe_algorithm::char_symbol(std::string_view ch) const {
  if (ch.size() <= 3 && scan_utf8(ch).what == utf8_scan::kind::complete) {
    size_t pos = 0;
    return bmp_symbol_[next_codepoint(ch, pos)];
  }
  return merges_.symbol(ch);
}

void bpe_algorithm::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const bool newlines = vocab_.pipeline.whole_newline_runs && word.find_first_not_of('\n') == std::string_view::npos;
  if (vocab_.pipeline.ignore_merges || newlines) {
    const int32_t id = byte_level_ ? vocab_.find(encode_byte_level(word)) : vocab_.find(word);
    if (id != no_token) {
      out.push_back(id);
      return;
    }
  }

  // Initial symbols: bytes (byte-level) or UTF-8 characters.
  std::vector<symbol> syms;
  syms.reserve(word.size());
  for (size_t off = 0; off < word.size();) {
    const size_t n = byte_level_ ? 1 : std::min(utf8_lead_length(static_cast<uint8_t>(word[off])), word.size() - off);
    const int32_t id = byte_level_ ? byte_symbol_[static_cast<uint8_t>(word[off])] : char_symbol(word.substr(off, n));
    const auto i = static_cast<int32_t>(syms.size());
    syms.push_back({id, i - 1, -1, static_cast<uint32_t>(off), static_cast<uint32_t>(n)});
    if (i > 0) syms[i - 1].next = i;
    off += n;
  }

  std::priority_queue<candidate, std::vector<candidate>, pops_later> queue;
  auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0 || syms[l].id == no_token || syms[r].id == no_token) return;
    const merge_table::rule* rule = merges_.find(syms[l].id, syms[r].id);
    if (rule) queue.push({rule->rank, l, r, syms[l].id, syms[r].id, rule->result});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const candidate c = queue.top();
    queue.pop();
    symbol& l = syms[c.left];
    symbol& r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;
    l.len += r.len;
    l.id = c.result;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_pair(l.prev, c.left);
    try_pair(c.left, l.next);
  }

  for (int32_t i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
    const symbol& s = syms[i];
    if (s.id >= 0 && s.id < merges_.n_vocab()) {
      out.push_back(s.id);
    } else {
      emit_missing(word.substr(s.start, s.len), out);
    }
  }
}

void bpe_algorithm::encode_memoized(std::string_view word, word_memo& memo, std::vector<int32_t>& out) const {
  if (word.size() > word_memo::max_word) {
    encode_word(word, out);
    return;
  }
  std::span<const int32_t> ids;
  if (memo.find(word, ids)) {
    out.insert(out.end(), ids.begin(), ids.end());
    return;
  }
  const size_t before = out.size();
  encode_word(word, out);
  memo.insert(word, std::span<const int32_t>(out).subspan(before));
}

void bpe_algorithm::encode(std::span<const fragment> fragments, std::vector<int32_t>& out) const {
  pipeline_scratch scratch;
  std::vector<std::string_view> words;
  word_memo memo;
  for (size_t i = 0; i < fragments.size(); ++i) {
    const fragment& f = fragments[i];
    if (f.is_token()) {
      out.push_back(f.token);
      continue;
    }
    pipeline_.run(f.text, static_cast<int>(i), scratch, words);
    for (std::string_view w : words) {
      if (!split_at_words_) {
        encode_memoized(w, memo, out);
        continue;
      }
      // SPM-style vocabularies (Mistral, Gemma) have no pre-tokenizer: the whole text is one
      // pre-token. A symbol can only span the start of a "▁word" if some merge's text holds the
      // character before it followed by "▁"; where none does, encoding word by word gives the same
      // ids and keeps the merge queue small (on a 4 MiB text, one queue of millions of pairs made
      // encoding ~10x slower).
      size_t start = 0;
      for (size_t q = w.find(space_mark, 1); q != std::string_view::npos; q = w.find(space_mark, q + 1)) {
        const std::string_view before = char_before(w, q);
        if (before == space_mark ||
            std::find(joined_before_mark_.begin(), joined_before_mark_.end(), before) != joined_before_mark_.end())
          continue;
        encode_memoized(w.substr(start, q - start), memo, out);
        start = q;
      }
      encode_memoized(w.substr(start), memo, out);
    }
  }
}

}  // namespace glia::tok
