#include "tokenizer/hf_json.h"

namespace glia::tok {

namespace {

using json = nlohmann::json;

std::string type_of(const json& j) {
  const auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Typed optional members: absent or null leaves `out` as it is; a value of another type is an error.
status get_bool(const json& j, const char* key, bool& out, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_boolean()) return make_error("{}: \"{}\" must be a boolean, found {}", where, key, it->dump());
  out = it->get<bool>();
  return {};
}

status get_string(const json& j, const char* key, std::string& out, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) return make_error("{}: \"{}\" must be a string, found {}", where, key, it->dump());
  out = it->get<std::string>();
  return {};
}

status get_int(const json& j, const char* key, int& out, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1'000'000)
    return make_error("{}: \"{}\" must be a small non-negative integer, found {}", where, key, it->dump());
  out = static_cast<int>(it->get<int64_t>());
  return {};
}

// {"String": "..."} or {"Regex": "..."}.
status get_pattern(const json& j, pattern_spec& out, std::string_view where) {
  const auto it = j.find("pattern");
  if (it == j.end() || !it->is_object()) return make_error("{}: \"pattern\" must be an object", where);
  if (auto s = it->find("String"); s != it->end() && s->is_string()) {
    out = {s->get<std::string>(), false};
    return {};
  }
  if (auto r = it->find("Regex"); r != it->end() && r->is_string()) {
    out = {r->get<std::string>(), true};
    return {};
  }
  return make_error("{}: \"pattern\" must hold a \"String\" or a \"Regex\", found {}", where, it->dump());
}

status get_behavior(const json& j, split_behavior& out, std::string_view where) {
  std::string b;
  GLIA_TRY(get_string(j, "behavior", b, where));
  if (b.empty()) return {};
  if (b == "Isolated") out = split_behavior::isolated;
  else if (b == "Removed") out = split_behavior::removed;
  else if (b == "MergedWithPrevious") out = split_behavior::merged_with_previous;
  else if (b == "MergedWithNext") out = split_behavior::merged_with_next;
  else if (b == "Contiguous") out = split_behavior::contiguous;
  else return make_error("{}: unknown behavior '{}'", where, b);
  return {};
}

// Old files spell Metaspace's choice as add_prefix_space, new ones as prepend_scheme.
status get_prepend_scheme(const json& j, pre_tokenizer_spec::prepend& out, std::string_view where) {
  using p = pre_tokenizer_spec::prepend;
  bool add = true;
  GLIA_TRY(get_bool(j, "add_prefix_space", add, where));
  out = add ? p::always : p::never;
  std::string scheme;
  GLIA_TRY(get_string(j, "prepend_scheme", scheme, where));
  if (scheme.empty()) return {};
  if (scheme == "always") out = p::always;
  else if (scheme == "first") out = p::first;
  else if (scheme == "never") out = p::never;
  else return make_error("{}: unknown prepend_scheme '{}'", where, scheme);
  return {};
}

const json* array_member(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? &*it : nullptr;
}

}  // namespace

status parse_normalizer(const json& j, std::vector<normalizer_spec>& out) {
  if (j.is_null()) return {};
  if (!j.is_object()) return make_error("normalizer: expected an object, found {}", j.dump());
  const std::string type = type_of(j);
  const std::string where = "normalizer " + type;
  using k = normalizer_spec::kind;
  normalizer_spec n;
  if (type == "Sequence") {
    const json* items = array_member(j, "normalizers");
    if (!items) return make_error("normalizer Sequence: \"normalizers\" must be an array");
    for (const auto& item : *items) GLIA_TRY(parse_normalizer(item, out));
    return {};
  } else if (type == "NFC") {
    n.what = k::nfc;
  } else if (type == "NFD") {
    n.what = k::nfd;
  } else if (type == "NFKC") {
    n.what = k::nfkc;
  } else if (type == "NFKD") {
    n.what = k::nfkd;
  } else if (type == "Lowercase") {
    n.what = k::lowercase;
  } else if (type == "StripAccents") {
    n.what = k::strip_accents;
  } else if (type == "Prepend") {
    n.what = k::prepend;
    GLIA_TRY(get_string(j, "prepend", n.content, where));
  } else if (type == "Replace") {
    n.what = k::replace;
    GLIA_TRY(get_pattern(j, n.pattern, where));
    GLIA_TRY(get_string(j, "content", n.content, where));
  } else if (type == "Strip") {
    n.what = k::strip;
    GLIA_TRY(get_bool(j, "strip_left", n.left, where));
    GLIA_TRY(get_bool(j, "strip_right", n.right, where));
  } else {
    return make_error("normalizer type '{}' is not supported", type);
  }
  out.push_back(std::move(n));
  return {};
}

