// File types and llama.cpp's quantization mixes (src/llama-quant.cpp, llama_tensor_get_type), as a
// table: per file type, which attn_v / ffn_down / attn_output tensors get more bits. Not covered:
// the rules for MoE models, the 70B attn_v bump, Falcon, fused attn_qkv and the IQ1/IQ2/IQ3 mixes
// (no family here has them, and the tools do not produce those types).
#include <algorithm>
#include <cctype>
#include <charconv>

#include "model/layer_of.h"
#include "model/quantize.h"

namespace glia {
namespace {

constexpr file_type_info k_file_types[] = {
    {file_type::all_f32, "F32", dtype::f32},           {file_type::mostly_f16, "F16", dtype::f16},
    {file_type::mostly_bf16, "BF16", dtype::bf16},     {file_type::mostly_q4_0, "Q4_0", dtype::q4_0},
    {file_type::mostly_q4_1, "Q4_1", dtype::q4_1},     {file_type::mostly_q5_0, "Q5_0", dtype::q5_0},
    {file_type::mostly_q5_1, "Q5_1", dtype::q5_1},     {file_type::mostly_q8_0, "Q8_0", dtype::q8_0},
    {file_type::mostly_q2_k, "Q2_K", dtype::q2_k},     {file_type::mostly_q3_k_s, "Q3_K_S", dtype::q3_k},
    {file_type::mostly_q3_k_m, "Q3_K_M", dtype::q3_k}, {file_type::mostly_q3_k_l, "Q3_K_L", dtype::q3_k},
    {file_type::mostly_q4_k_s, "Q4_K_S", dtype::q4_k}, {file_type::mostly_q4_k_m, "Q4_K_M", dtype::q4_k},
    {file_type::mostly_q5_k_s, "Q5_K_S", dtype::q5_k}, {file_type::mostly_q5_k_m, "Q5_K_M", dtype::q5_k},
    {file_type::mostly_q6_k, "Q6_K", dtype::q6_k},     {file_type::mostly_iq4_nl, "IQ4_NL", dtype::iq4_nl},
    {file_type::mostly_iq4_xs, "IQ4_XS", dtype::iq4_xs},
};

// llama-quantize accepts the bare k-quant names for its medium mixes.
constexpr std::pair<const char*, file_type> k_aliases[] = {
    {"Q3_K", file_type::mostly_q3_k_m}, {"Q4_K", file_type::mostly_q4_k_m}, {"Q5_K", file_type::mostly_q5_k_m}};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

// When a tensor of a counted kind (attn_v, ffn_down) gets `hi` instead of `lo` (lo unset: the base).
enum class when { never, always, more_bits, first_n, first_fraction, gqa_at_least };

struct bump {
  when w = when::never;
  dtype hi = dtype::f32;
  std::optional<dtype> lo;
  int n = 0;  // first_n: count; first_fraction: divisor of the total; gqa_at_least: threshold
};

struct mix_rules {
  file_type ftype;
  bump attn_v;
  bump ffn_down;
  std::optional<dtype> attn_output;
};

// k-quant mixes: "more bits" for the first and last eighth of the layers and every third one in
// between (llama.cpp's use_more_bits).
const mix_rules k_rules[] = {
    {file_type::mostly_q2_k, {when::gqa_at_least, dtype::q4_k, dtype::q3_k, 4}, {when::always, dtype::q3_k, {}, 0}, dtype::q3_k},
    {file_type::mostly_q3_k_m, {when::first_n, dtype::q5_k, dtype::q4_k, 2}, {when::first_fraction, dtype::q5_k, dtype::q4_k, 16}, dtype::q4_k},
    {file_type::mostly_q3_k_l, {when::always, dtype::q5_k, {}, 0}, {when::always, dtype::q5_k, {}, 0}, dtype::q5_k},
    {file_type::mostly_q4_k_s, {when::first_n, dtype::q5_k, {}, 4}, {when::first_fraction, dtype::q5_k, {}, 8}, {}},
    {file_type::mostly_q4_k_m, {when::more_bits, dtype::q6_k, {}, 0}, {when::more_bits, dtype::q6_k, {}, 0}, {}},
    {file_type::mostly_q5_k_m, {when::more_bits, dtype::q6_k, {}, 0}, {when::more_bits, dtype::q6_k, {}, 0}, {}},
    {file_type::mostly_iq4_nl, {when::gqa_at_least, dtype::q5_k, {}, 4}, {when::first_fraction, dtype::q5_k, {}, 8}, {}},
    {file_type::mostly_iq4_xs, {when::gqa_at_least, dtype::q5_k, {}, 4}, {when::first_fraction, dtype::q5_k, {}, 8}, {}},
};

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

dtype apply(const bump& b, int i, int n, int n_gqa, dtype base) {
  const dtype lo = b.lo.value_or(base);
  switch (b.w) {
    case when::never: return base;
    case when::always: return b.hi;
    case when::more_bits: return use_more_bits(i, n) ? b.hi : lo;
    case when::first_n: return i < b.n ? b.hi : lo;
    case when::first_fraction: return i < n / b.n ? b.hi : lo;
    case when::gqa_at_least: return n_gqa >= b.n ? b.hi : lo;
  }
  return base;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }
int64_t block_of(dtype t) { return type_info(t).block_elems; }

// Rows not a multiple of the type's block: llama.cpp's fallback chain.
result<dtype> fit_rows(dtype t, int64_t ne0, const std::string& name) {
  if (ne0 % block_of(t) == 0) return t;
  dtype f;
  switch (t) {
    case dtype::q2_k:
    case dtype::q3_k:
    case dtype::iq4_xs: f = dtype::iq4_nl; break;
    case dtype::q4_k: f = dtype::q5_0; break;
    case dtype::q5_k: f = dtype::q5_1; break;
    case dtype::q6_k: f = dtype::q8_0; break;
    default:
      return make_error("tensor {}: rows of {} elements are not a multiple of {}'s block of {}", name, ne0,
                        type_info(t).name, block_of(t));
  }
  return ne0 % block_of(f) == 0 ? f : dtype::f16;
}

class mix_state {
 public:
  mix_state(std::span<const tensor_desc> tensors, const mix_options& o, const mix_facts& facts) : o_(o), facts_(facts) {
    base_ = find_file_type(o.ftype)->base;
    for (const auto& r : k_rules)
      if (r.ftype == o.ftype) rules_ = &r;
    for (const auto& t : tensors) {
      if (t.name == "output.weight") has_output_ = true;
      if (contains(t.name, "attn_v.weight")) ++n_attn_v_;
    }
  }

