#include "server/native_request.h"

#include <fmt/core.h>

#include <cmath>

#include "core/json_text.h"
#include "server/request_fields.h"

namespace glia::server {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// Copied as they are: the names and meanings /v1/completions shares with llama-server.
constexpr const char* shared_fields[] = {"prompt", "temperature", "top_k", "top_p", "min_p", "stop", "presence_penalty", "frequency_penalty",
                                         "repeat_penalty", "ignore_eos", "stream", "grammar", "json_schema", "model"};

// llama-server's logit_bias: [[id, bias], ...] with false for a ban, or {"id": bias} as OpenAI's.
// Biases by token text ([["Hello", -1]]) need the text's tokens, which glia does not look up.
field_error translate_logit_bias(const ojson& in, ojson& out) {
  if (in.is_object()) {
    out = in;
    return std::nullopt;
  }
  if (!in.is_array()) return bad_request(fmt::format("'logit_bias' must be an array of [token id, bias] pairs, got {}", json_type_name(in)), "logit_bias");
  out = ojson::object();
  for (const ojson& pair : in) {
    if (!pair.is_array() || pair.size() != 2 || !(pair[1].is_number() || pair[1].is_boolean()))
      return bad_request("'logit_bias' entries must be [token id, bias] pairs (the bias a number, or false for a ban)", "logit_bias");
    if (pair[0].is_string())
      return bad_request("'logit_bias' by token text is not supported; give token ids (POST /tokenize finds them)", "logit_bias");
    if (!pair[0].is_number_integer() || pair[0].get<int64_t>() < 0)
      return bad_request(fmt::format("'logit_bias' token ids must be integers >= 0, got {}", pair[0].dump()), "logit_bias");
    if (pair[1].is_boolean() && pair[1].get<bool>()) continue;  // true: no bias, as llama-server reads it
    out[std::to_string(pair[0].get<int64_t>())] = pair[1];
  }
  return std::nullopt;
}

// llama-server's mixed prompt forms, which /v1/completions does not take: a list of text and ids (one
// prompt), or a list whose prompts are of different forms or mix within themselves. Returns the
// prompts as lists of parts; none when the prompt is one of OpenAI's forms.
std::vector<std::vector<json>> mixed_prompts(const json& p) {
  if (!p.is_array() || p.empty()) return {};
  bool text = false, number = false, list = false, mixed_list = false;
  for (const json& e : p) {
    text |= e.is_string();
    number |= e.is_number();
    list |= e.is_array();
    if (e.is_array())
      for (const json& x : e) mixed_list |= x.is_string();
  }
  if (text && number && !list) return {std::vector<json>(p.begin(), p.end())};
  if (!(list && (text || mixed_list)) || number) return {};
  std::vector<std::vector<json>> out;
  for (const json& e : p) out.push_back(e.is_array() ? std::vector<json>(e.begin(), e.end()) : std::vector<json>{e});
  return out;
}

// llama.cpp's sampler fields that /v1/completions does not take, set on the parsed request.
field_error read_sampler_extras(const json& obj, sampler_params& s) {
  const auto real = [&](const char* key, float& field) -> field_error {
    std::optional<double> d;
    GLIA_FIELD(read_number(obj, key, -1e9, 1e9, d));
    if (d) field = float(*d);
    return std::nullopt;
  };
  const auto integer = [&](const char* key, int& field) -> field_error {
    std::optional<int64_t> i;
    GLIA_FIELD(read_int(obj, key, -1, INT32_MAX, i));
    if (i) field = int(*i);
    return std::nullopt;
  };
  GLIA_FIELD(real("typical_p", s.typical_p));
  GLIA_FIELD(integer("repeat_last_n", s.repeat_last_n));
  GLIA_FIELD(integer("min_keep", s.min_keep));
  GLIA_FIELD(real("dry_multiplier", s.dry_multiplier));
  GLIA_FIELD(real("dry_base", s.dry_base));
  GLIA_FIELD(integer("dry_allowed_length", s.dry_allowed_length));
  GLIA_FIELD(integer("dry_penalty_last_n", s.dry_penalty_last_n));
  GLIA_FIELD(real("xtc_probability", s.xtc_probability));
  GLIA_FIELD(real("xtc_threshold", s.xtc_threshold));
  if (auto it = obj.find("dry_sequence_breakers"); it != obj.end() && !it->is_null()) {
    if (!it->is_array()) return bad_request("'dry_sequence_breakers' must be an array of strings", "dry_sequence_breakers");
    s.dry_sequence_breakers.clear();
    for (const json& b : *it) {
      if (!b.is_string()) return bad_request("'dry_sequence_breakers' must be an array of strings", "dry_sequence_breakers");
      s.dry_sequence_breakers.push_back(b.get<std::string>());
    }
  }
  if (status v = validate(s); !v) return bad_request(v.message());
  return std::nullopt;
}

// obj: the body for reading values; ordered: the same body in its own key order, from which fields
// are copied (a JSON schema's properties are generated in the order they are declared).
api_result<native_request> parse_object(const json& obj, const ojson& ordered, const sampler_params& defaults) {
  ojson o = ojson::object();
  for (const char* k : shared_fields)
    if (auto it = ordered.find(k); it != ordered.end()) o[k] = *it;
  std::vector<std::vector<json>> mixed;
  if (auto it = obj.find("prompt"); it != obj.end()) mixed = mixed_prompts(*it);
  for (const auto& parts : mixed)
    for (const json& x : parts)
      if (!x.is_string() && !(x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= INT32_MAX))
        return bad_request(fmt::format("'prompt' parts must be strings or token ids, got {}", x.dump().substr(0, 40)), "prompt");
  if (!mixed.empty()) o["prompt"] = ojson(std::vector<std::string>(mixed.size(), "x"));  // stand-ins: the route tokenizes them
  // llama-server reads top_k <= 0 as off and a temperature <= 0 as greedy.
  if (o.contains("top_k") && o["top_k"].is_number() && o["top_k"].get<double>() <= 0) o["top_k"] = 0;
  if (o.contains("temperature") && o["temperature"].is_number() && o["temperature"].get<double>() < 0) o["temperature"] = 0;
  // n_predict (max_tokens as an alias): -1 is no limit, and so is llama-server's -2 (until the context is full).
  for (const char* k : {"max_tokens", "n_predict"}) {
    std::optional<int64_t> n;
    GLIA_FIELD(read_int(obj, k, -2, INT32_MAX, n));
    if (n && *n >= 0) o["max_tokens"] = *n;
    else if (n) o.erase("max_tokens");
  }
  // llama-server's seeds are 32 bits (-5 is 4294967291), and 0xFFFFFFFF (its -1) draws one at random.
  if (auto it = obj.find("seed"); it != obj.end() && !it->is_null()) {
    if (!it->is_number_integer()) return bad_request(fmt::format("'seed' must be an integer, got {}", json_type_name(*it)), "seed");
    const auto seed = uint32_t(it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t(it->get<int64_t>()));
    if (seed != 0xFFFFFFFF) o["seed"] = seed;
  }
  if (auto it = ordered.find("logit_bias"); it != ordered.end() && !it->is_null()) GLIA_FIELD(translate_logit_bias(*it, o["logit_bias"]));
  // Samplers glia does not have change the text: refused unless off.
  std::optional<int64_t> mirostat;
  GLIA_FIELD(read_int(obj, "mirostat", 0, 2, mirostat));
  if (mirostat.value_or(0) != 0)
    return bad_request("mirostat sampling is not supported (glia samples with top-k, top-p, min-p, typical-p, XTC and DRY); send mirostat 0",
                       "mirostat");
  std::optional<double> off;
  GLIA_FIELD(read_number(obj, "dynatemp_range", -1e9, 1e9, off));
  if (off.value_or(0) > 0) return bad_request("dynamic temperature is not supported; send dynatemp_range 0", "dynatemp_range");
  off.reset();
  GLIA_FIELD(read_number(obj, "top_n_sigma", -1e9, 1e9, off));
  if (off.value_or(0) > 0) return bad_request("top-n-sigma sampling is not supported; send top_n_sigma -1", "top_n_sigma");
  std::optional<bool> post_sampling;
  GLIA_FIELD(read_bool(obj, "post_sampling_probs", post_sampling));
  std::optional<int64_t> n_probs;
  GLIA_FIELD(read_int(obj, "n_probs", 0, 1024, n_probs));

  auto parsed = parse_completion_request(ordered_json_text(o), defaults);
  if (!parsed.ok()) return parsed.error();
  native_request n{std::move(parsed.value()), std::move(mixed), false, {}};
  std::optional<bool> return_tokens;
  GLIA_FIELD(read_bool(obj, "return_tokens", return_tokens));
  n.return_tokens = return_tokens.value_or(false);
  if (auto it = obj.find("response_fields"); it != obj.end() && !it->is_null()) {
    if (!it->is_array()) return bad_request("'response_fields' must be an array of strings", "response_fields");
    for (const json& f : *it) {
      if (!f.is_string()) return bad_request("'response_fields' must be an array of strings", "response_fields");
      n.response_fields.push_back(f.get<std::string>());
    }
  }
  GLIA_FIELD(read_sampler_extras(obj, n.r.params.sampling));
  // Every token's text is reported, with the n_probs alternatives asked for.
  n.r.params.logprobs = true;
  n.r.params.top_logprobs = int(n_probs.value_or(0));
  n.r.params.post_sampling_probs = post_sampling.value_or(false);
  if (n.r.params.stream && n.r.prompts.size() > 1)
    return bad_request("a streamed completion takes one prompt (send the others apart)", "prompt");
  return n;
}

}  // namespace

