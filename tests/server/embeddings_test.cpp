// /v1/embeddings through a live glia serve, checked against the model itself: for a model whose LM
// head is its token embedding (Brown's), the logits are W h for the final hidden state h, so the
// differences of the next token's logprobs (from /v1/completions) are |h| times the differences of
// W e for the unit-length embedding e that last-token pooling returns: one ratio for every pair.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "gguf/gguf.h"
#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

std::string brown_f32() { return testdata("models/brown-f32.gguf"); }

std::vector<float> embedding_of(const http_reply& r, size_t i) {
  const json body = r.json();
  return body["data"][i]["embedding"].get<std::vector<float>>();
}

double norm_of(const std::vector<float>& v) {
  double n = 0;
  for (float x : v) n += double(x) * double(x);
  return std::sqrt(n);
}

TEST(ServerEmbeddings, LastTokenPoolingIsTheStateTheLmHeadReads) {
  server_process srv({"-m", brown_f32()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const std::vector<int> ids = {1, 337, 501, 332, 959, 554};  // <s> The jury said ...
  auto e = post(srv, "/v1/embeddings", json{{"input", ids}});
  ASSERT_EQ(e.status, 200) << e.body;
  const std::vector<float> emb = embedding_of(e, 0);
  auto f = gguf::file::open(brown_f32());
  ASSERT_TRUE(f) << f.message();
  const gguf::tensor_info* w = (*f)->find_tensor("token_embd.weight");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->type, 0u);  // F32
  ASSERT_EQ(size_t(w->ne[0]), emb.size());
  EXPECT_NEAR(norm_of(emb), 1.0, 1e-5);
  auto row_dot = [&](int64_t token) {
    const float* row = reinterpret_cast<const float*>(w->data) + token * w->ne[0];
    double d = 0;
    for (size_t i = 0; i < emb.size(); ++i) d += double(row[i]) * double(emb[i]);
    return d;
  };
  auto c = post(srv, "/v1/completions", json{{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 5}});
  ASSERT_EQ(c.status, 200) << c.body;
  const json top = c.json()["choices"][0]["logprobs"]["top_logprobs"][0];
  ASSERT_GE(top.size(), 5u);
  // The top tokens' ids, from their pieces: the vocabulary's text with SentencePiece's space mark
  // as a space.
  std::map<std::string, int64_t> id_of;
  const auto* vocab = (*f)->find("tokenizer.ggml.tokens")->as_array();
  for (size_t id = 0; id < vocab->size(); ++id) {
    std::string piece = *(*vocab)[id].as_string();
    for (size_t at; (at = piece.find("\xE2\x96\x81")) != std::string::npos;) piece.replace(at, 3, " ");
    id_of.emplace(piece, int64_t(id));
  }
  std::vector<std::pair<int64_t, double>> scored;
  for (const auto& [piece, lp] : top.items())
    if (auto it = id_of.find(piece); it != id_of.end()) scored.emplace_back(it->second, lp.get<double>());
  ASSERT_GE(scored.size(), 3u);
  const double scale = (scored[0].second - scored[1].second) / (row_dot(scored[0].first) - row_dot(scored[1].first));
  EXPECT_GT(scale, 0.0);
  for (size_t k = 2; k < scored.size(); ++k) {
    const double s = (scored[0].second - scored[k].second) / (row_dot(scored[0].first) - row_dot(scored[k].first));
    EXPECT_NEAR(s / scale, 1.0, 1e-3) << "pair 0," << k;
  }
}

// Pooling and the request's shapes: the first token's state (cls) is the same for every text that
// starts with BOS (causal attention: it sees only itself); mean pooling is another unit vector;
// base64 is the floats' bytes; dimensions truncates and rescales; malformed inputs are 400s; the
// engine serves embeddings between the steps of a running generation.
TEST(ServerEmbeddings, PoolingFormatsAndErrors) {
  server_process cls({"-m", test_model(), "--pooling", "cls"});
  ASSERT_NE(cls.port(), 0) << cls.log();
  auto two = post(cls, "/v1/embeddings", json{{"input", {"The jury said", "It was a cold morning"}}});
  ASSERT_EQ(two.status, 200) << two.body;
  EXPECT_EQ(embedding_of(two, 0), embedding_of(two, 1));
  server_process srv({"-m", test_model(), "--pooling", "mean"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  auto both = post(srv, "/embeddings", json{{"input", {"The jury said", "It was a cold morning"}}});
  ASSERT_EQ(both.status, 200) << both.body;
  const std::vector<float> a = embedding_of(both, 0), b = embedding_of(both, 1);
  EXPECT_NE(a, b);
  EXPECT_NEAR(norm_of(a), 1.0, 1e-5);
  EXPECT_EQ(both.json()["object"], "list");
  EXPECT_EQ(both.json()["data"][1]["index"], 1);
  const int tokens = both.json()["usage"]["prompt_tokens"].get<int>();
  EXPECT_GT(tokens, 8);
  EXPECT_EQ(both.json()["usage"]["total_tokens"], tokens);

  auto b64 = post(srv, "/v1/embeddings", json{{"input", "The jury said"}, {"encoding_format", "base64"}});
  ASSERT_EQ(b64.status, 200) << b64.body;
  const std::string text = b64.json()["data"][0]["embedding"].get<std::string>();
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (size_t i = 0; i + 3 < text.size() + 3 && i < text.size(); i += 4) {
    uint32_t w = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char ch = text[i + size_t(k)];
      w = w << 6 | (ch == '=' ? (++pad, 0u) : uint32_t(alphabet.find(ch)));
    }
    for (int k = 0; k < 3 - pad; ++k) bytes += char((w >> (16 - 8 * k)) & 0xFF);
  }
  ASSERT_EQ(bytes.size(), a.size() * sizeof(float));
  std::vector<float> decoded(a.size());
  std::memcpy(decoded.data(), bytes.data(), bytes.size());
  EXPECT_EQ(decoded, a);

  auto short_one = post(srv, "/v1/embeddings", json{{"input", "The jury said"}, {"dimensions", 8}});
  ASSERT_EQ(short_one.status, 200) << short_one.body;
  const std::vector<float> s8 = embedding_of(short_one, 0);
  ASSERT_EQ(s8.size(), 8u);
  EXPECT_NEAR(norm_of(s8), 1.0, 1e-5);
  std::vector<float> head(a.begin(), a.begin() + 8);
  const double scale = 1.0 / norm_of(head);
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(s8[i], head[i] * scale, 1e-6);

  // A generation streams while embeddings are asked for: both are answered.
  json gen = {{"prompt", "The jury said"}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true}};
  std::thread streaming([&] { EXPECT_NE(post(srv, "/v1/completions", gen).body.find("[DONE]"), std::string::npos); });
  for (int i = 0; i < 5; ++i) EXPECT_EQ(post(srv, "/v1/embeddings", json{{"input", "It was"}}).status, 200);
  streaming.join();

  for (const json& bad : {json{{"input", ""}}, json{{"input", json::array()}}, json{{"input", {1, -2}}}, json{{"input", {{1, 2}, 5}}},
                          json{{"input", 5}}, json{{"input", "x"}, {"encoding_format", "int8"}}, json{{"input", "x"}, {"dimensions", 0}},
                          json{{"input", "x"}, {"dimensions", 100000}}, json{{"input", "x"}, {"pooling", "max"}}, json{{"model", "m"}},
                          json{{"input", std::vector<int>(300, 5)}}})
    EXPECT_EQ(post(srv, "/v1/embeddings", bad).status, 400) << bad.dump();
}

}  // namespace
}  // namespace glia::test
