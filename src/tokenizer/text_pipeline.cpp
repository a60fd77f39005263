#include "tokenizer/text_pipeline.h"

#include <utf8proc.h>

#include <cstdlib>
#include <optional>

#include "tokenizer/replace_all.h"
#include "tokenizer/utf8.h"

namespace glia::tok {

namespace {

constexpr std::string_view gpt2_pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view punctuation_pattern = "[\\p{P}\\x{21}-\\x{2F}\\x{3A}-\\x{40}\\x{5B}-\\x{60}\\x{7B}-\\x{7E}]";

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  return true;
}

// The whitespace Strip normalizers remove: JavaScript's trim() set, or Unicode White_Space.
bool is_space_cp(uint32_t cp, regex_dialect d) {
  if ((cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
      cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
    return true;
  return d == regex_dialect::ecmascript ? cp == 0xFEFF : cp == 0x85;
}

// Start of the character after the one at `pos` (well-formed UTF-8).
size_t next_char(std::string_view s, size_t pos) {
  return std::min(s.size(), pos + utf8_lead_length(static_cast<uint8_t>(s[pos])));
}

// Calls emit(begin, end, is_match) for the matches of `find` in `piece` and the text between them,
// left to right, covering the whole piece. An empty match cuts the piece; the search then resumes at
// the next character.
template <typename Find, typename Emit>
void for_each_span(std::string_view piece, const Find& find, const Emit& emit) {
  size_t prev = 0, pos = 0;
  while (pos <= piece.size()) {
    size_t b = 0, e = 0;
    const regex::found f = find(piece, pos, b, e);
    if (f == regex::found::none) break;
    if (f == regex::found::gave_up) {  // leave the character unmatched and go on
      if (pos >= piece.size()) break;
      pos = next_char(piece, pos);
      continue;
    }
    if (b > prev) emit(prev, b, false);
    if (e > b) emit(b, e, true);
    prev = e;
    pos = e > b ? e : (b < piece.size() ? next_char(piece, b) : piece.size() + 1);
  }
  if (prev < piece.size()) emit(prev, piece.size(), false);
}

template <typename Find>
void split_with(std::string_view piece, const Find& find, split_behavior behavior, bool invert,
                std::vector<std::string_view>& out) {
  size_t open = std::string_view::npos;  // start of a piece being assembled (merged / contiguous)
  bool open_is_delim = false;
  auto flush = [&](size_t end) {
    if (open != std::string_view::npos && end > open) out.push_back(piece.substr(open, end - open));
    open = std::string_view::npos;
  };
  for_each_span(piece, find, [&](size_t b, size_t e, bool matched) {
    const bool delim = matched != invert;
    switch (behavior) {
      case split_behavior::isolated:
        out.push_back(piece.substr(b, e - b));
        break;
      case split_behavior::removed:
        if (!delim) out.push_back(piece.substr(b, e - b));
        break;
      case split_behavior::merged_with_previous:
        if (open == std::string_view::npos) open = b;
        if (delim) flush(e);
        break;
      case split_behavior::merged_with_next:
        if (delim) flush(b);
        if (open == std::string_view::npos) open = b;
        break;
      case split_behavior::contiguous:
        if (open != std::string_view::npos && open_is_delim != delim) flush(b);
        if (open == std::string_view::npos) open = b, open_is_delim = delim;
        break;
    }
  });
  flush(piece.size());
}

regex::found find_literal(std::string_view lit, std::string_view piece, size_t pos, size_t& b, size_t& e) {
  if (lit.empty() || pos > piece.size()) return regex::found::none;
  const size_t hit = piece.find(lit, pos);
  if (hit == std::string_view::npos) return regex::found::none;
  b = hit;
  e = hit + lit.size();
  return regex::found::match;
}

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const uint32_t cp = next_codepoint(s, pos);
    if (cp == 0x130) {  // İ: the one unconditional multi-character lowercase mapping (SpecialCasing)
      out += "i\xCC\x87";
      continue;
    }
    append_utf8(static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))), out);
  }
  return out;
}

}  // namespace

struct text_pipeline::normalizer {
  normalizer_spec spec;
  std::optional<regex> re;  // replace with a Regex pattern
  regex_dialect dialect = regex_dialect::llama_cpp;

