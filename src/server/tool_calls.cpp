#include "server/tool_calls.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "core/json_text.h"
#include "server/random_id.h"
#include "server/reply_text.h"

namespace glia::server {
namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t npos = std::string_view::npos;

constexpr std::string_view hermes_open = "<tool_call>", hermes_close = "</tool_call>";
constexpr std::string_view mistral_open = "[TOOL_CALLS]", mistral_args = "[ARGS]", mistral_id = "[CALL_ID]";
constexpr std::string_view gemma4_open = "<|tool_call>", gemma4_close = "<tool_call|>", gemma4_quote = "<|\"|>";
constexpr std::string_view python_tag = "<|python_tag|>";
constexpr std::string_view think_open = "<think>", think_close = "</think>";

std::string_view trim(std::string_view s) {
  s = trim_end(s);
  return s.substr(skip_blanks(s));
}

std::string_view marker_of(tool_syntax s) {
  switch (s) {
    case tool_syntax::hermes: return hermes_open;
    case tool_syntax::mistral_list:
    case tool_syntax::mistral_args: return mistral_open;
    case tool_syntax::gemma4: return gemma4_open;
    default: return {};
  }
}

// Calls nest a few levels; a reply nested deeper is not read as calls (nlohmann copies and prints
// recursively, so depth is bounded before parsing).
constexpr int max_call_depth = 64;

// One past the JSON object, array or string that opens at s[i], found by bracket depth outside
// strings; npos when it does not close or nests too deep. The text is then parsed by nlohmann, which
// judges it.
size_t bracket_end(std::string_view s, size_t i) {
  if (s[i] == '"') {
    for (size_t k = i + 1; k < s.size(); ++k) {
      if (s[k] == '\\') ++k;
      else if (s[k] == '"') return k + 1;
    }
    return npos;
  }
  int depth = 0;
  bool in_string = false;
  for (size_t k = i; k < s.size(); ++k) {
    const char c = s[k];
    if (in_string) {
      if (c == '\\') ++k;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_call_depth) return npos;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return k + 1;
    }
  }
  return npos;
}

// A whole text as JSON, unless it nests too deep.
// nlohmann refuses a number a double cannot hold (1e400), which JSON allows and a grammar lets a model
// write. Calls keep their arguments as written, so the parse only needs the structure: such numbers
// are read as 0 in a copy.
std::string with_finite_numbers(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      in_string = escaped || c != '"';
      escaped = !escaped && c == '\\';
      out += c;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i + 1;
      while (end < text.size() && std::string_view("0123456789+-.eE").find(text[end]) != npos) ++end;
      const std::string number(text.substr(i, end - i));
      out += std::isfinite(std::strtod(number.c_str(), nullptr)) ? number : std::string("0");
      i = end - 1;
    } else {
      in_string = c == '"';
      out += c;
    }
  }
  return out;
}

ojson parse_json(std::string_view text) {
  ojson v = ojson::parse(text, nullptr, false);
  if (v.is_discarded()) v = ojson::parse(with_finite_numbers(text), nullptr, false);
  return v;
}

ojson parse_bounded(std::string_view text) {
  if (json_nesting_depth(text) > size_t(max_call_depth)) return ojson(ojson::value_t::discarded);
  return parse_json(text);
}

// The JSON object, array or string at `pos` (after spaces); pos moves past it. (A string: arguments
// some templates write as the JSON text of an object, quoted.)
// A JSON value and its text as the model wrote it.
struct json_text_value {
  ojson value;
  std::string_view text;
};

std::optional<json_text_value> json_at(std::string_view s, size_t& pos) {
  const size_t start = skip_blanks(s, pos);
  if (start >= s.size() || (s[start] != '{' && s[start] != '[' && s[start] != '"')) return std::nullopt;
  const size_t end = bracket_end(s, start);
  if (end == npos) return std::nullopt;
  ojson v = parse_json(s.substr(start, end - start));
  if (v.is_discarded()) return std::nullopt;
  pos = end;
  return json_text_value{std::move(v), s.substr(start, end - start)};
}