std::vector<int64_t> tokenize_mixed(const session& s, const std::vector<json>& parts) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].is_number_integer()) {
      ids.push_back(parts[i].get<int64_t>());
      continue;
    }
    auto t = s.tokenize(parts[i].get<std::string>(), i == 0, true);
    if (t) ids.insert(ids.end(), t->begin(), t->end());
  }
  return ids;
}

api_result<native_request> parse_native_request(std::string_view body, const sampler_params& defaults) {
  auto j = parse_json_object(body);
  if (!j.ok()) return j.error();
  return parse_object(j.value(), ojson::parse(body), defaults);
}

api_result<std::pair<native_request, infill_input>> parse_infill_request(std::string_view body, const sampler_params& defaults) {
  auto j = parse_json_object(body);
  if (!j.ok()) return j.error();
  json obj = j.value();
  infill_input in;
  std::optional<std::string> s;
  GLIA_FIELD(read_string(obj, "input_prefix", s));
  in.prefix = s.value_or("");
  s.reset();
  GLIA_FIELD(read_string(obj, "input_suffix", s));
  in.suffix = s.value_or("");
  s.reset();
  GLIA_FIELD(read_string(obj, "prompt", s));
  in.middle = s.value_or("");
  if (auto it = obj.find("input_extra"); it != obj.end() && !it->is_null()) {
    if (!it->is_array()) return bad_request("'input_extra' must be an array of {\"filename\", \"text\"} objects", "input_extra");
    for (const json& e : *it) {
      if (!e.is_object() || !e.value("text", json()).is_string() || !e.value("filename", json("")).is_string())
        return bad_request("'input_extra' must be an array of {\"filename\", \"text\"} objects (strings)", "input_extra");
      in.extra.push_back({e.value("filename", std::string()), e["text"].get<std::string>()});
    }
  }
  // The prompt is built from the fields above; a placeholder stands in for the parse.
  obj["prompt"] = "";
  ojson ordered = ojson::parse(body);
  ordered["prompt"] = "";
  auto n = parse_object(obj, ordered, defaults);
  if (!n.ok()) return n.error();
  return std::make_pair(std::move(n.value()), std::move(in));
}

}  // namespace glia::server