  void apply(std::string& s) const {
    using k = normalizer_spec::kind;
    switch (spec.what) {
      case k::nfc: case k::nfd: case k::nfkc: case k::nfkd: unicode_normalize(s); break;
      case k::lowercase:
        if (is_ascii(s)) {
          for (char& c : s)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        } else {
          s = to_lower(s);
        }
        break;
      case k::prepend: s.insert(0, spec.content); break;
      case k::replace: replace(s); break;
      case k::strip: strip(s); break;
      case k::strip_accents: strip_accents(s); break;
    }
  }

  void unicode_normalize(std::string& s) const {
    if (is_ascii(s)) return;  // ASCII is invariant under every normalization form
    using k = normalizer_spec::kind;
    int opts = UTF8PROC_STABLE;
    opts |= (spec.what == k::nfc || spec.what == k::nfkc) ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
    if (spec.what == k::nfkc || spec.what == k::nfkd) opts |= UTF8PROC_COMPAT;
    utf8proc_uint8_t* dst = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                            static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                            static_cast<utf8proc_option_t>(opts));
    if (n >= 0) s.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
    std::free(dst);  // on failure (only for ill-formed input, which was repaired) the text stays as is
  }

  void replace(std::string& s) const {
    if (!re) {
      replace_all_in_place(s, spec.pattern.text, spec.content);
      return;
    }
    std::string out;
    bool any = false;
    for_each_span(
        s, [&](std::string_view t, size_t p, size_t& b, size_t& e) { return re->find(t, p, b, e); },
        [&](size_t b, size_t e, bool matched) {
          any = any || matched;
          out += matched ? std::string_view(spec.content) : std::string_view(s).substr(b, e - b);
        });
    if (any) s.swap(out);
  }

  void strip(std::string& s) const {
    size_t b = 0, e = s.size();
    if (spec.left) {
      for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        if (!is_space_cp(next_codepoint(s, pos), dialect)) break;
        b = pos;
        (void)start;
      }
    }
    if (spec.right) {
      size_t run = e;  // start of the trailing whitespace run
      for (size_t pos = b; pos < e;) {
        const size_t start = pos;
        const bool space = is_space_cp(next_codepoint(s, pos), dialect);
        if (!space) run = e;
        else if (run == e) run = start;
      }
      e = run;
    }
    s = s.substr(b, e - b);
  }

  static void strip_accents(std::string& s) {
    if (is_ascii(s)) return;
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
      const size_t start = pos;
      const uint32_t cp = next_codepoint(s, pos);
      if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) != UTF8PROC_CATEGORY_MN)
        out.append(s, start, pos - start);
    }
    s.swap(out);
  }
};

struct text_pipeline::pre_tokenizer {
  pre_tokenizer_spec spec;
  std::optional<regex> re;
  std::string literal;  // split with a String pattern

  // Appends the pieces `piece` becomes.
  void apply(std::string_view piece, int section, pipeline_scratch& s, std::vector<std::string_view>& out) const {
    using k = pre_tokenizer_spec::kind;
    auto regex_find = [&](std::string_view t, size_t p, size_t& b, size_t& e) { return re->find(t, p, b, e); };
    switch (spec.what) {
      case k::split:
        if (re) {
          split_with(piece, regex_find, spec.behavior, spec.invert, out);
        } else {
          auto lit = [&](std::string_view t, size_t p, size_t& b, size_t& e) { return find_literal(literal, t, p, b, e); };
          split_with(piece, lit, spec.behavior, spec.invert, out);
        }
        break;
      case k::byte_level: {
        if (spec.add_prefix_space && !piece.starts_with(' ')) piece = s.owned.emplace_back(" " + std::string(piece));
        if (spec.use_regex) {
          split_with(piece, regex_find, split_behavior::isolated, false, out);
        } else {
          out.push_back(piece);
        }
        break;
      }
      case k::metaspace: {
        std::string t(piece);
        replace_all_in_place(t, " ", spec.replacement);
        const bool prepend = spec.prepend_scheme == pre_tokenizer_spec::prepend::always ||
                             (spec.prepend_scheme == pre_tokenizer_spec::prepend::first && section == 0);
        if (prepend && !std::string_view(t).starts_with(spec.replacement)) t.insert(0, spec.replacement);
        const std::string_view owned = s.owned.emplace_back(std::move(t));
        if (spec.split_words) {
          auto lit = [&](std::string_view x, size_t p, size_t& b, size_t& e) {
            return find_literal(spec.replacement, x, p, b, e);
          };
          split_with(owned, lit, split_behavior::merged_with_next, false, out);
        } else {
          out.push_back(owned);
        }
        break;
      }
      case k::digits:
        split_with(piece, regex_find, split_behavior::isolated, false, out);
        break;
      case k::whitespace:
      case k::whitespace_split:
        // The pattern matches the words; what lies between them is dropped.
        split_with(piece, regex_find, split_behavior::removed, true, out);
        break;
      case k::punctuation:
        split_with(piece, regex_find, spec.behavior, false, out);
        break;
    }
  }
};

