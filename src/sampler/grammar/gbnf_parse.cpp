// GBNF text -> compiled rules. The notation is llama.cpp's (grammars/README.md), so the grammar files
// its users have (json.gbnf, list.gbnf, ...) load unchanged: a rule ends at a newline unless inside
// parentheses or after `|`; a repetition applies to the last literal, class, reference or group.
// Hand-written: a recursive-descent parser of a dozen productions, simpler than a generator's output.
#include <algorithm>
#include <map>

#include "sampler/grammar/grammar.h"
#include "sampler/grammar/grammar_checks.h"
#include "sampler/grammar/stacks.h"
#include "sampler/grammar/utf8_steps.h"

namespace glia::grammar {
namespace {

// A hostile grammar must not make the compiled form (or its parse) unbounded.
constexpr size_t max_elements = 1'000'000;
constexpr uint64_t max_repeat = 100'000;
constexpr int max_nesting = 200;

using seq = std::vector<element>;

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

class parser {
 public:
  explicit parser(std::string_view text) : s_(text) {}

  result<std::shared_ptr<const compiled>> run(std::string_view root) {
    GLIA_TRY(parse_all());
    for (const auto& [name, id] : ids_)
      if (!defined_[id])
        return make_error("grammar: rule '{}' is used (line {}) but never defined", name, line_col(first_use_[id]).first);
    auto it = ids_.find(std::string(root));
    if (it == ids_.end()) return make_error("grammar: no rule named '{}' (the rule generation starts from)", root);
    out_.root = it->second;
    out_.rule_names = names_;
    out_.generated = generated_;
    // Flatten: each rule's alternatives, each ending with an end element.
    out_.alt_start.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
      for (auto& alt : rules_[r]) {
        out_.alt_start[r].push_back(uint32_t(out_.elements.size()));
        for (auto& e : alt) out_.elements.push_back(std::move(e));
        out_.elements.push_back(element{});
      }
    GLIA_TRY(check_left_recursion(out_));
    GLIA_TRY(check_finishes(out_));
    GLIA_TRY(check_char_classes(out_));
    const std::optional<stack_set> start = initial_stacks(out_);
    if (!start)
      return make_error("grammar: rule '{}' expands past the matcher's bounds before its first character ({} stacks, {} deep, "
                        "{} positions): too ambiguous or too deeply nested",
                        root, max_stacks, max_stack_depth, max_expand_positions);
    if (start->empty()) return make_error("grammar: rule '{}' matches nothing (its alternatives only lead back to themselves)", root);
    out_.start = std::move(*start);
    return std::make_shared<const compiled>(std::move(out_));
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
  size_t n_elements_ = 0;
  std::map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
  std::vector<bool> defined_;
  std::vector<bool> generated_;
  std::vector<size_t> first_use_;  // where each rule was first named, for messages
  std::vector<std::vector<seq>> rules_;
  compiled out_;

  bool at_end() const { return pos_ >= s_.size(); }
  char peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }

  std::pair<int, int> line_col(size_t at) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return {line, col};
  }
  template <typename... A>
  error fail(fmt::format_string<A...> f, A&&... a) const {
    auto [line, col] = line_col(pos_);
    return make_error("grammar: line {} column {}: {}", line, col, fmt::format(f, std::forward<A>(a)...));
  }

  // Spaces, tabs and comments; newlines too where a rule may continue over them.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t rule_id(const std::string& name) {
    auto [it, fresh] = ids_.try_emplace(name, uint32_t(names_.size()));
    if (fresh) {
      names_.push_back(name);
      defined_.push_back(false);
      generated_.push_back(false);
      first_use_.push_back(pos_);
      rules_.emplace_back();
    }
    return it->second;
  }
  uint32_t new_rule(const std::string& base) {
    std::string name;
    for (int k = int(names_.size());; ++k) {
      name = fmt::format("{}_{}", base, k);
      if (!ids_.count(name)) break;
    }
    const uint32_t id = rule_id(name);
    defined_[id] = true;
    generated_[id] = true;
    return id;
  }

  status count(size_t n) {
    n_elements_ += n;
    if (n_elements_ > max_elements) return fail("the grammar expands to more than {} elements", max_elements);
    return {};
  }

