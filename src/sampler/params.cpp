#include "sampler/params.h"

#include <cmath>
#include <limits>

namespace glia {
namespace {

bool in_range(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

}  // namespace

bool xtc_active(const sampler_params& p) { return p.xtc_probability > 0.0f && p.xtc_threshold <= 0.5f; }

bool draws_at_random(const sampler_params& p) { return p.temperature > 0.0f || xtc_active(p); }

status validate(const sampler_params& p) {
  constexpr double big = std::numeric_limits<float>::max();
  if (!in_range(p.temperature, 0.0, big)) return make_error("temperature {} is not a finite number >= 0", p.temperature);
  if (!in_range(p.top_p, 0.0, 1.0)) return make_error("top_p {} is outside [0, 1]", p.top_p);
  if (!in_range(p.min_p, 0.0, 1.0)) return make_error("min_p {} is outside [0, 1]", p.min_p);
  if (!in_range(p.typical_p, 0.0, 1.0)) return make_error("typical_p {} is outside [0, 1]", p.typical_p);
  if (p.min_keep < 0) return make_error("min_keep {} is negative", p.min_keep);
  if (!in_range(p.repeat_penalty, 0.0, big) || p.repeat_penalty == 0.0f)
    return make_error("repeat_penalty {} is not a finite number > 0", p.repeat_penalty);
  if (p.repeat_last_n < -1) return make_error("repeat_last_n {} is below -1", p.repeat_last_n);
  if (!std::isfinite(p.presence_penalty)) return make_error("presence_penalty {} is not finite", p.presence_penalty);
  if (!std::isfinite(p.frequency_penalty)) return make_error("frequency_penalty {} is not finite", p.frequency_penalty);
  if (!in_range(p.dry_multiplier, 0.0, big)) return make_error("dry_multiplier {} is not a finite number >= 0", p.dry_multiplier);
  if (!in_range(p.dry_base, 1.0, big)) return make_error("dry_base {} is not a finite number >= 1", p.dry_base);
  if (p.dry_allowed_length < 1) return make_error("dry_allowed_length {} is below 1", p.dry_allowed_length);
  if (p.dry_penalty_last_n < -1) return make_error("dry_penalty_last_n {} is below -1", p.dry_penalty_last_n);
  if (!in_range(p.xtc_probability, 0.0, 1.0)) return make_error("xtc_probability {} is outside [0, 1]", p.xtc_probability);
  if (!in_range(p.xtc_threshold, 0.0, 1.0)) return make_error("xtc_threshold {} is outside [0, 1]", p.xtc_threshold);
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0) return make_error("logit_bias token id {} is negative", id);
    if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity())
      return make_error("logit_bias for token {} is {} (allowed: finite or -inf)", id, bias);
  }
  return {};
}

status apply_gguf_sampling_defaults(sampler_params& p, const metadata_lookup& lookup) {
  if (!lookup) return {};
  std::string rejected;
  auto reject = [&](std::string_view key, double v, std::string_view limit) {
    rejected += fmt::format("{}{} = {} ({})", rejected.empty() ? "" : "; ", key, v, limit);
  };
  auto real = [&](std::string_view key, float& field, double lo, double hi) {
    const auto v = lookup(key);
    if (!v) return;
    if (in_range(*v, lo, hi))
      field = float(*v);
    else
      reject(key, *v, fmt::format("expected [{}, {}]", lo, hi));
  };
  auto integer = [&](std::string_view key, int& field, double lo, double hi) {
    const auto v = lookup(key);
    if (!v) return;
    if (in_range(*v, lo, hi) && std::floor(*v) == *v)
      field = int(*v);
    else
      reject(key, *v, fmt::format("expected an integer in [{}, {}]", lo, hi));
  };
  constexpr double big = std::numeric_limits<float>::max();
  constexpr double int_max = std::numeric_limits<int>::max();
  real("general.sampling.temp", p.temperature, 0.0, big);
  integer("general.sampling.top_k", p.top_k, -int_max, int_max);
  real("general.sampling.top_p", p.top_p, 0.0, 1.0);
  real("general.sampling.min_p", p.min_p, 0.0, 1.0);
  real("general.sampling.xtc_probability", p.xtc_probability, 0.0, 1.0);
  real("general.sampling.xtc_threshold", p.xtc_threshold, 0.0, 1.0);
  integer("general.sampling.penalty_last_n", p.repeat_last_n, -1, int_max);
  const float old_repeat = p.repeat_penalty;
  real("general.sampling.penalty_repeat", p.repeat_penalty, 0.0, big);
  if (p.repeat_penalty == 0.0f) {
    p.repeat_penalty = old_repeat;
    reject("general.sampling.penalty_repeat", 0.0, "must be > 0");
  }
  if (!rejected.empty()) return make_error("ignored GGUF sampling defaults: {}", rejected);
  return {};
}

}  // namespace glia
