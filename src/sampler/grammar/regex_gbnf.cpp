#include "sampler/grammar/regex_gbnf.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "sampler/grammar/json_schema_chars.h"

namespace glia::grammar {
namespace regex_detail {
namespace {

constexpr size_t max_pattern_length = 10000;  // code points
constexpr int max_group_depth = 64;
// Bound on the size of the grammar after repetitions are unrolled (nested counts multiply), so a
// short pattern such as ((a{9999}){9999}){9999} cannot make a huge grammar.
constexpr uint64_t max_expanded_size = 200000;

struct node {
  enum class kind { set, seq, alt, repeat };
  kind type = kind::seq;
  code_point_set chars;      // set
  std::vector<node> kids;    // seq, alt; repeat: one
  uint32_t min = 0, max = 0;  // repeat
  bool unbounded = false;     // repeat: no upper count
};

struct branch {  // a top-level alternative and its anchors
  node body;
  bool anchored_start = false, anchored_end = false;
};

code_point_set digit_set() { return code_point_set::range('0', '9'); }

code_point_set word_set() {
  code_point_set s = code_point_set::range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}

// Whitespace to both ECMAScript and Python: ASCII's six, NBSP and the Unicode space separators and
// line/paragraph separators.
code_point_set space_set() {
  code_point_set s = code_point_set::range('\t', '\r');
  s.add(' ', ' ');
  s.add(0xA0, 0xA0);
  s.add(0x1680, 0x1680);
  s.add(0x2000, 0x200A);
  s.add(0x2028, 0x2029);
  s.add(0x202F, 0x202F);
  s.add(0x205F, 0x205F);
  s.add(0x3000, 0x3000);
  return s;
}

// Whitespace to either of them: the above, Python's \x1c-\x1f and \x85, ECMAScript's U+FEFF.
code_point_set space_set_either() {
  code_point_set s = space_set();
  s.add(0x1C, 0x1F);
  s.add(0x85, 0x85);
  s.add(0xFEFF, 0xFEFF);
  return s;
}

code_point_set ascii_minus(const code_point_set& s) { return code_point_set::range(0, 0x7F).minus(s); }

code_point_set dot_set() {
  code_point_set s = code_point_set::all();
  for (uint32_t c : {0x0Au, 0x0Du, 0x2028u, 0x2029u}) s = s.minus(code_point_set::of(c));
  return s;
}

int hex_value(char32_t c) {
  if (c >= '0' && c <= '9') return int(c - '0');
  if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
  return -1;
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > max_expanded_size * 4 / a) return max_expanded_size * 4;
  return a * b;
}

uint64_t expanded_size(const node& n) {
  switch (n.type) {
    case node::kind::set: return 1;
    case node::kind::seq:
    case node::kind::alt: {
      uint64_t total = 1;
      for (const node& k : n.kids) total = std::min(total + expanded_size(k), max_expanded_size * 4);
      return total;
    }
    case node::kind::repeat:
      return saturating_mul(expanded_size(n.kids[0]), std::max<uint64_t>(1, n.unbounded ? n.min + 1 : n.max));
  }
  return 1;
}

bool nullable(const node& n) {
  switch (n.type) {
    case node::kind::set: return false;
    case node::kind::seq:
      return std::all_of(n.kids.begin(), n.kids.end(), [](const node& k) { return nullable(k); });
    case node::kind::alt:
      return std::any_of(n.kids.begin(), n.kids.end(), [](const node& k) { return nullable(k); });
    case node::kind::repeat: return n.min == 0 || nullable(n.kids[0]);
  }
  return false;
}

// Counts the nodes the rewriting below copies: a sequence of k optional parts becomes k branches
// of up to k parts each, so a long one is refused rather than grown quadratically.
struct rewrite_budget {
  uint64_t copied = 0;
  bool exceeded() const { return copied > max_expanded_size; }
};

uint64_t node_count(const node& n) {
  uint64_t total = 1;
  for (const node& k : n.kids) total += node_count(k);
  return total;
}

// The non-empty strings of n, or nullopt when n matches only the empty string.
std::optional<node> nonempty(const node& n, rewrite_budget& budget) {
  if (budget.exceeded()) return std::nullopt;
  if (!nullable(n)) return n;
  node out;
  switch (n.type) {
    case node::kind::set: return n;
    case node::kind::seq: {
      // All parts nullable: the first non-empty part is some i, the parts after it are free.
      out.type = node::kind::alt;
      for (size_t i = 0; i < n.kids.size(); ++i) {
        std::optional<node> first = nonempty(n.kids[i], budget);
        if (!first) continue;
        node branch;
        branch.kids.push_back(std::move(*first));
        for (size_t j = i + 1; j < n.kids.size(); ++j) budget.copied += node_count(n.kids[j]);
        if (budget.exceeded()) return std::nullopt;
        branch.kids.insert(branch.kids.end(), n.kids.begin() + std::ptrdiff_t(i) + 1, n.kids.end());
        out.kids.push_back(std::move(branch));
      }
      break;
    }
    case node::kind::alt:
      out.type = node::kind::alt;
      for (const node& k : n.kids)
        if (std::optional<node> e = nonempty(k, budget)) out.kids.push_back(std::move(*e));
      break;
    case node::kind::repeat: {
      if (!n.unbounded && n.max == 0) return std::nullopt;
      std::optional<node> unit = nonempty(n.kids[0], budget);
      if (!unit) return std::nullopt;
      out = n;
      out.kids[0] = std::move(*unit);
      // (x){m,M} minus the empty string: at least one non-empty x (an empty x adds nothing).
      out.min = 1;
      return out;
    }
  }
  if (out.kids.empty()) return std::nullopt;
  if (out.kids.size() == 1) return std::move(out.kids[0]);
  return out;
}

// An unbounded repetition of something that can match the empty string would make a rule that
// reaches itself without reading a character (left recursion, which GBNF refuses): (x)* with a
// nullable x is rewritten as (x minus the empty string)*, the same strings.
void remove_empty_loops(node& n, rewrite_budget& budget) {
  for (node& k : n.kids) remove_empty_loops(k, budget);
  if (n.type != node::kind::repeat || !n.unbounded || !nullable(n.kids[0])) return;
  std::optional<node> unit = nonempty(n.kids[0], budget);
  if (!unit) {  // only the empty string, repeated: the empty string
    n = node{};
    return;
  }
  n.kids[0] = std::move(*unit);
  n.min = 0;
}

class parser {
 public:
  explicit parser(std::u32string s) : s_(std::move(s)) {}