// The members of the JSON object `t` (key text, value text) or the elements of the array `t` (empty
// key), as written. `t` is JSON nlohmann accepted, so the walk needs no checks of its own.
std::vector<std::pair<std::string_view, std::string_view>> parts_of(std::string_view t) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  size_t p = skip_blanks(t, 0);
  if (p >= t.size() || (t[p] != '{' && t[p] != '[')) return out;
  const bool object = t[p] == '{';
  p = skip_blanks(t, p + 1);
  while (p < t.size() && t[p] != '}' && t[p] != ']') {
    std::string_view key;
    if (object) {
      const size_t key_end = bracket_end(t, p);
      if (key_end == npos) break;
      key = t.substr(p, key_end - p);
      p = skip_blanks(t, skip_blanks(t, key_end) + 1);  // past ':'
    }
    size_t end = npos;
    if (p < t.size() && (t[p] == '{' || t[p] == '[' || t[p] == '"')) {
      end = bracket_end(t, p);
    } else {
      end = p;
      while (end < t.size() && t[end] != ',' && t[end] != '}' && t[end] != ']' && !is_blank(t[end])) ++end;
    }
    if (end == npos) break;
    out.emplace_back(key, t.substr(p, end - p));
    p = skip_blanks(t, end);
    if (p < t.size() && t[p] == ',') p = skip_blanks(t, p + 1);
  }
  return out;
}

// Arguments as an object's text, as the model wrote it (numbers are not re-printed): models write an
// object, some a string holding one's text; null is none.
std::optional<std::string> arguments_text(const ojson& args, std::string_view written) {
  if (args.is_null() || (args.is_string() && trim(args.get_ref<const std::string&>()).empty())) return "{}";
  if (args.is_object()) return std::string(written);
  if (args.is_string()) {
    const std::string& inner = args.get_ref<const std::string&>();
    ojson parsed = parse_bounded(inner);
    if (!parsed.is_discarded() && parsed.is_object()) return std::string(trim(inner));
  }
  return std::nullopt;
}

// {"name": ..., <args_key>: {...}} with either key spelling the formats use, from its text. Inside
// markers a call may leave its arguments out; bare JSON (Llama 3's, a forced choice's) must have them,
// or any JSON answer with a "name" would be a call.
std::optional<tool_call> call_from_object(tool_syntax syntax, const ojson& o, std::string_view written,
                                          bool needs_arguments = false) {
  if (!o.is_object()) return std::nullopt;
  auto name = o.find("name");
  if (name == o.end() || !name->is_string() || trim(name->get<std::string>()).empty()) return std::nullopt;
  const char* key = o.contains("arguments") ? "arguments" : o.contains("parameters") ? "parameters" : nullptr;
  if (!key) {
    if (needs_arguments) return std::nullopt;
    return tool_call{new_tool_call_id(syntax), name->get<std::string>(), "{}"};
  }
  // The member's text: the last with that key, as nlohmann keeps the last of duplicates.
  std::string_view args_written;
  for (const auto& [k, v] : parts_of(written))
    if (ojson::parse(k, nullptr, false) == key) args_written = v;
  std::optional<std::string> text = arguments_text(o.at(key), args_written);
  if (!text) return std::nullopt;
  return tool_call{new_tool_call_id(syntax), name->get<std::string>(), std::move(*text)};
}

using calls_t = std::vector<tool_call>;

std::optional<calls_t> hermes_calls(std::string_view s, size_t pos) {
  calls_t calls;
  while ((pos = s.find(hermes_open, pos)) != npos) {
    pos += hermes_open.size();
    auto o = json_at(s, pos);
    if (!o) return std::nullopt;
    auto c = call_from_object(tool_syntax::hermes, o->value, o->text);
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
    pos = skip_blanks(s, pos);
    if (s.substr(pos).starts_with(hermes_close)) pos += hermes_close.size();
    else if (pos != s.size()) return std::nullopt;  // only the last call may lack its close (cut at the end token)
  }
  return calls;
}