  // llama_tensor_get_type for one quantizable tensor.
  result<dtype> choose(const tensor_desc& t) {
    const int64_t ne0 = t.dims[0];
    dtype nt = base_;
    if (t.name == "output.weight" || (!has_output_ && t.name == "token_embd.weight")) {
      // Tied models quantize the token embedding as the output tensor.
      if (o_.output_type) nt = *o_.output_type;
      else if (ne0 % block_of(base_) != 0) nt = dtype::q8_0;
      else if (base_ != dtype::q8_0) nt = dtype::q6_k;
    } else if (t.name == "token_embd.weight") {
      // The base type (an explicit --token-embedding-type is applied by the caller).
    } else if (contains(t.name, "attn_v.weight")) {
      if (rules_) nt = apply(rules_->attn_v, i_attn_v_, n_attn_v_, facts_.n_gqa, base_);
      ++i_attn_v_;
    } else if (contains(t.name, "ffn_down")) {
      if (rules_) nt = apply(rules_->ffn_down, i_ffn_down_, facts_.n_layer, facts_.n_gqa, base_);
      ++i_ffn_down_;
    } else if (contains(t.name, "attn_output.weight")) {
      if (rules_ && rules_->attn_output) nt = *rules_->attn_output;
    }
    return fit_rows(nt, ne0, t.name);
  }

