#include "server/tool_request.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/json_depth.h"
#include "sampler/grammar/constraint.h"

namespace glia::server {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// Names are written into the model's own call syntax and read back from it: no spaces or control
// characters, and none of the brackets and quotes the syntaxes put around them.
bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  for (unsigned char c : name)
    if (c <= ' ' || c == 0x7f || std::string_view("{}[]<>\"'").find(char(c)) != std::string_view::npos) return false;
  return true;
}

field_error read_tool(const json& t, size_t i, std::set<std::string>& names) {
  const std::string where = fmt::format("tools[{}]", i);
  if (!t.is_object()) return bad_request(fmt::format("'{}' must be an object, got {}", where, json_type_name(t)), "tools");
  for (const auto& [k, v] : t.items())
    if (k != "type" && k != "function") return bad_request(fmt::format("'{}.{}' is not supported", where, shown(k)), "tools");
  if (auto type = t.find("type"); type != t.end() && *type != "function")
    return bad_request(fmt::format("'{}.type' must be \"function\", got {}", where, type->dump()), "tools");
  auto f = t.find("function");
  if (f == t.end() || !f->is_object()) return bad_request(fmt::format("'{}' needs a 'function' object", where), "tools");
  for (const auto& [k, v] : f->items())
    if (k != "name" && k != "description" && k != "parameters" && k != "strict")
      return bad_request(fmt::format("'{}.function.{}' is not supported", where, shown(k)), "tools");
  auto name = f->find("name");
  if (name == f->end() || !name->is_string()) return bad_request(fmt::format("'{}.function' needs a string 'name'", where), "tools");
  const std::string n = name->get<std::string>();
  if (!valid_function_name(n))
    return bad_request(fmt::format("'{}.function.name' \"{}\" is not a usable name (1 to 256 characters, no spaces, quotes or brackets)",
                                   where, shown(n)), "tools");
  if (!names.insert(n).second) return bad_request(fmt::format("two tools are named {}", shown(n)), "tools");
  if (auto d = f->find("description"); d != f->end() && !d->is_null() && !d->is_string())
    return bad_request(fmt::format("'{}.function.description' must be a string, got {}", where, json_type_name(*d)), "tools");
  if (auto p = f->find("parameters"); p != f->end() && !p->is_null()) {
    if (!p->is_object())
      return bad_request(fmt::format("'{}.function.parameters' must be a JSON schema object, got {}", where, json_type_name(*p)), "tools");
    if (auto type = p->find("type"); type != p->end() && *type != "object")
      return bad_request(fmt::format("'{}.function.parameters' must describe an object (arguments by name), not type {}", where, type->dump()),
                         "tools");
  }
  if (auto s = f->find("strict"); s != f->end() && !s->is_null() && !s->is_boolean())
    return bad_request(fmt::format("'{}.function.strict' must be a boolean, got {}", where, json_type_name(*s)), "tools");
  return std::nullopt;
}

field_error read_choice(const json& obj, const std::set<std::string>& names, tool_options& out) {
  auto c = obj.find("tool_choice");
  if (c == obj.end() || c->is_null()) return std::nullopt;
  const bool have_tools = out.mode != tool_mode::none;
  if (c->is_string()) {
    const std::string v = c->get<std::string>();
    if (v == "none") {
      out.mode = tool_mode::none;
    } else if (v == "auto") {
      // An empty list with "auto" (frameworks send both) asks for nothing; no list at all is a mistake.
      const auto t = obj.find("tools");
      if (!have_tools && (t == obj.end() || t->is_null())) return bad_request("'tool_choice' \"auto\" needs 'tools'", "tool_choice");
    } else if (v == "required") {
      if (!have_tools) return bad_request("'tool_choice' \"required\" needs 'tools'", "tool_choice");
      out.mode = tool_mode::required;
    } else {
      return bad_request(fmt::format("'tool_choice' must be \"none\", \"auto\", \"required\" or a named function, got \"{}\"", shown(v)),
                         "tool_choice");
    }
    return std::nullopt;
  }
  const json* name = nullptr;
  if (c->is_object() && c->value("type", json()) == "function")
    if (auto f = c->find("function"); f != c->end() && f->is_object())
      if (auto n = f->find("name"); n != f->end() && n->is_string()) name = &*n;
  if (!name)
    return bad_request("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                       "tool_choice");
  const std::string n = name->get<std::string>();
  if (!names.count(n)) return bad_request(fmt::format("'tool_choice' names {}, which is not among the tools", shown(n)), "tool_choice");
  out.mode = tool_mode::named;
  out.function = n;
  return std::nullopt;
}

// Local references ("#/$defs/x") of a schema moved to `at` within a larger one, rewritten to point
// there (Pydantic's schemas refer to their own $defs).
void rebase_refs(ojson& schema, const std::string& at) {
  if (schema.is_array()) {
    for (ojson& v : schema) rebase_refs(v, at);
    return;
  }
  if (!schema.is_object()) return;
  for (auto& [k, v] : schema.items()) {
    if (k == "$ref" && v.is_string() && v.get_ref<const std::string&>().starts_with("#"))
      v = at + v.get<std::string>().substr(1);
    else
      rebase_refs(v, at);
  }
}

// A tool's parameters schema (an object's, whether or not it says so), or any object when it has
// none; placed at JSON pointer `at` of the forced choice's schema.
ojson parameters_of(const ojson& tool, const std::string& at) {
  const ojson& f = tool.at("function");
  auto p = f.find("parameters");
  if (p == f.end() || !p->is_object()) return {{"type", "object"}};
  ojson schema = *p;
  if (!schema.contains("type")) schema["type"] = "object";
  rebase_refs(schema, at);
  return schema;
}

ojson forced_schema(const tool_options& o) {
  if (o.mode == tool_mode::named) {
    for (const ojson& t : o.tools)
      if (t.at("function").at("name") == o.function) return parameters_of(t, "#");
  }
  ojson alternatives = ojson::array();
  for (size_t i = 0; i < o.tools.size(); ++i) {
    const ojson& t = o.tools[i];
    const std::string at = fmt::format("#/items/anyOf/{}/properties/parameters", i);
    alternatives.push_back({{"type", "object"},
                            {"properties", {{"name", {{"const", t.at("function").at("name")}}}, {"parameters", parameters_of(t, at)}}},
                            {"required", {"name", "parameters"}},
                            {"additionalProperties", false}});
  }
  ojson schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", alternatives}}}};
  if (!o.parallel) schema["maxItems"] = 1;
  return schema;
}

}  // namespace