  status parse_all() {
    if (s_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // a UTF-8 byte order mark some editors write
    skip_space(true);
    if (at_end()) return fail("the grammar is empty");
    while (!at_end()) {
      GLIA_TRY(parse_rule());
      skip_space(true);
    }
    return {};
  }

  status parse_rule() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) return fail("expected a rule name, found '{}'", printable(peek()));
    const std::string name(s_.substr(start, pos_ - start));
    skip_space(false);
    if (s_.substr(pos_, 3) != "::=") return fail("expected '::=' after the rule name '{}'", name);
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name);
    if (defined_[id]) return fail("rule '{}' is defined twice", name);
    defined_[id] = true;
    std::vector<seq> alts;
    GLIA_TRY(parse_alternatives(name, false, alts));
    rules_[id] = std::move(alts);
    if (peek() == '\r') pos_ += peek(1) == '\n' ? 2 : 1;
    else if (peek() == '\n') ++pos_;
    else if (!at_end()) return fail("expected the end of the line after rule '{}', found '{}'", name, printable(peek()));
    return {};
  }

  status parse_alternatives(const std::string& rule, bool nested, std::vector<seq>& alts) {
    if (++depth_ > max_nesting) return fail("groups nested more than {} deep", max_nesting);
    alts.emplace_back();
    GLIA_TRY(parse_sequence(rule, nested, alts.back()));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.emplace_back();
      GLIA_TRY(parse_sequence(rule, nested, alts.back()));
    }
    --depth_;
    return {};
  }

  static std::string printable(char c) {
    if (c == '\0') return "end of text";
    if (uint8_t(c) < 0x20 || uint8_t(c) >= 0x7F) return fmt::format("\\x{:02x}", uint8_t(c));
    return std::string(1, c);
  }

  status parse_sequence(const std::string& rule, bool nested, seq& out) {
    size_t last_start = out.size();
    bool have_last = false;
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        last_start = out.size();
        while (peek() != '"') {
          if (at_end()) return fail("unterminated string literal");
          uint32_t cp = 0;
          GLIA_TRY(parse_char(cp));
          element e;
          e.type = element::kind::chars;
          e.ranges = {{cp, cp}};
          out.push_back(std::move(e));
          GLIA_TRY(count(1));
        }
        ++pos_;
        have_last = true;
      } else if (c == '[') {
        ++pos_;
        last_start = out.size();
        element e;
        GLIA_TRY(parse_class(e));
        out.push_back(std::move(e));
        GLIA_TRY(count(1));
        have_last = true;
      } else if (c == '.') {
        ++pos_;
        last_start = out.size();
        element e;
        e.type = element::kind::chars;
        e.negated = true;  // nothing excluded: any character
        out.push_back(std::move(e));
        GLIA_TRY(count(1));
        have_last = true;
      } else if (is_name_char(c)) {
        const size_t start = pos_;
        while (!at_end() && is_name_char(peek())) ++pos_;
        last_start = out.size();
        element e;
        e.type = element::kind::rule_ref;
        e.rule = rule_id(std::string(s_.substr(start, pos_ - start)));
        out.push_back(std::move(e));
        GLIA_TRY(count(1));
        have_last = true;
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        const uint32_t sub = new_rule(rule);
        std::vector<seq> alts;
        GLIA_TRY(parse_alternatives(rule, true, alts));
        if (peek() != ')') return fail("expected ')' to close the group");
        ++pos_;
        rules_[sub] = std::move(alts);
        last_start = out.size();
        element e;
        e.type = element::kind::rule_ref;
        e.rule = sub;
        out.push_back(std::move(e));
        GLIA_TRY(count(1));
        have_last = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) return fail("'{}' has nothing before it to repeat", c);
        uint64_t lo = 0, hi = UINT64_MAX;  // UINT64_MAX: no upper bound
        ++pos_;
        if (c == '+') lo = 1;
        if (c == '?') hi = 1;
        if (c == '{') GLIA_TRY(parse_braces(lo, hi));
        GLIA_TRY(repeat(rule, out, last_start, lo, hi));
        // The repetition is the last symbol now: "a"{2}{3} is six, as llama.cpp reads it.
      } else if (c == '<') {
        return fail("token references (<...>, <[id]>) are not supported: write the token's text as a literal");
      } else {
        break;
      }
      skip_space(nested);
    }
    return {};
  }

  status parse_braces(uint64_t& lo, uint64_t& hi) {
    skip_space(false);
    auto number = [&](uint64_t& v) -> status {
      const size_t start = pos_;
      v = 0;
      while (peek() >= '0' && peek() <= '9') {
        v = v * 10 + uint64_t(peek() - '0');
        if (v > max_repeat) return fail("a repetition count past {}", max_repeat);
        ++pos_;
      }
      if (pos_ == start) return fail("expected a number in '{{...}}'");
      return {};
    };
    GLIA_TRY(number(lo));
    skip_space(false);
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      if (peek() == '}') {
        hi = UINT64_MAX;
      } else {
        GLIA_TRY(number(hi));
        if (hi < lo) return fail("repetition {{{},{}}}: the maximum is below the minimum", lo, hi);
      }
      skip_space(false);
    } else {
      hi = lo;
    }
    if (peek() != '}') return fail("expected '}}' to close the repetition count");
    ++pos_;
    return {};
  }

  // out[from..] repeated lo..hi times (hi = UINT64_MAX: no bound). The copies are written out;
  // optional ones become a chain of rules so that matching never needs a counter.
  status repeat(const std::string& rule, seq& out, size_t from, uint64_t lo, uint64_t hi) {
    seq unit(out.begin() + std::ptrdiff_t(from), out.end());
    out.resize(from);
    if (unit.empty()) return {};  // "" repeated is still nothing
    const uint64_t copies = lo + (hi == UINT64_MAX ? 1 : hi - lo);
    // Each optional copy is a rule of its own as well: charged one element more.
    const uint64_t cost = copies * unit.size() + (hi == UINT64_MAX ? 1 : hi - lo);
    if (cost > max_elements) return fail("the repetition expands to more than {} elements", max_elements);
    GLIA_TRY(count(size_t(cost)));
    for (uint64_t i = 0; i < lo; ++i) out.insert(out.end(), unit.begin(), unit.end());
    if (hi == UINT64_MAX) {
      // more ::= unit more | (empty)
      const uint32_t more = new_rule(rule);
      seq body = unit;
      element self;
      self.type = element::kind::rule_ref;
      self.rule = more;
      body.push_back(self);
      rules_[more] = {body, seq{}};
      out.push_back(self);
    } else if (hi > lo) {
      // opt_1 ::= unit | (empty); opt_k ::= unit opt_{k-1} | (empty)
      uint32_t prev = 0;
      for (uint64_t k = 1; k <= hi - lo; ++k) {
        const uint32_t r = new_rule(rule);
        seq body = unit;
        if (k > 1) {
          element ref;
          ref.type = element::kind::rule_ref;
          ref.rule = prev;
          body.push_back(ref);
        }
        rules_[r] = {body, seq{}};
        prev = r;
      }
      element ref;
      ref.type = element::kind::rule_ref;
      ref.rule = prev;
      out.push_back(ref);
    }
    return {};
  }

  status parse_class(element& e) {
    e.type = element::kind::chars;
    if (peek() == '^') {
      e.negated = true;
      ++pos_;
    }
    while (peek() != ']') {
      if (at_end()) return fail("unterminated character class");
      uint32_t lo = 0;
      GLIA_TRY(parse_char(lo));
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
        ++pos_;
        GLIA_TRY(parse_char(hi));
        if (hi < lo) return fail("character range {:X}-{:X} runs backwards", lo, hi);
      }
      e.ranges.emplace_back(lo, hi);
    }
    if (e.ranges.empty() && !e.negated) return fail("the character class [] matches nothing");
    ++pos_;
    return {};
  }

  // One character of a literal or class: an escape or a UTF-8 character.
  status parse_char(uint32_t& cp) {
    if (peek() == '\\') {
      ++pos_;
      const char c = peek();
      ++pos_;
      switch (c) {
        case 'x': return hex(2, cp);
        case 'u': return hex(4, cp);
        case 'U': return hex(8, cp);
        case 'n': cp = '\n'; return {};
        case 'r': cp = '\r'; return {};
        case 't': cp = '\t'; return {};
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
          cp = uint8_t(c);
          return {};
        default:
          --pos_;
          return fail("unknown escape '\\{}'", printable(c));
      }
    }
    utf8_partial p;
    while (!at_end()) {
      const utf8_step st = feed_utf8(p, uint8_t(peek()), cp);
      ++pos_;
      if (st == utf8_step::done) return {};
      if (st == utf8_step::invalid) break;
    }
    return fail("invalid UTF-8");
  }

  status hex(int digits, uint32_t& cp) {
    cp = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
      if (v < 0) return fail("expected {} hex digits", digits);
      cp = cp * 16 + uint32_t(v);
      ++pos_;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail("U+{:X} is not a character", cp);
    return {};
  }
};

}  // namespace

result<std::shared_ptr<const compiled>> parse_gbnf(std::string_view text, std::string_view root) {
  return parser(text).run(root);
}

}  // namespace glia::grammar