  dtype base() const { return base_; }
  bool tied() const { return !has_output_; }  // the token embedding is also the output matrix

 private:
  const mix_options& o_;
  const mix_facts& facts_;
  dtype base_ = dtype::f32;
  const mix_rules* rules_ = nullptr;
  bool has_output_ = false;
  int n_attn_v_ = 0, i_attn_v_ = 0, i_ffn_down_ = 0;
};

}  // namespace

std::span<const file_type_info> all_file_types() { return k_file_types; }

const file_type_info* find_file_type(file_type ft) {
  for (const auto& f : k_file_types)
    if (f.ftype == ft) return &f;
  return nullptr;
}

std::optional<file_type> parse_file_type(std::string_view name) {
  for (const auto& f : k_file_types)
    if (iequals(name, f.name)) return f.ftype;
  for (const auto& [alias, ft] : k_aliases)
    if (iequals(name, alias)) return ft;
  // llama-quantize also takes the general.file_type number ("15" for Q4_K_M).
  uint32_t id = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec == std::errc{} && end == name.data() + name.size() && !name.empty() && find_file_type(file_type(id)))
    return file_type(id);
  return std::nullopt;
}

std::optional<dtype> parse_weight_type(std::string_view name) {
  for (const auto& t : all_types())
    if (iequals(name, t.name) && t.quantize_row && t.type != dtype::q8_1 && t.type != dtype::q8_k) return t.type;
  return std::nullopt;
}

bool llama_tensor_order(const std::string& a, const std::string& b) {
  const int la = layer_of(a), lb = layer_of(b);
  if (la != lb) return la < lb;
  return a < b;
}

bool is_quantizable(const tensor_desc& t) {
  const std::string& n = t.name;
  const bool ends_weight = n.size() >= 6 && n.compare(n.size() - 6, 6, "weight") == 0;
  return ends_weight && t.dims.size() >= 2 && !contains(n, "_norm.weight") && !contains(n, "ffn_gate_inp.weight");
}

result<std::vector<dtype>> plan_tensor_types(std::span<const tensor_desc> tensors, const mix_options& opts,
                                             const mix_facts& facts) {
  if (!find_file_type(opts.ftype)) return make_error("file type {} is not supported", uint32_t(opts.ftype));
  mix_state mix(tensors, opts, facts);
  const bool rules = !opts.pure && type_info(mix.base()).is_quantized;
  // A tied model's token embedding is also its output matrix: --output-tensor-type names its type,
  // with the mix's rules or without (llama-quantize: with them only); an explicit
  // --token-embedding-type still wins, as there.
  std::vector<dtype> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) {
    if (t.dims.size() > 2 && is_quantizable(t))
      return make_error("tensor {}: {} dimensions; only 2-D weights can be quantized", t.name, t.dims.size());
    // llama-quantize's --leave-output-tensor: output.weight only (a tied embedding is still quantized).
    if (!is_quantizable(t) || (opts.leave_output && t.name == "output.weight")) {
      out.push_back(t.type);
      continue;
    }
    dtype nt = mix.base();
    if (rules) {
      auto chosen = mix.choose(t);
      if (!chosen) return chosen.take_error();
      nt = *chosen;
    }
    if (opts.output_type && (t.name == "output.weight" || (mix.tied() && t.name == "token_embd.weight"))) nt = *opts.output_type;
    if (opts.token_embd_type && t.name == "token_embd.weight") nt = *opts.token_embd_type;
    // A type asked for by name falls back as the mix's own choices do (llama-quantize treats them alike).
    auto fitted = fit_rows(nt, t.dims[0], t.name);
    if (!fitted) return fitted.take_error();
    out.push_back(*fitted);
  }
  return out;
}

}  // namespace glia