status parse_pre_tokenizer(const json& j, std::vector<pre_tokenizer_spec>& out) {
  if (j.is_null()) return {};
  if (!j.is_object()) return make_error("pre_tokenizer: expected an object, found {}", j.dump());
  const std::string type = type_of(j);
  const std::string where = "pre_tokenizer " + type;
  using k = pre_tokenizer_spec::kind;
  pre_tokenizer_spec p;
  if (type == "Sequence") {
    const json* items = array_member(j, "pretokenizers");
    if (!items) return make_error("pre_tokenizer Sequence: \"pretokenizers\" must be an array");
    for (const auto& item : *items) GLIA_TRY(parse_pre_tokenizer(item, out));
    return {};
  } else if (type == "Split") {
    p.what = k::split;
    GLIA_TRY(get_pattern(j, p.pattern, where));
    GLIA_TRY(get_behavior(j, p.behavior, where));
    GLIA_TRY(get_bool(j, "invert", p.invert, where));
  } else if (type == "ByteLevel") {
    p.what = k::byte_level;
    GLIA_TRY(get_bool(j, "add_prefix_space", p.add_prefix_space, where));
    GLIA_TRY(get_bool(j, "use_regex", p.use_regex, where));
  } else if (type == "Metaspace") {
    p.what = k::metaspace;
    GLIA_TRY(get_string(j, "replacement", p.replacement, where));
    GLIA_TRY(get_prepend_scheme(j, p.prepend_scheme, where));
    GLIA_TRY(get_bool(j, "split", p.split_words, where));
  } else if (type == "Digits") {
    p.what = k::digits;
    GLIA_TRY(get_bool(j, "individual_digits", p.individual_digits, where));
  } else if (type == "Whitespace") {
    p.what = k::whitespace;
  } else if (type == "WhitespaceSplit") {
    p.what = k::whitespace_split;
  } else if (type == "Punctuation") {
    p.what = k::punctuation;
    GLIA_TRY(get_behavior(j, p.behavior, where));
  } else {
    return make_error("pre_tokenizer type '{}' is not supported", type);
  }
  out.push_back(std::move(p));
  return {};
}

status parse_decoder(const json& j, std::vector<decoder_spec>& out) {
  if (j.is_null()) return {};
  if (!j.is_object()) return make_error("decoder: expected an object, found {}", j.dump());
  const std::string type = type_of(j);
  const std::string where = "decoder " + type;
  using k = decoder_spec::kind;
  decoder_spec d;
  if (type == "Sequence") {
    const json* items = array_member(j, "decoders");
    if (!items) return make_error("decoder Sequence: \"decoders\" must be an array");
    for (const auto& item : *items) GLIA_TRY(parse_decoder(item, out));
    return {};
  } else if (type == "ByteLevel") {
    d.what = k::byte_level;
  } else if (type == "Replace") {
    d.what = k::replace;
    GLIA_TRY(get_pattern(j, d.pattern, where));
    GLIA_TRY(get_string(j, "content", d.content, where));
  } else if (type == "ByteFallback") {
    d.what = k::byte_fallback;
  } else if (type == "Fuse") {
    d.what = k::fuse;
  } else if (type == "Strip") {
    d.what = k::strip;
    d.content = " ";
    GLIA_TRY(get_string(j, "content", d.content, where));
    GLIA_TRY(get_int(j, "start", d.start, where));
    GLIA_TRY(get_int(j, "stop", d.stop, where));
  } else if (type == "Metaspace") {
    d.what = k::metaspace;
    GLIA_TRY(get_string(j, "replacement", d.replacement, where));
    pre_tokenizer_spec::prepend scheme{};
    GLIA_TRY(get_prepend_scheme(j, scheme, where));
    d.add_prefix_space = scheme != pre_tokenizer_spec::prepend::never;
  } else {
    return make_error("decoder type '{}' is not supported", type);
  }
  out.push_back(std::move(d));
  return {};
}

status parse_post_processor(const json& j, template_spec& out) {
  if (j.is_null()) return {};
  if (!j.is_object()) return make_error("post_processor: expected an object, found {}", j.dump());
  const std::string type = type_of(j);
  if (type == "ByteLevel") return {};
  if (type == "Sequence") {
    const json* items = array_member(j, "processors");
    if (!items) return make_error("post_processor Sequence: \"processors\" must be an array");
    for (const auto& item : *items) {
      template_spec t;
      GLIA_TRY(parse_post_processor(item, t));
      if (!t.present) continue;
      if (out.present) return make_error("post_processor Sequence: more than one template");
      out = std::move(t);
    }
    return {};
  }
  if (type == "TemplateProcessing") {
    const json* single = array_member(j, "single");
    if (!single) return make_error("post_processor TemplateProcessing: \"single\" must be an array");
    out.present = true;
    bool seen_sequence = false;
    for (const auto& item : *single) {
      if (!item.is_object()) return make_error("post_processor TemplateProcessing: bad item {}", item.dump());
      if (auto s = item.find("SpecialToken"); s != item.end() && s->is_object()) {
        std::string id;
        GLIA_TRY(get_string(*s, "id", id, "post_processor TemplateProcessing"));
        if (id.empty()) return make_error("post_processor TemplateProcessing: a SpecialToken without an id");
        (seen_sequence ? out.suffix : out.prefix).push_back(id);
      } else if (auto q = item.find("Sequence"); q != item.end() && q->is_object()) {
        if (seen_sequence) return make_error("post_processor TemplateProcessing: \"single\" has two sequences");
        seen_sequence = true;
      } else {
        return make_error("post_processor TemplateProcessing: bad item {}", item.dump());
      }
    }
    if (!seen_sequence) return make_error("post_processor TemplateProcessing: \"single\" has no sequence");
    return {};
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    out.present = true;
    for (const char* key : {"cls", "sep"}) {
      const auto it = j.find(key);
      if (it == j.end() || !it->is_array() || it->empty() || !(*it)[0].is_string())
        return make_error("post_processor {}: \"{}\" must be [token, id]", type, key);
      (std::string_view(key) == "cls" ? out.prefix : out.suffix).push_back((*it)[0].get<std::string>());
    }
    return {};
  }
  return make_error("post_processor type '{}' is not supported", type);
}

}  // namespace glia::tok