  result<std::vector<branch>> parse() {
    std::vector<branch> out;
    while (true) {
      GLIA_ASSIGN(branch b, parse_top_branch());
      out.push_back(std::move(b));
      if (at_end()) break;
      if (peek() == '|') {
        ++pos_;
        continue;
      }
      return fail("unbalanced ')'", pos_);
    }
    return out;
  }

 private:
  bool at_end() const { return pos_ >= s_.size(); }
  char32_t peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : 0; }

  error fail(std::string_view what, size_t at) const {
    return make_error("regex: {} at position {}", what, at);
  }

  result<branch> parse_top_branch() {
    branch b;
    if (peek() == '^' && !at_end()) {
      b.anchored_start = true;
      ++pos_;
    }
    node seq;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        if (pos_ + 1 == s_.size() || s_[pos_ + 1] == '|') {
          b.anchored_end = true;
          ++pos_;
          break;
        }
        return fail("anchor '$' is only supported at the end of the pattern", pos_);
      }
      GLIA_ASSIGN(node item, parse_quantified());
      seq.kids.push_back(std::move(item));
    }
    b.body = std::move(seq);
    return b;
  }

  result<node> parse_alternation() {  // inside a group, up to its ')'
    node alt;
    alt.type = node::kind::alt;
    while (true) {
      node seq;
      while (!at_end() && peek() != '|' && peek() != ')') {
        GLIA_ASSIGN(node item, parse_quantified());
        seq.kids.push_back(std::move(item));
      }
      alt.kids.push_back(std::move(seq));
      if (peek() != '|' || at_end()) break;
      ++pos_;
    }
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  // {m}, {m,} or {m,n} at pos_: the length of the quantifier, or 0 when the brace is a literal.
  size_t brace_quantifier_length() const {
    size_t i = pos_ + 1;
    const size_t digits_start = i;
    while (i < s_.size() && s_[i] >= '0' && s_[i] <= '9') ++i;
    if (i == digits_start) return 0;
    if (i < s_.size() && s_[i] == ',') {
      ++i;
      while (i < s_.size() && s_[i] >= '0' && s_[i] <= '9') ++i;
    }
    if (i < s_.size() && s_[i] == '}') return i + 1 - pos_;
    return 0;
  }

  bool brace_is_python_only_quantifier() const {  // {,n}: Python reads {0,n}, ECMAScript a literal
    size_t i = pos_ + 1;
    if (i >= s_.size() || s_[i] != ',') return false;
    ++i;
    const size_t digits_start = i;
    while (i < s_.size() && s_[i] >= '0' && s_[i] <= '9') ++i;
    return i > digits_start && i < s_.size() && s_[i] == '}';
  }

  bool at_quantifier() const {
    const char32_t c = peek();
    if (at_end()) return false;
    return c == '*' || c == '+' || c == '?' || (c == '{' && (brace_quantifier_length() || brace_is_python_only_quantifier()));
  }

  result<uint32_t> read_count(size_t& i) const {
    uint64_t v = 0;
    const size_t start = i;
    while (i < s_.size() && s_[i] >= '0' && s_[i] <= '9') {
      v = std::min<uint64_t>(v * 10 + (s_[i] - '0'), uint64_t(regex_max_repeat) + 1);
      ++i;
    }
    if (v > regex_max_repeat)
      return make_error("regex: repetition count at position {} is over the limit of {}", start, regex_max_repeat);
    return uint32_t(v);
  }

  result<node> parse_quantified() {
    GLIA_ASSIGN(node atom, parse_atom());
    if (!at_quantifier()) return atom;
    const size_t at = pos_;
    node rep;
    rep.type = node::kind::repeat;
    const char32_t c = peek();
    if (c == '*') {
      rep.min = 0, rep.unbounded = true, ++pos_;
    } else if (c == '+') {
      rep.min = 1, rep.unbounded = true, ++pos_;
    } else if (c == '?') {
      rep.min = 0, rep.max = 1, ++pos_;
    } else {
      if (brace_is_python_only_quantifier())
        return fail("quantifier {,n} (read differently by Python and ECMAScript; write {0,n})", at);
      size_t i = pos_ + 1;
      GLIA_ASSIGN(rep.min, read_count(i));
      if (s_[i] == ',') {
        ++i;
        if (s_[i] == '}') {
          rep.unbounded = true;
        } else {
          GLIA_ASSIGN(rep.max, read_count(i));
        }
      } else {
        rep.max = rep.min;
      }
      pos_ = i + 1;
      if (!rep.unbounded && rep.max < rep.min) return fail("repetition {m,n} with m > n", at);
    }
    if (peek() == '+' && !at_end()) return fail("possessive quantifier", pos_);
    if (peek() == '?' && !at_end()) ++pos_;  // lazy: the same strings
    if (at_quantifier()) return fail("multiple repeat", pos_);
    rep.kids.push_back(std::move(atom));
    return rep;
  }

  result<node> parse_atom() {
    const size_t at = pos_;
    const char32_t c = peek();
    node n;
    n.type = node::kind::set;
    switch (c) {
      case '(': return parse_group();
      case '[': return parse_class();
      case '.':
        ++pos_;
        n.chars = dot_set();
        return n;
      case '\\': {
        GLIA_ASSIGN(n.chars, parse_escape(false));
        return n;
      }
      case '*':
      case '+':
      case '?': return fail("nothing to repeat", at);
      case '^': return fail("anchor '^' is only supported at the start of the pattern", at);
      case '$': return fail("anchor '$' is only supported at the end of the pattern", at);
      case '{':
        if (brace_quantifier_length() || brace_is_python_only_quantifier()) return fail("nothing to repeat", at);
        break;
      default: break;
    }
    ++pos_;
    n.chars = code_point_set::of(c);
    return n;
  }

  result<node> parse_group() {
    const size_t at = pos_;
    ++pos_;  // (
    if (peek() == '?') {
      const char32_t k = peek(1);
      if (k == ':') {
        pos_ += 2;
      } else if (k == '=' || k == '!' || (k == '<' && (peek(2) == '=' || peek(2) == '!'))) {
        return fail("lookaround group", at);
      } else if (k == 'P' || k == '<') {
        return fail("named group", at);
      } else {
        return fail("group (?...) (inline flags, comments and atomic groups are not supported)", at);
      }
    }
    if (++depth_ > max_group_depth) return fail(fmt::format("groups nested deeper than {}", max_group_depth), at);
    GLIA_ASSIGN(node inner, parse_alternation());
    --depth_;
    if (peek() != ')' || at_end()) return fail("missing ')' for the group", at);
    ++pos_;
    return inner;
  }

  // One class member at pos_: a set (class escapes) or a single character.
  result<code_point_set> parse_class_atom() {
    if (peek() == '\\') return parse_escape(true);
    return code_point_set::of(s_[pos_++]);
  }

  result<node> parse_class() {
    const size_t at = pos_;
    ++pos_;  // [
    bool negated = false;
    if (peek() == '^' && !at_end()) {
      negated = true;
      ++pos_;
    }
    if (peek() == ']' && !at_end())
      return fail("class opening with ']' (Python and ECMAScript read it differently; escape it)", at);
    code_point_set members;
    // A class escape and its complement together ([\s\S], the "any character" idiom) are every
    // character to both flavours, though each alone is kept to what both agree on.
    std::u32string escapes;
    while (true) {
      if (at_end()) return fail("missing ']' for the class", at);
      if (peek() == ']') break;
      const size_t item_at = pos_;
      if (peek() == '\\' && pos_ + 1 < s_.size()) escapes += s_[pos_ + 1];
      GLIA_ASSIGN(code_point_set first, parse_class_atom());
      if (peek() == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] != ']') {
        ++pos_;
        GLIA_ASSIGN(code_point_set last, parse_class_atom());
        const int64_t lo = first.single(), hi = last.single();
        if (lo < 0 || hi < 0) return fail("class range with a class escape at an end", item_at);
        if (lo > hi) return fail("class range out of order", item_at);
        members.add(uint32_t(lo), uint32_t(hi));
      } else {
        members.add(first);
      }
    }
    ++pos_;  // ]
    for (const char32_t* pair : {U"sS", U"wW", U"dD"})
      if (escapes.find(pair[0]) != std::u32string::npos && escapes.find(pair[1]) != std::u32string::npos) members = code_point_set::all();
    node n;
    n.type = node::kind::set;
    n.chars = negated ? members.complement() : members;
    if (n.chars.empty()) return fail("class that matches no character", at);
    return n;
  }

  result<uint32_t> read_hex(size_t digits, size_t at) {
    uint32_t v = 0;
    for (size_t k = 0; k < digits; ++k) {
      const int h = hex_value(peek());
      if (h < 0 || at_end()) return fail(fmt::format("escape needing {} hex digits", digits), at);
      v = v * 16 + uint32_t(h);
      ++pos_;
    }
    return v;
  }

  result<code_point_set> parse_escape(bool in_class) {
    const size_t at = pos_;
    ++pos_;  // backslash
    if (at_end()) return fail("trailing backslash", at);
    const char32_t c = s_[pos_++];
    switch (c) {
      case 'd': return digit_set();
      case 'D': return ascii_minus(digit_set());
      case 'w': return word_set();
      case 'W': return ascii_minus(word_set());
      case 's': return space_set();
      case 'S': return space_set_either().complement();
      case 't': return code_point_set::of('\t');
      case 'n': return code_point_set::of('\n');
      case 'r': return code_point_set::of('\r');
      case 'f': return code_point_set::of('\f');
      case 'v': return code_point_set::of('\v');
      case '0':
        if (peek() >= '0' && peek() <= '9' && !at_end()) return fail("octal escape", at);
        return code_point_set::of(0);
      case 'x': {
        GLIA_ASSIGN(uint32_t v, read_hex(2, at));
        return code_point_set::of(v);
      }
      case 'u': {
        GLIA_ASSIGN(uint32_t v, read_hex(4, at));
        if (v >= 0xD800 && v <= 0xDFFF) return fail("surrogate escape", at);
        return code_point_set::of(v);
      }
      case 'b':
        if (in_class) return code_point_set::of('\b');
        return fail("word boundary \\b", at);
      case 'B': return fail("word boundary \\B", at);
      case 'A':
      case 'Z':
      case 'z':
      case 'G': return fail("anchor escape", at);
      case 'k': return fail("named backreference", at);
      case 'p':
      case 'P': return fail("Unicode property escape", at);
      default: break;
    }
    if (c >= '1' && c <= '9') return fail("backreference", at);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      return fail(fmt::format("unknown escape \\{}", char(c)), at);
    return code_point_set::of(c);  // escaped punctuation or any other character: itself
  }

  std::u32string s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// Writes the AST as a GBNF expression; "" when it matches only the empty string.