std::optional<calls_t> llama3_calls(std::string_view s) {
  size_t pos = skip_blanks(s, 0);
  if (s.substr(pos).starts_with(python_tag)) pos += python_tag.size();
  calls_t calls;
  while (true) {
    auto o = json_at(s, pos);
    if (!o) return std::nullopt;
    auto c = call_from_object(tool_syntax::llama3_json, o->value, o->text, true);
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
    pos = skip_blanks(s, pos);
    if (pos == s.size()) return calls;
    if (s[pos] != ';') return std::nullopt;
    ++pos;
  }
}

std::optional<calls_t> mistral_list_calls(std::string_view s, size_t pos) {
  pos += mistral_open.size();
  auto list = json_at(s, pos);
  if (!list || !list->value.is_array() || list->value.empty()) return std::nullopt;
  const auto written = parts_of(list->text);
  if (written.size() != list->value.size()) return std::nullopt;
  calls_t calls;
  for (size_t i = 0; i < written.size(); ++i) {
    auto c = call_from_object(tool_syntax::mistral_list, list->value[i], written[i].second);
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
  }
  return calls;
}

std::optional<calls_t> mistral_args_calls(std::string_view s, size_t pos) {
  calls_t calls;
  while (pos < s.size()) {
    if (!s.substr(pos).starts_with(mistral_open)) return std::nullopt;
    pos += mistral_open.size();
    const size_t args = s.find(mistral_args, pos);
    if (args == npos) return std::nullopt;
    std::string_view name = s.substr(pos, args - pos);
    if (const size_t id = name.find(mistral_id); id != npos) name = name.substr(0, id);  // the model's own id: ours replace it
    name = trim(name);
    if (name.empty() || name.find_first_of(" \t\r\n{}[]") != npos) return std::nullopt;
    pos = args + mistral_args.size();
    auto o = json_at(s, pos);
    if (!o) return std::nullopt;
    auto text = arguments_text(o->value, o->text);
    if (!text) return std::nullopt;
    calls.push_back({new_tool_call_id(tool_syntax::mistral_args), std::string(name), std::move(*text)});
    // Another call, or the end (text after the calls is dropped, as the other syntaxes drop it).
    pos = s.find(mistral_open, pos);
    if (pos == npos) break;
  }
  return calls;
}

// Gemma 4 writes arguments in its own notation (the template's format_argument): strings between
// <|"|> marks, bare or marked keys, true/false, numbers as written, objects and arrays in JSON's
// brackets. No library reads it, so this small recursive reader does, writing JSON text as it goes
// (numbers keep the model's digits).
class gemma_value_reader {
 public:
  gemma_value_reader(std::string_view s, size_t pos) : s_(s), pos_(pos) {}
  size_t pos() const { return pos_; }

  std::optional<std::string> value(int depth = 0) {
    if (depth > max_call_depth) return std::nullopt;
    pos_ = skip_blanks(s_, pos_);
    if (pos_ >= s_.size()) return std::nullopt;
    if (auto str = quoted()) return json_string(*str);
    if (s_[pos_] == '{') return object(depth);
    if (s_[pos_] == '[') return array(depth);
    return scalar();
  }

  std::optional<std::string> object(int depth) {
    ++pos_;  // '{'
    std::string o = "{";
    pos_ = skip_blanks(s_, pos_);
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, o + "}";
    while (true) {
      pos_ = skip_blanks(s_, pos_);
      std::string key;
      if (auto q = quoted()) {
        key = std::move(*q);
      } else {
        const size_t colon = s_.find(':', pos_);
        if (colon == npos) return std::nullopt;
        key = std::string(trim(s_.substr(pos_, colon - pos_)));
        if (key.empty() || key.find_first_of("{}[],") != std::string::npos) return std::nullopt;
        pos_ = colon;
      }
      pos_ = skip_blanks(s_, pos_);
      if (pos_ >= s_.size() || s_[pos_] != ':') return std::nullopt;
      ++pos_;
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      o += json_string(key) + ":" + *v;
      pos_ = skip_blanks(s_, pos_);
      if (pos_ >= s_.size()) return std::nullopt;
      if (s_[pos_] == '}') return ++pos_, o + "}";
      if (s_[pos_] != ',') return std::nullopt;
      o += ',';
      ++pos_;
    }
  }

