#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <utility>

#include "tokenizer/replace_all.h"

namespace glia::tok {

namespace {

// The members of \s, as items of a character class.
constexpr std::string_view ws_llama_cpp =  // Unicode White_Space (llama.cpp's unicode_set_whitespace)
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
constexpr std::string_view ws_ecmascript =  // ECMA-262 WhiteSpace + LineTerminator
    "\\x{9}-\\x{D}\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

// Rewrites transformers.js applies before compiling (its PROBLEMATIC_REGEX_MAP); llama.cpp's table
// already carries the rewritten forms.
constexpr std::pair<std::string_view, std::string_view> contraction_rewrites[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)", "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"},
    {"(?i:[sdmt]|ll|ve|re)", "(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])"},
};
constexpr std::pair<std::string_view, std::string_view> ecmascript_rewrites[] = {
    // JavaScript has no possessive quantifiers; transformers.js drops them.
    {"[^\\r\\n\\p{L}\\p{N}]?+", "[^\\r\\n\\p{L}\\p{N}]?"},
    {"[^\\s\\p{L}\\p{N}]++", "[^\\s\\p{L}\\p{N}]+"},
};

// Work limits per search: far above what real pre-tokenizer patterns need on any input (their
// backtracking is bounded by the length of one piece), low enough that a pathological pattern
// cannot stall tokenization.
constexpr uint32_t match_limit = 50'000'000;
constexpr uint32_t heap_limit_kib = 256 * 1024;
constexpr size_t jit_stack_max = 16u << 20;

// Per-thread match state: the tokenizer is shared between threads, a match context is not.
struct thread_state {
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_data* data = nullptr;
  thread_state() {
    context = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(context, match_limit);
    pcre2_set_heap_limit(context, heap_limit_kib);
    jit_stack = pcre2_jit_stack_create(32 * 1024, jit_stack_max, nullptr);
    if (jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
    data = pcre2_match_data_create(1, nullptr);  // only the whole match is read
  }
  ~thread_state() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
  }
  thread_state(const thread_state&) = delete;
  thread_state& operator=(const thread_state&) = delete;
};

thread_state& state() {
  thread_local thread_state s;
  return s;
}

}  // namespace

struct regex::code {
  pcre2_code* compiled = nullptr;
  bool jit = false;
  ~code() { pcre2_code_free(compiled); }
};

std::string translate_regex(std::string_view pattern, regex_dialect dialect) {
  std::string p(pattern);
  for (const auto& [from, to] : contraction_rewrites) replace_all_in_place(p, from, to);
  if (dialect == regex_dialect::ecmascript)
    for (const auto& [from, to] : ecmascript_rewrites) replace_all_in_place(p, from, to);

  const std::string_view ws = dialect == regex_dialect::llama_cpp ? ws_llama_cpp : ws_ecmascript;
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char d = p[++i];
      if (d == 's') {
        out += in_class ? std::string(ws) : "[" + std::string(ws) + "]";
      } else if (d == 'S' && !in_class) {
        out += "[^" + std::string(ws) + "]";
      } else if (d == 'Q') {  // \Q...\E quotes everything up to \E
        const size_t e = p.find("\\E", i + 1);
        const size_t stop = e == std::string::npos ? p.size() : e + 2;
        out.append(p, i - 1, stop - (i - 1));
        i = stop - 1;
      } else {
        // Inside a class \S stays PCRE2's (ASCII) \S: a negated set cannot be spelled inside a class.
        out += c;
        out += d;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal in PCRE2.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:name:]
      const size_t e = p.find(":]", i + 2);
      if (e != std::string::npos) {
        out.append(p, i, e + 2 - i);
        i = e + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

result<regex> regex::compile(std::string_view pattern, regex_dialect dialect) {
  const std::string translated = translate_regex(pattern, dialect);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  // DOLLAR_ENDONLY: '$' matches only at the very end, as in JavaScript and std::regex.
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                PCRE2_UTF | PCRE2_DOLLAR_ENDONLY, &err, &err_off, nullptr);
  if (!c) {
    std::array<PCRE2_UCHAR, 256> msg{};
    pcre2_get_error_message(err, msg.data(), msg.size());
    return make_error("regex '{}': {} (at offset {} of the compiled form '{}')", pattern,
                      reinterpret_cast<const char*>(msg.data()), err_off, translated);
  }
  auto k = std::make_shared<code>();
  k->compiled = c;
  k->jit = pcre2_jit_compile(c, PCRE2_JIT_COMPLETE) == 0;
  regex r;
  r.code_ = std::move(k);
  r.pattern_ = std::string(pattern);
  return r;
}

regex::found regex::find(std::string_view text, size_t start, size_t& begin, size_t& end) const {
  thread_state& s = state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = code_->jit ? pcre2_jit_match(code_->compiled, subject, text.size(), start, 0, s.data, s.context)
                      : PCRE2_ERROR_JIT_BADOPTION;
  // Without JIT, or when the JIT stack ran out, the interpreter (heap-based backtracking) takes over.
  if (!code_->jit || rc == PCRE2_ERROR_JIT_STACKLIMIT)
    rc = pcre2_match(code_->compiled, subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, s.data,
                     s.context);
  if (rc == PCRE2_ERROR_NOMATCH) return found::none;
  if (rc < 0) return found::gave_up;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
  begin = ov[0];
  end = ov[1];
  // \K can report an end before the start; treat such a match as empty.
  if (end < begin) end = begin;
  return found::match;
}

}  // namespace glia::tok