class emitter {
 public:
  explicit emitter(bool json) : json_(json) {}

  std::string emit(const node& n) const {
    switch (n.type) {
      case node::kind::set: return json_ ? gbnf_json_string_set(n.chars) : gbnf_raw_set(n.chars);
      case node::kind::seq: return emit_seq(n);
      case node::kind::alt: return emit_alt(n);
      case node::kind::repeat: return emit_repeat(n);
    }
    return "";
  }

 private:
  std::string literal(const std::u32string& run) const {
    return gbnf_literal(json_ ? json_escaped(run) : run);
  }

  std::string emit_seq(const node& n) const {
    std::vector<std::string> parts;
    std::u32string run;  // consecutive single characters become one literal
    for (const node& k : n.kids) {
      if (k.type == node::kind::set && k.chars.single() >= 0) {
        run += char32_t(k.chars.single());
        continue;
      }
      if (!run.empty()) parts.push_back(literal(run)), run.clear();
      std::string e = emit(k);
      if (e.empty()) continue;
      if (k.type == node::kind::alt && gbnf_needs_group(e)) e = "(" + e + ")";
      parts.push_back(std::move(e));
    }
    if (!run.empty()) parts.push_back(literal(run));
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " " : "") + parts[i];
    return out;
  }

  std::string emit_alt(const node& n) const {
    std::vector<std::string> alts;
    bool has_empty = false;
    for (const node& k : n.kids) {
      std::string e = emit(k);
      if (e.empty()) {
        has_empty = true;
      } else if (std::find(alts.begin(), alts.end(), e) == alts.end()) {
        alts.push_back(std::move(e));
      }
    }
    if (alts.empty()) return "";
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    if (has_empty) return "(" + out + ")?";
    return out;
  }

  std::string emit_repeat(const node& n) const {
    std::string inner = emit(n.kids[0]);
    if (inner.empty() || (!n.unbounded && n.max == 0)) return "";
    if (!n.unbounded && n.min == 1 && n.max == 1) return inner;
    if (gbnf_needs_group(inner)) inner = "(" + inner + ")";
    if (n.unbounded) {
      if (n.min == 0) return inner + "*";
      if (n.min == 1) return inner + "+";
      return fmt::format("{}{{{},}}", inner, n.min);
    }
    if (n.min == 0 && n.max == 1) return inner + "?";
    if (n.min == n.max) return fmt::format("{}{{{}}}", inner, n.min);
    return fmt::format("{}{{{},{}}}", inner, n.min, n.max);
  }

  bool json_;
};