 private:
  static std::string json_string(const std::string& s) { return ordered_json_text(ojson(s)); }

  std::optional<std::string> quoted() {
    if (!s_.substr(pos_).starts_with(gemma4_quote)) return std::nullopt;
    const size_t start = pos_ + gemma4_quote.size();
    const size_t end = s_.find(gemma4_quote, start);
    if (end == npos) return std::nullopt;
    pos_ = end + gemma4_quote.size();
    return std::string(s_.substr(start, end - start));
  }

  std::optional<std::string> array(int depth) {
    ++pos_;  // '['
    std::string a = "[";
    pos_ = skip_blanks(s_, pos_);
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, a + "]";
    while (true) {
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      a += *v;
      pos_ = skip_blanks(s_, pos_);
      if (pos_ >= s_.size()) return std::nullopt;
      if (s_[pos_] == ']') return ++pos_, a + "]";
      if (s_[pos_] != ',') return std::nullopt;
      a += ',';
      ++pos_;
    }
  }

  // true, false, null (Python's None as the template prints it) or a JSON number, as written.
  std::optional<std::string> scalar() {
    size_t end = pos_;
    while (end < s_.size() && std::string_view(",}] \t\r\n").find(s_[end]) == npos) ++end;
    const std::string_view word = s_.substr(pos_, end - pos_);
    pos_ = end;
    if (word == "true" || word == "false" || word == "null") return std::string(word);
    if (word == "None") return "null";
    const ojson n = parse_json(word);
    if (n.is_discarded() || !n.is_number()) return std::nullopt;
    return std::string(word);
  }

  std::string_view s_;
  size_t pos_;
};

std::optional<calls_t> gemma4_calls(std::string_view s, size_t pos) {
  calls_t calls;
  constexpr std::string_view call = "call:";
  while ((pos = s.find(gemma4_open, pos)) != npos) {
    pos = skip_blanks(s, pos + gemma4_open.size());
    if (!s.substr(pos).starts_with(call)) return std::nullopt;
    pos += call.size();
    const size_t brace = s.find('{', pos);
    if (brace == npos) return std::nullopt;
    const std::string_view name = trim(s.substr(pos, brace - pos));
    if (name.empty() || name.find_first_of(" \t\r\n[]<>") != npos) return std::nullopt;
    gemma_value_reader r(s, brace);
    std::string args_text;
    if (auto args = r.object(0)) {
      pos = r.pos();
      args_text = std::move(*args);
    } else {
      // Arguments given as JSON text are written inside the braces as they are: {{"a": 1}}.
      pos = brace + 1;
      auto json_args = json_at(s, pos);
      if (!json_args || !json_args->value.is_object()) return std::nullopt;
      pos = skip_blanks(s, pos);
      if (pos >= s.size() || s[pos] != '}') return std::nullopt;
      ++pos;
      args_text = std::string(json_args->text);
    }
    calls.push_back({new_tool_call_id(tool_syntax::gemma4), std::string(name), std::move(args_text)});
    pos = skip_blanks(s, pos);
    if (s.substr(pos).starts_with(gemma4_close)) pos += gemma4_close.size();
    else if (pos != s.size()) return std::nullopt;
  }
  return calls;
}

}  // namespace

tool_syntax tool_syntax_of(std::string_view t) {
  // The most specific marker first: Mistral's newer templates also write [TOOL_CALLS].
  if (t.find(mistral_open) != npos) return t.find(mistral_args) != npos ? tool_syntax::mistral_args : tool_syntax::mistral_list;
  if (t.find(gemma4_open) != npos) return tool_syntax::gemma4;
  // Qwen3-Coder's <tool_call><function=...> and GLM's <tool_call>name<arg_key> are XML inside the same
  // tag, not Hermes JSON: no syntax glia reads (a clear refusal, not calls returned as text).
  if (t.find(hermes_open) != npos)
    return t.find("<function=") != npos || t.find("<arg_key>") != npos ? tool_syntax::none : tool_syntax::hermes;
  if (t.find(python_tag) != npos || t.find("Given the following functions") != npos) return tool_syntax::llama3_json;
  return tool_syntax::none;
}

