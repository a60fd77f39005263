// The scalar reference backend: each op written as the plainest loop that states its formula. It is
// the twin every optimized kernel is tested against, so clarity beats speed here.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/backend.h"
#include "backend/ref/ref_ops.h"

namespace glia {
namespace {

class ref_backend final : public backend {
 public:
  std::string name() const override { return "ref"; }

  void get_rows(const weight_view& table, const int32_t* ids, int64_t n_ids, float* out) override {
    for (int64_t t = 0; t < n_ids; ++t) ref::dequantize_row(table, ids[t], out + t * table.n_in);
  }

  void matmul(const weight_view& w, const float* x, int64_t n_tok, float* y) override {
    std::vector<uint8_t> act;
    for (int64_t t = 0; t < n_tok; ++t) {
      ref::convert_activation_row(w, x + t * w.n_in, act);
      for (int64_t o = 0; o < w.n_out; ++o) y[t * w.n_out + o] = ref::dot_row(w, o, act.data());
    }
  }

  void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) override {
    for (int64_t r = 0; r < n_rows; ++r) ref::rms_norm_row(x + r * n, w, y + r * n, n, eps);
  }

  void rope(float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* positions,
            const rope_params& p) override {
    std::vector<float> cs(size_t(p.n_rot));
    for (int64_t t = 0; t < n_tok; ++t) {
      ref::rope_cos_sin(positions[t], p, cs.data());
      for (int h = 0; h < n_head; ++h) ref::rope_apply(x + (t * n_head + h) * head_dim, p, cs.data());
    }
  }

  void kv_store(const kv_layer_view& kv, const float* k, const float* v, const int32_t* positions,
                int64_t n_tok) override {
    for (int64_t t = 0; t < n_tok; ++t) ref::kv_store_token(kv, k, v, t, positions[t]);
  }

  void attention(const kv_layer_view& kv, const float* q, const int32_t* positions, int64_t n_tok,
                 const attention_params& p, float* out) override {
    std::vector<float> scores(size_t(kv.n_slots)), krow(size_t(kv.head_dim_k)), vrow(size_t(kv.head_dim_v));
    const int group = p.n_head / kv.n_kv_head;
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int h = 0; h < p.n_head; ++h) {
        const float* qh = q + (t * p.n_head + h) * kv.head_dim_k;
        float* oh = out + (t * p.n_head + h) * kv.head_dim_v;
        const int kvh = h / group;
        float max_s = -INFINITY;
        for (int64_t s = 0; s < kv.n_slots; ++s) {
          scores[s] = -INFINITY;
          if (!ref::slot_visible(kv.slot_pos[s], positions[t], p.window)) continue;
          ref::load_kv_row(kv, kv_part::k, s, kvh, krow.data());
          float dot = 0.0f;
          for (int d = 0; d < kv.head_dim_k; ++d) dot += qh[d] * krow[d];
          float sc = dot * p.scale;
          if (p.softcap > 0.0f) sc = p.softcap * std::tanh(sc / p.softcap);
          scores[s] = sc;
          max_s = std::max(max_s, sc);
        }
        double sum = 0.0;
        for (int64_t s = 0; s < kv.n_slots; ++s) {
          scores[s] = scores[s] == -INFINITY ? 0.0f : std::exp(scores[s] - max_s);
          sum += scores[s];
        }
        std::fill(oh, oh + kv.head_dim_v, 0.0f);
        if (sum == 0.0) continue;  // no visible key (cannot happen once the token itself is stored)
        const float inv = float(1.0 / sum);
        for (int64_t s = 0; s < kv.n_slots; ++s) {
          if (scores[s] == 0.0f) continue;
          ref::load_kv_row(kv, kv_part::v, s, kvh, vrow.data());
          const float pr = scores[s] * inv;
          for (int d = 0; d < kv.head_dim_v; ++d) oh[d] += pr * vrow[d];
        }
      }
    }
  }

  void glu(const float* gate, const float* up, float* out, int64_t n_tok, int64_t n, activation act) override {
    for (int64_t i = 0; i < n_tok * n; ++i) out[i] = ref::activate(gate[i], act) * up[i];
  }

  void add(const float* a, const float* b, float* out, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }
  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n) override {
    for (int64_t r = 0; r < n_rows; ++r)
      for (int64_t i = 0; i < n; ++i) x[r * n + i] += bias[i];
  }
  void scale(float* x, float s, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
  }
  void softcap(float* x, float cap, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
  }
};

}  // namespace

std::unique_ptr<backend> make_ref_backend() { return std::make_unique<ref_backend>(); }

}  // namespace glia
