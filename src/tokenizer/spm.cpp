#include "tokenizer/spm.h"

#include <algorithm>
#include <queue>

#include "tokenizer/replace_all.h"
#include "tokenizer/utf8.h"

namespace glia::tok {

namespace {

constexpr std::string_view space_mark = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// A run of input bytes in the doubly linked list of current pieces; len 0 once merged away.
struct symbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;
};

// A pair of adjacent symbols whose concatenation is a token. It goes stale when either side changes
// before it is popped; `len` (the pair's byte length) detects that.
struct candidate {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;
};

// Max-heap order: higher score first, then the leftmost pair. Among pairs that are still valid no two
// share `left`, so this picks one pair deterministically.
struct pops_later {
  bool operator()(const candidate& a, const candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

std::string escape_spaces(std::string_view text) { return replace_all(text, " ", space_mark); }
std::string unescape_spaces(std::string_view text) { return replace_all(text, space_mark, " "); }

void spm_algorithm::encode(std::span<const fragment> fragments, std::vector<int32_t>& out) const {
  bool after_special = true;  // the input start counts as "after a special token"
  for (const fragment& f : fragments) {
    if (f.is_token()) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    std::string text;
    if (vocab_.add_space_prefix && after_special) text = " ";
    text.append(f.text);
    encode_escaped(escape_spaces(text), out);
    after_special = false;
  }
}

std::string spm_algorithm::normal_piece(const token_data& t) const { return unescape_spaces(t.text); }

void spm_algorithm::encode_escaped(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<symbol> syms;
  for (size_t off = 0; off < text.size();) {
    const size_t n = std::min(utf8_lead_length(static_cast<uint8_t>(text[off])), text.size() - off);
    const auto i = static_cast<int32_t>(syms.size());
    syms.push_back({i - 1, -1, static_cast<uint32_t>(off), static_cast<uint32_t>(n)});
    if (i > 0) syms[i - 1].next = i;
    off += n;
  }

  std::priority_queue<candidate, std::vector<candidate>, pops_later> queue;
  auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t len = syms[l].len + syms[r].len;
    const int32_t id = vocab_.find(text.substr(syms[l].start, len));
    if (id == no_token) return;
    queue.push({vocab_.tokens[id].score, l, r, len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const candidate c = queue.top();
    queue.pop();
    symbol& l = syms[c.left];
    symbol& r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_pair(l.prev, c.left);
    try_pair(c.left, l.next);
  }

  for (int32_t i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next)
    emit_piece(text.substr(syms[i].start, syms[i].len), out);
}

// A final piece is its own token when the vocabulary has it; otherwise (a character the vocabulary
// lacks) each of its bytes becomes a byte token, or <unk> for a vocabulary without byte tokens.
void spm_algorithm::emit_piece(std::string_view piece, std::vector<int32_t>& out) const {
  const int32_t id = vocab_.find(piece);
  if (id != no_token) {
    out.push_back(id);
    return;
  }
  for (char c : piece) {
    const int32_t b = vocab_.byte_tokens[static_cast<uint8_t>(c)];
    if (b != no_token) {
      out.push_back(b);
    } else if (vocab_.unk != no_token) {
      out.push_back(vocab_.unk);
    }
  }
}

}  // namespace glia::tok