result<std::vector<branch>> parse_pattern(std::string_view regex) {
  std::u32string cps;
  if (!decode_utf8(regex, cps)) return make_error("regex: not valid UTF-8");
  if (cps.size() > max_pattern_length)
    return make_error("regex: {} characters, over the limit of {}", cps.size(), max_pattern_length);
  parser p(std::move(cps));
  GLIA_ASSIGN(std::vector<branch> branches, p.parse());
  uint64_t size = 0;
  rewrite_budget budget;
  for (branch& b : branches) {
    remove_empty_loops(b.body, budget);
    size += expanded_size(b.body);
  }
  if (budget.exceeded())
    return make_error("regex: a repeated group of optional parts is too large to rewrite (over {} elements)", max_expanded_size);
  if (size > max_expanded_size)
    return make_error("regex: its repetitions unroll to over {} elements", max_expanded_size);
  return branches;
}

std::string join_alternatives(const std::vector<std::string>& alts) {
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

result<std::string> full_match_grammar(std::string_view regex) {
  GLIA_ASSIGN(std::vector<branch> branches, parse_pattern(regex));
  const emitter e(false);
  std::vector<std::string> alts;
  bool has_empty = false;
  for (const branch& b : branches) {
    std::string expr = e.emit(b.body);
    if (expr.empty()) {
      has_empty = true;
    } else if (std::find(alts.begin(), alts.end(), expr) == alts.end()) {
      alts.push_back(std::move(expr));
    }
  }
  std::string body;
  if (alts.empty()) {
    body = "\"\"";
  } else if (has_empty) {
    body = "(" + join_alternatives(alts) + ")?";
  } else {
    body = join_alternatives(alts);
  }
  return "root ::= " + body + "\n";
}

result<std::string> json_string_body(std::string_view pattern, std::string_view any_char_rule) {
  GLIA_ASSIGN(std::vector<branch> branches, parse_pattern(pattern));
  const emitter e(true);
  const std::string any = std::string(any_char_rule) + "*";
  std::vector<std::string> alts;
  for (const branch& b : branches) {
    std::string expr = e.emit(b.body);
    if (!b.anchored_start) expr = expr.empty() ? any : any + " " + expr;
    if (!b.anchored_end && !(expr == any)) expr = expr.empty() ? any : expr + " " + any;
    if (expr.empty()) expr = "\"\"";
    if (std::find(alts.begin(), alts.end(), expr) == alts.end()) alts.push_back(std::move(expr));
  }
  if (alts.size() == 1) return alts[0];
  return "(" + join_alternatives(alts) + ")";
}

}  // namespace
}  // namespace regex_detail

result<std::string> regex_to_gbnf(std::string_view regex) { return regex_detail::full_match_grammar(regex); }

result<std::string> regex_json_string_body(std::string_view pattern, std::string_view any_char_rule) {
  return regex_detail::json_string_body(pattern, any_char_rule);
}

}  // namespace glia::grammar