field_error read_tool_options(const json& obj, std::string_view body, sampler_params& s, tool_options& out) {
  std::set<std::string> names;
  if (auto t = obj.find("tools"); t != obj.end() && !t->is_null()) {
    if (!t->is_array()) return bad_request(fmt::format("'tools' must be an array, got {}", json_type_name(*t)), "tools");
    for (size_t i = 0; i < t->size(); ++i)
      if (auto e = read_tool((*t)[i], i, names)) return e;
    if (!t->empty()) {
      // Again in the client's order: templates print the definitions (tojson), and the forced
      // choice's schema generates properties in that order.
      out.tools = ojson::parse(body, nullptr, false).at("tools");
      out.mode = tool_mode::automatic;
    }
  }
  if (auto e = read_choice(obj, names, out)) return e;
  std::optional<bool> parallel;
  if (auto e = read_bool(obj, "parallel_tool_calls", parallel)) return e;
  out.parallel = parallel.value_or(true);
  if (out.mode == tool_mode::none) return std::nullopt;
  if (s.grammar)
    return bad_request(out.forced() ? "'tool_choice' forces a tool call, which a response format or grammar would also constrain: give one"
                                    : "a response format or grammar constrains the whole reply, so no tool call could be written; "
                                      "drop it or set 'tool_choice' to \"none\"",
                       "tool_choice");
  if (!out.forced()) return std::nullopt;
  // The constraint lists each tool as an alternative, and a schema's alternatives are capped.
  if (out.mode == tool_mode::required && out.tools.size() > 128)
    return bad_request(fmt::format("'tool_choice' \"required\" takes at most 128 tools, got {}; use \"auto\" or name one", out.tools.size()),
                       "tool_choice");
  auto g = grammar::from_json_schema(forced_schema(out));
  if (!g) {
    // The combined schema's error names a place inside the wrapper of all the calls: the tool at
    // fault, alone, names its own.
    for (size_t i = 0; i < out.tools.size(); ++i) {
      const ojson& f = out.tools[i]["function"];
      if (out.mode == tool_mode::named && f["name"] != out.function) continue;
      const ojson params = f.contains("parameters") ? f["parameters"] : ojson::object();
      if (auto alone = grammar::from_json_schema(params); !alone)
        return bad_request(fmt::format("'tools[{}].function.parameters' (\"{}\") cannot be followed: {}", i, shown(f["name"].get<std::string>()),
                                       alone.message()),
                           "tools");
    }
    return bad_request(fmt::format("'tools': the functions' parameters schemas cannot be followed: {}", g.message()), "tools");
  }
  s.grammar = *g;
  return std::nullopt;
}