void split_by_regex(std::string_view piece, const regex& re, split_behavior behavior, bool invert,
                    std::vector<std::string_view>& out) {
  split_with(piece, [&](std::string_view t, size_t p, size_t& b, size_t& e) { return re.find(t, p, b, e); },
             behavior, invert, out);
}

result<text_pipeline> text_pipeline::compile(const pipeline_spec& spec) {
  text_pipeline tp;
  tp.repair_ = spec.repair;
  for (const auto& n : spec.normalizers) {
    auto c = std::make_shared<normalizer>();
    c->spec = n;
    c->dialect = spec.dialect;
    if (n.what == normalizer_spec::kind::replace && n.pattern.is_regex) {
      auto r = regex::compile(n.pattern.text, spec.dialect);
      if (!r) return make_error("Replace normalizer: {}", r.message());
      c->re = std::move(*r);
    }
    tp.normalizers_.push_back(std::move(c));
  }
  for (const auto& p : spec.pre_tokenizers) {
    using k = pre_tokenizer_spec::kind;
    if (tp.byte_level_)
      return make_error("a pre-tokenizer after ByteLevel is not supported (it would see byte-level text)");
    auto c = std::make_shared<pre_tokenizer>();
    c->spec = p;
    std::string pattern;
    switch (p.what) {
      case k::split:
        if (p.pattern.is_regex) pattern = p.pattern.text;
        else if (p.pattern.text.empty()) return make_error("Split pre-tokenizer: empty pattern");
        else c->literal = p.pattern.text;
        break;
      case k::byte_level:
        tp.byte_level_ = true;
        if (p.use_regex) pattern = gpt2_pattern;
        break;
      case k::metaspace:
        if (p.replacement.empty()) return make_error("Metaspace pre-tokenizer: empty replacement");
        break;
      case k::digits: pattern = p.individual_digits ? "\\d" : "\\d+"; break;
      case k::whitespace: pattern = "\\w+|[^\\w\\s]+"; break;
      case k::whitespace_split: pattern = "\\S+"; break;
      case k::punctuation: pattern = punctuation_pattern; break;
    }
    if (!pattern.empty()) {
      auto r = regex::compile(pattern, spec.dialect);
      if (!r) return make_error("pre-tokenizer: {}", r.message());
      c->re = std::move(*r);
    }
    tp.pre_tokenizers_.push_back(std::move(c));
  }
  return tp;
}

void text_pipeline::run(std::string_view text, int section, pipeline_scratch& s,
                        std::vector<std::string_view>& words) const {
  s.clear();
  words.clear();
  std::string_view t = text;
  const bool valid = is_valid_utf8(text);
  if (!normalizers_.empty() || !valid) {
    s.text = valid ? std::string(text) : repair_utf8(text, repair_);
    for (const auto& n : normalizers_) n->apply(s.text);
    t = s.text;
  }
  if (t.empty()) return;
  s.pieces.push_back(t);
  for (const auto& p : pre_tokenizers_) {
    s.next.clear();
    for (std::string_view piece : s.pieces) p->apply(piece, section, s, s.next);
    s.pieces.swap(s.next);
  }
  for (std::string_view piece : s.pieces)
    if (!piece.empty()) words.push_back(piece);
}

}  // namespace glia::tok
