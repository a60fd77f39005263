#include "tokenizer/jinja/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length of the Unicode whitespace character at `pos` (Python's \s), 0 if none.
size_t space_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  size_t len;
  return ustr::is_space(ustr::decode(s, pos, len)) ? len : 0;
}

size_t skip_spaces(std::string_view s, size_t pos) {
  while (size_t n = space_at(s, pos)) pos += n;
  return pos;
}

bool all_spaces(std::string_view s) { return skip_spaces(s, 0) == s.size(); }

// Python's "unicode-escape" decoding of a string literal body (Jinja's rule); unknown escapes stay.
result<std::string> unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    auto hex = [&](size_t n) -> result<uint32_t> {
      if (i + n >= body.size()) return make_error("line {}: TemplateSyntaxError: truncated \\{} escape", line, c);
      uint32_t v = 0;
      for (size_t k = 1; k <= n; ++k) {
        const char h = body[i + k];
        int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (d < 0) return make_error("line {}: TemplateSyntaxError: truncated \\{} escape", line, c);
        v = v * 16 + uint32_t(d);
      }
      i += n;
      return v;
    };
    switch (c) {
      case '\n': break;  // line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x':
      case 'u':
      case 'U': {
        auto v = hex(c == 'x' ? 2 : c == 'u' ? 4 : 8);
        if (!v) return v.take_error();
        if (*v > 0x10FFFF) return make_error("line {}: TemplateSyntaxError: illegal Unicode character", line);
        ustr::append(out, *v);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          uint32_t v = uint32_t(c - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            v = v * 8 + uint32_t(body[++i] - '0');
          ustr::append(out, v);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class lexer {
 public:
  explicit lexer(std::string_view src) : s_(src) {}

  result<std::vector<token>> run() {
    while (pos_ < s_.size()) {
      size_t tag = find_tag(pos_);
      if (tag == std::string_view::npos) {
        emit_text(std::string(s_.substr(pos_)));
        advance(s_.size());
        break;
      }
      GLIA_TRY(lex_tag(tag));
    }
    out_.push_back(token{tok::eof, "", line_});
    return std::move(out_);
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the previous match ended with a newline (or nothing came yet)
  std::vector<token> out_;

  void advance(size_t to) {
    for (size_t i = pos_; i < to; ++i)
      if (s_[i] == '\n') ++line_;
    pos_ = to;
  }

  size_t find_tag(size_t from) const {
    for (size_t p = s_.find('{', from); p != std::string_view::npos; p = s_.find('{', p + 1))
      if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
    return std::string_view::npos;
  }

  void emit_text(std::string text) {
    if (!text.empty()) out_.push_back(token{tok::text, std::move(text), line_});
  }

  // Whitespace control for the data before a tag: `-` strips all of it; otherwise lstrip_blocks
  // drops spaces between the line start and a block or comment tag.
  std::string data_before(size_t tag, char sign, bool lstrip_applies) const {
    std::string_view text = s_.substr(pos_, tag - pos_);
    if (sign == '-') return ustr::strip(text, nullptr, false, true);
    if (sign != '+' && lstrip_applies) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && all_spaces(text.substr(l_pos))) return std::string(text.substr(0, l_pos));
    }
    return std::string(text);
  }

  static char sign_at(std::string_view s, size_t p) {
    return p < s.size() && (s[p] == '-' || s[p] == '+') ? s[p] : 0;
  }

  // `{% raw %}` (with optional signs): returns the position after it, or npos.
  size_t match_raw_begin(size_t tag) const {
    size_t p = tag + 2;
    if (sign_at(s_, p)) ++p;
    p = skip_spaces(s_, p);
    if (s_.compare(p, 3, "raw") != 0 || (p + 3 < s_.size() && is_name_char(s_[p + 3]))) return std::string_view::npos;
    p = skip_spaces(s_, p + 3);
    if (s_.compare(p, 3, "-%}") == 0) return skip_spaces(s_, p + 3);
    if (s_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string_view::npos;
  }

  status lex_tag(size_t tag) {
    const char kind = s_[tag + 1];
    const char sign = sign_at(s_, tag + 2);
    emit_text(data_before(tag, sign, kind != '{'));
    if (kind == '#') return lex_comment(tag);
    if (kind == '%') {
      const size_t raw_end = match_raw_begin(tag);
      if (raw_end != std::string_view::npos) return lex_raw(raw_end);
    }
    advance(tag);
    const int tag_line = line_;
    out_.push_back(token{kind == '{' ? tok::var_begin : tok::block_begin, "", tag_line});
    advance(tag + 2 + (sign ? 1 : 0));
    return lex_inside(kind == '{');
  }

  status lex_comment(size_t tag) {
    const size_t end = s_.find("#}", tag + 2);
    if (end == std::string_view::npos) {
      advance(tag);
      return make_error("line {}: TemplateSyntaxError: missing end of comment tag", line_);
    }
    size_t after = end + 2;
    const bool strip_after = end > tag + 2 && s_[end - 1] == '-';
    const bool keep = end > tag + 2 && s_[end - 1] == '+';
    if (strip_after) after = skip_spaces(s_, after);
    else if (!keep && after < s_.size() && s_[after] == '\n') ++after;
    line_starting_ = after > 0 && s_[after - 1] == '\n';
    advance(after);
    return {};
  }

  status lex_raw(size_t body_start) {
    advance(body_start);
    for (size_t p = s_.find("{%", pos_); p != std::string_view::npos; p = s_.find("{%", p + 1)) {
      const char sign = sign_at(s_, p + 2);
      size_t q = skip_spaces(s_, p + 2 + (sign ? 1 : 0));
      if (s_.compare(q, 6, "endraw") != 0) continue;
      q = skip_spaces(s_, q + 6);
      size_t after;
      if (s_.compare(q, 3, "-%}") == 0) after = skip_spaces(s_, q + 3);
      else if (s_.compare(q, 3, "+%}") == 0) after = q + 3;
      else if (s_.compare(q, 2, "%}") == 0) after = q + 2 + (q + 2 < s_.size() && s_[q + 2] == '\n' ? 1 : 0);
      else continue;
      line_starting_ = body_start > 0 && s_[body_start - 1] == '\n';
      emit_text(data_before(p, sign, true));
      line_starting_ = s_[after - 1] == '\n';
      advance(after);
      return {};
    }
    return make_error("line {}: TemplateSyntaxError: missing end of raw directive", line_);
  }

  // Tokens of an expression tag up to its end marker; braces opened inside must close first.
  status lex_inside(bool variable) {
    std::vector<char> balance;
    const int start_line = line_;
    for (;;) {
      advance(skip_spaces(s_, pos_));
      if (pos_ >= s_.size())
        return make_error("line {}: TemplateSyntaxError: unexpected end of template, expected end of {} tag",
                          start_line, variable ? "print" : "block");
      if (balance.empty() && end_tag(variable)) return {};
      const char c = s_[pos_];
      if (is_name_start(c)) {
        size_t e = pos_;
        while (e < s_.size() && is_name_char(s_[e])) ++e;
        out_.push_back(token{tok::name, std::string(s_.substr(pos_, e - pos_)), line_});
        advance(e);
      } else if (is_digit(c)) {
        GLIA_TRY(lex_number());
      } else if (c == '\'' || c == '"') {
        GLIA_TRY(lex_string(c));
      } else {
        static constexpr std::string_view two[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (auto t : two)
          if (s_.compare(pos_, 2, t) == 0) op = t;
        if (op.empty()) {
          if (std::string_view("+-*/%~[](){}><=.:|,;").find(c) == std::string_view::npos)
            return make_error("line {}: TemplateSyntaxError: unexpected char '{}'", line_, c);
          op = std::string(1, c);
        }
        if (op == "(" || op == "[" || op == "{") balance.push_back(op[0]);
        if (op == ")" || op == "]" || op == "}") {
          const char open = op == ")" ? '(' : op == "]" ? '[' : '{';
          if (balance.empty() || balance.back() != open)
            return make_error("line {}: TemplateSyntaxError: unexpected '{}'", line_, op);
          balance.pop_back();
        }
        out_.push_back(token{tok::op, op, line_});
        advance(pos_ + op.size());
      }
    }
  }

  bool end_tag(bool variable) {
    const std::string_view close = variable ? "}}" : "%}";
    size_t after;
    if (s_.compare(pos_, 3, std::string("-").append(close)) == 0) {
      after = skip_spaces(s_, pos_ + 3);
    } else if (!variable && s_.compare(pos_, 3, "+%}") == 0) {
      after = pos_ + 3;
    } else if (s_.compare(pos_, 2, close) == 0) {
      after = pos_ + 2;
      if (!variable && after < s_.size() && s_[after] == '\n') ++after;  // trim_blocks
    } else {
      return false;
    }
    out_.push_back(token{variable ? tok::var_end : tok::block_end, "", line_});
    line_starting_ = s_[after - 1] == '\n';
    advance(after);
    return true;
  }

  status lex_number() {
    size_t e = pos_;
    std::string digits;
    auto take_digits = [&]() {
      while (e < s_.size() && (is_digit(s_[e]) || (s_[e] == '_' && e + 1 < s_.size() && is_digit(s_[e + 1])))) {
        if (s_[e] != '_') digits += s_[e];
        ++e;
      }
    };
    // 0x / 0o / 0b integers.
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() && std::string_view("xXoObB").find(s_[pos_ + 1]) != std::string_view::npos) {
      const char b = char(s_[pos_ + 1] | 0x20);
      const int base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
      e = pos_ + 2;
      while (e < s_.size() && (std::isxdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) {
        if (s_[e] != '_') digits += s_[e];
        ++e;
      }
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(digits.c_str(), &end, base);
      if (digits.empty() || *end || errno) return make_error("line {}: TemplateSyntaxError: bad integer literal", line_);
      out_.push_back(token{tok::integer, std::string(s_.substr(pos_, e - pos_)), line_, v, 0});
      advance(e);
      return {};
    }
    take_digits();
    bool is_float = false;
    // A fraction needs a digit after the dot; after a `.` token (x.0.1) numbers stay integers.
    const bool after_dot = !out_.empty() && out_.back().type == tok::op && out_.back().text == ".";
    if (!after_dot && e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) {
      is_float = true;
      digits += '.';
      ++e;
      take_digits();
    }
    if (!after_dot && e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t x = e + 1;
      if (x < s_.size() && (s_[x] == '+' || s_[x] == '-')) ++x;
      if (x < s_.size() && is_digit(s_[x])) {
        is_float = true;
        digits += 'e';
        digits.append(s_.substr(e + 1, x - e - 1));
        e = x;
        take_digits();
      }
    }
    token t{is_float ? tok::floating : tok::integer, std::string(s_.substr(pos_, e - pos_)), line_};
    if (is_float) {
      t.fval = std::strtod(digits.c_str(), nullptr);
    } else {
      errno = 0;
      t.ival = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) return make_error("line {}: TemplateSyntaxError: integer literal {} is too large", line_, digits);
    }
    out_.push_back(std::move(t));
    advance(e);
    return {};
  }

  status lex_string(char quote) {
    size_t e = pos_ + 1;
    while (e < s_.size() && s_[e] != quote) e += s_[e] == '\\' ? 2 : 1;
    if (e >= s_.size()) return make_error("line {}: TemplateSyntaxError: unterminated string", line_);
    auto v = unescape(s_.substr(pos_ + 1, e - pos_ - 1), line_);
    if (!v) return v.take_error();
    out_.push_back(token{tok::string, std::move(*v), line_});
    advance(e + 1);
    return {};
  }
};

}  // namespace

result<std::vector<token>> lex(std::string_view source) {
  // Jinja normalizes line endings and drops one trailing newline before lexing.
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  return lexer(src).run();
}

}  // namespace glia::jinja