field_error read_message_tool_fields(const json& m, const std::string& role, ojson& msg) {
  if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null() && !(calls->is_array() && calls->empty())) {
    if (role != "assistant") return bad_request("only assistant messages carry 'tool_calls'", "messages");
    if (!calls->is_array()) return bad_request(fmt::format("message 'tool_calls' must be an array, got {}", json_type_name(*calls)), "messages");
    ojson out = ojson::array();
    for (const json& c : *calls) {
      auto f = c.is_object() ? c.find("function") : c.end();
      if (!c.is_object() || f == c.end() || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string())
        return bad_request("each of a message's 'tool_calls' needs a 'function' with a string 'name'", "messages");
      if (auto type = c.find("type"); type != c.end() && !type->is_null() && *type != "function")
        return bad_request(fmt::format("a message's tool call type must be \"function\", got {}", type->dump()), "messages");
      ojson call = {{"type", "function"}, {"function", {{"name", (*f)["name"].get<std::string>()}}}};
      if (auto id = c.find("id"); id != c.end() && !id->is_null()) {
        if (!id->is_string()) return bad_request(fmt::format("a tool call 'id' must be a string, got {}", json_type_name(*id)), "messages");
        call["id"] = id->get<std::string>();
      }
      // Templates read the arguments as an object (tojson, items()), as transformers' docs ask; OpenAI
      // clients send the JSON text. Text that is not an object stays text.
      ojson args = ojson::object();
      if (auto a = f->find("arguments"); a != f->end() && !a->is_null()) {
        if (a->is_string()) {
          const std::string& text = a->get_ref<const std::string&>();
          // (Parsed only when shallow: the template prints it recursively.)
          ojson parsed = json_nesting_depth(text) <= 64 ? ojson::parse(text, nullptr, false) : ojson(ojson::value_t::discarded);
          if (!parsed.is_discarded() && parsed.is_object()) args = std::move(parsed);
          else if (text.find_first_not_of(" \t\r\n") != std::string::npos) args = text;  // "" is no arguments: {}
        } else if (a->is_object()) {
          args = ojson::parse(a->dump());
        } else {
          return bad_request(fmt::format("a tool call's 'arguments' must be a JSON string, got {}", json_type_name(*a)), "messages");
        }
      }
      call["function"]["arguments"] = std::move(args);
      out.push_back(std::move(call));
    }
    msg["tool_calls"] = std::move(out);
  }
  auto id = m.find("tool_call_id");
  if (role == "tool" && (id == m.end() || id->is_null()))
    return bad_request("a tool message needs the 'tool_call_id' of the call it answers", "messages");
  if (id != m.end() && !id->is_null()) {
    if (role != "tool") return bad_request("only tool messages carry 'tool_call_id'", "messages");
    if (!id->is_string()) return bad_request(fmt::format("message 'tool_call_id' must be a string, got {}", json_type_name(*id)), "messages");
    msg["tool_call_id"] = id->get<std::string>();
  }
  return std::nullopt;
}

namespace {

bool is_mistral_call_id(const std::string& id) {
  return id.size() == 9 && std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isalnum(c) != 0; });
}

// 9 letters and digits from a 64-bit FNV-1a hash of the id (62^9 > 2^53: collisions are negligible).
std::string mistral_call_id_for(const std::string& id) {
  static constexpr std::string_view alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ull;
  std::string out;
  for (int i = 0; i < 9; ++i, h /= alnum.size()) out += alnum[h % alnum.size()];
  return out;
}

void fit_mistral_call_id(ojson& holder, const char* key) {
  auto it = holder.find(key);
  if (it != holder.end() && it->is_string() && !is_mistral_call_id(it->get<std::string>())) *it = mistral_call_id_for(it->get<std::string>());
}

}  // namespace

void fit_call_ids(tool_syntax syntax, ojson& messages) {
  if (syntax != tool_syntax::mistral_list && syntax != tool_syntax::mistral_args) return;
  for (ojson& m : messages) {
    fit_mistral_call_id(m, "tool_call_id");
    if (auto calls = m.find("tool_calls"); calls != m.end())
      for (ojson& c : *calls) fit_mistral_call_id(c, "id");
  }
}

parsed_reply read_tool_reply(const tool_options& o, tool_syntax syntax, std::string_view text) {
  parsed_reply r;
  if (o.mode == tool_mode::named) {
    // The reply is the arguments, whole or (cut by max_tokens, which finish_reason says) not: as
    // OpenAI and vLLM answer a forced function, and as they stream, piece by piece.
    r.calls.push_back({new_tool_call_id(syntax), o.function, std::string(text)});
  } else if (o.mode == tool_mode::required) {
    if (auto c = parse_required_calls(syntax, text)) r.calls = std::move(*c);
  } else if (o.mode == tool_mode::automatic) {
    r = parse_tool_reply(syntax, text);
    // A call to a function the request does not have is not a call (Llama 3's bare JSON could be
    // an answer that happens to have a "name").
    for (const tool_call& c : r.calls)
      if (std::none_of(o.tools.begin(), o.tools.end(), [&](const ojson& t) { return t.at("function").at("name") == c.name; })) {
        r.calls.clear();
        break;
      }
  }
  if (r.calls.empty()) r.content = std::string(text);
  if (!o.parallel && r.calls.size() > 1) r.calls.resize(1);
  return r;
}

}  // namespace glia::server