bool template_reads_tools(std::string_view t) { return t.find("tools") != npos; }

size_t think_close_end(std::string_view text, size_t scan_from) {
  const size_t at = text.find(think_close, scan_from);
  return at == npos ? npos : at + think_close.size();
}

bool opens_thinking(std::string_view text) { return text.substr(skip_blanks(text, 0)).starts_with(think_open); }

size_t partial_think_close_at(std::string_view text) {
  return partial_tag_at(text, think_close);
}

size_t tool_calls_start(tool_syntax syntax, std::string_view text, size_t from, size_t& maybe_at) {
  maybe_at = text.size();
  if (syntax == tool_syntax::none) return npos;
  if (syntax == tool_syntax::llama3_json) {
    const size_t first = skip_blanks(text, 0);
    if (first == text.size()) {
      maybe_at = 0;
      return npos;
    }
    const std::string_view rest = text.substr(first);
    if (rest.front() == '{' || rest.starts_with(python_tag)) return 0;
    if (python_tag.starts_with(rest)) maybe_at = 0;
    return npos;
  }
  const std::string_view marker = marker_of(syntax);
  if (const size_t at = text.find(marker, from); at != npos) return at;
  maybe_at = partial_tag_at(text, marker, from);
  return npos;
}

parsed_reply parse_tool_reply(tool_syntax syntax, std::string_view text) {
  parsed_reply r;
  size_t maybe_at = 0;
  // Reasoning may mention a marker: calls come after it (a reply that opened it and never closed it
  // has none).
  size_t from = 0;
  if (syntax != tool_syntax::llama3_json) {
    from = think_close_end(text, 0);
    if (from == npos) from = opens_thinking(text) ? text.size() + 1 : 0;
  }
  const size_t start = from > text.size() ? npos : tool_calls_start(syntax, text, from, maybe_at);
  std::optional<calls_t> calls;
  if (start != npos) {
    switch (syntax) {
      case tool_syntax::hermes: calls = hermes_calls(text, start); break;
      case tool_syntax::llama3_json: calls = llama3_calls(text); break;
      case tool_syntax::mistral_list: calls = mistral_list_calls(text, start); break;
      case tool_syntax::mistral_args: calls = mistral_args_calls(text, start); break;
      case tool_syntax::gemma4: calls = gemma4_calls(text, start); break;
      case tool_syntax::none: break;
    }
  }
  if (!calls || calls->empty()) {
    r.content = std::string(text);
    return r;
  }
  r.content = std::string(trim_end(text.substr(0, start)));
  r.calls = std::move(*calls);
  return r;
}

std::string new_tool_call_id(tool_syntax syntax) {
  const bool mistral = syntax == tool_syntax::mistral_list || syntax == tool_syntax::mistral_args;
  return mistral ? random_id("", 9) : random_id("call_", 24);
}

std::optional<std::vector<tool_call>> parse_required_calls(tool_syntax syntax, std::string_view text) {
  ojson list = parse_bounded(text);
  if (list.is_discarded() || !list.is_array() || list.empty()) return std::nullopt;
  const auto written = parts_of(text);
  if (written.size() != list.size()) return std::nullopt;
  calls_t calls;
  for (size_t i = 0; i < written.size(); ++i) {
    auto c = call_from_object(syntax, list[i], written[i].second, true);
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
  }
  return calls;
}

std::vector<std::string> tool_marker_tokens(tool_syntax syntax) {
  switch (syntax) {
    case tool_syntax::hermes: return {std::string(hermes_open), std::string(hermes_close)};
    case tool_syntax::llama3_json: return {std::string(python_tag)};
    case tool_syntax::mistral_list: return {std::string(mistral_open)};
    case tool_syntax::mistral_args: return {std::string(mistral_open), std::string(mistral_args), std::string(mistral_id)};
    case tool_syntax::gemma4: return {std::string(gemma4_open), std::string(gemma4_close), std::string(gemma4_quote)};
    case tool_syntax::none: break;
  }
  return {};
}

}  // namespace glia::server
