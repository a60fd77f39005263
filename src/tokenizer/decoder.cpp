#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/replace_all.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

namespace {

// llama_detokenize's three passes, in place, as llama.cpp writes them (including its quirk of
// blanking the character after " ' ", which keeps that character from being read as a space).
void clean_up_llama_cpp(std::string& t) {
  const size_t n1 = t.size();
  size_t total = n1 ? 1 : 0;
  for (size_t i = 1; i < n1; ++i) {  // " ?", " !", " .", " ,"
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    t[total++] = x;
  }
  const size_t n2 = total;
  total = n2 ? 1 : 0;
  for (size_t i = 1; i < n2; ++i) {  // " ' "
    const char x = t[i];
    if (x == '\'' && i + 1 < n2 && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --total;
      t[++i] = '\0';
    }
    t[total++] = x;
  }
  const size_t n3 = total;
  total = n3 ? 1 : 0;
  for (size_t i = 1; i < n3; ++i) {  // " 's", " 'm", " 're", " 've"
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n3) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (i + 2 < n3) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    t[total++] = x;
  }
  t.resize(total);
}

// transformers' clean_up_tokenization: plain replacements, in this order.
void clean_up_hf(std::string& t) {
  static constexpr std::pair<std::string_view, std::string_view> rules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  if (t.find(' ') == std::string::npos) return;
  for (const auto& [from, to] : rules) replace_all_in_place(t, from, to);
}

bool is_continuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

}  // namespace

void clean_up(std::string& text, cleanup_style style) {
  switch (style) {
    case cleanup_style::none: return;
    case cleanup_style::llama_cpp: clean_up_llama_cpp(text); return;
    case cleanup_style::hf: clean_up_hf(text); return;
  }
}

size_t clean_up_stable_prefix(std::string_view text) {
  for (size_t c = text.size(); c >= 3; --c) {
    if (c < text.size() && is_continuation(text[c])) continue;
    if (text[c - 1] != ' ' && text[c - 2] != ' ' && text[c - 3] != ' ') return c;
  }
  return 0;
}

result<hf_decoder> hf_decoder::compile(const pipeline_spec& spec) {
  hf_decoder d;
  d.spec_ = spec;
  bool fused = false;
  for (const auto& s : spec.decoders) {
    step st;
    st.spec = s;
    st.after_fuse = fused;
    using k = decoder_spec::kind;
    if (s.what == k::fuse) fused = true;
    if (s.what == k::replace && s.pattern.is_regex) {
      auto r = regex::compile(s.pattern.text, spec.dialect);
      if (!r) return make_error("Replace decoder: {}", r.message());
      st.re = std::move(*r);
    }
    if (s.what == k::strip && fused) {
      if (d.strip_start_ || d.strip_stop_) return make_error("two Strip decoders after Fuse are not supported");
      d.strip_start_ = s.start;
      d.strip_stop_ = s.stop;
      d.strip_char_ = s.content;
    }
    if (s.what == k::metaspace && s.add_prefix_space) d.metaspace_first_ = true;
    d.steps_.push_back(std::move(st));
  }
  return d;
}

void hf_decoder::apply(const step& s, std::vector<std::string>& toks, std::vector<bool>& added, bool whole_text) const {
  using k = decoder_spec::kind;
  switch (s.spec.what) {
    case k::byte_level: {
      // Added tokens stay as they are; each run of other tokens becomes its bytes.
      std::vector<std::string> out;
      std::vector<bool> out_added;
      bool in_run = false;
      for (size_t i = 0; i < toks.size(); ++i) {
        if (added[i]) {
          out.push_back(toks[i]);
          out_added.push_back(true);
          in_run = false;
          continue;
        }
        if (!in_run) out.emplace_back(), out_added.push_back(false);
        in_run = true;
        decode_byte_level(toks[i], out.back());
      }
      toks.swap(out);
      added.swap(out_added);
      break;
    }
    case k::replace:
      for (auto& t : toks) {
        if (!s.re) {
          replace_all_in_place(t, s.spec.pattern.text, s.spec.content);
          continue;
        }
        std::string out;
        size_t pos = 0, prev = 0, b = 0, e = 0;
        while (pos <= t.size() && s.re->find(t, pos, b, e) == regex::found::match) {
          out.append(t, prev, b - prev);
          out += s.spec.content;
          prev = e;
          pos = e > b ? e : b + 1;
        }
        out.append(t, prev);
        t.swap(out);
      }
      break;
    case k::byte_fallback: {
      std::vector<std::string> out;
      std::vector<bool> out_added;
      bool in_bytes = false;
      for (size_t i = 0; i < toks.size(); ++i) {
        const int b = parse_byte_token(toks[i]);
        if (b < 0) {
          out.push_back(std::move(toks[i]));
          out_added.push_back(added[i]);
          in_bytes = false;
          continue;
        }
        if (!in_bytes) out.emplace_back(), out_added.push_back(false);
        in_bytes = true;
        out.back() += static_cast<char>(b);
      }
      toks.swap(out);
      added.swap(out_added);
      break;
    }
    case k::fuse: {
      std::string all;
      for (const auto& t : toks) all += t;
      toks.assign(1, std::move(all));
      added.assign(1, false);
      break;
    }
    case k::strip:
      if (s.after_fuse && !whole_text) break;  // the stream applies it at the start / end of the text
      for (auto& t : toks) {
        const std::string& c = s.spec.content;
        size_t b = 0, e = t.size();
        for (int i = 0; i < s.spec.start && !c.empty() && t.compare(b, c.size(), c) == 0; ++i) b += c.size();
        for (int i = 0; i < s.spec.stop && !c.empty() && e >= b + c.size() && t.compare(e - c.size(), c.size(), c) == 0;
             ++i)
          e -= c.size();
        t = t.substr(b, e - b);
      }
      break;
    case k::metaspace:
      for (size_t i = 0; i < toks.size(); ++i) {
        replace_all_in_place(toks[i], s.spec.replacement, " ");
        if (whole_text && i == 0 && s.spec.add_prefix_space && !toks[i].empty() && toks[i][0] == ' ') toks[i].erase(0, 1);
      }
      break;
  }
}

std::string hf_decoder::decode(std::span<const std::string_view> tokens, const std::vector<bool>& added_in) const {
  std::vector<std::string> toks(tokens.begin(), tokens.end());
  std::vector<bool> added = added_in;
  std::string out;
  if (!spec_.has_decoder) {  // tokenizers joins the tokens with spaces
    for (size_t i = 0; i < toks.size(); ++i) out += (i ? " " : "") + toks[i];
    return out;
  }
  for (const auto& s : steps_) apply(s, toks, added, true);
  for (const auto& t : toks) out += t;
  return out;
}

std::string hf_decoder::piece(std::string_view token, bool added_in) const {
  std::vector<std::string> toks{std::string(token)};
  if (!spec_.has_decoder) return toks[0];
  std::vector<bool> added{added_in};
  for (const auto& s : steps_) apply(s, toks, added, false);
  std::string out;
  for (const auto& t : toks) out += t;
  return out;
}

}  // namespace glia::tok
