// Speculative decoding (generate_options::draft): every token is still sampled from the target's
// logits in order, and a batch's logits are those of one token at a time, so the text, the stop
// reason and the context left behind are exactly those of generating without a draft, whatever the
// sampler settings and however many drafts are accepted.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "glia/session.h"
#include "gguf/gguf.h"
#include "quant/types.h"
#include "test_support.h"

namespace glia {
namespace {

// A session on `path` (a model the test wrote), or on a model of the pack (open).
std::unique_ptr<session> open_path(const std::string& path, int n_ctx = 256, int n_ubatch = 512, const std::string& isa = "best") {
  session_options o;
  o.cpu_isa = isa;
  o.model_path = path;
  o.n_threads = 2;
  o.n_ctx = n_ctx;
  o.n_ubatch = n_ubatch;
  auto s = session::create(o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? std::move(*s) : nullptr;
}
std::unique_ptr<session> open(const std::string& model, int n_ctx = 256, int n_ubatch = 512, const std::string& isa = "best") {
  return open_path(test::testdata("models/" + model), n_ctx, n_ubatch, isa);
}

struct outcome {
  std::string text;
  generation_stats stats;
  std::vector<int32_t> history;
};

outcome generate(session& s, const std::vector<int32_t>& prompt, const sampler_params& sp, generate_options go) {
  sampler smp(sp, [&s](int32_t id) { return s.token_text(id); });
  outcome out;
  status r = s.generate(prompt, go, smp, [&out](std::string_view t) {
    out.text += t;
    return true;
  }, &out.stats);
  EXPECT_TRUE(r.is_ok()) << r.message();
  out.history = s.history();
  return out;
}

sampler_params greedy() {
  sampler_params p;
  p.temperature = 0.0f;
  return p;
}
sampler_params warm(uint64_t seed) {
  sampler_params p;
  p.temperature = 0.9f;
  p.seed = seed;
  return p;
}
sampler_params hot_penalized(uint64_t seed) {
  sampler_params p;
  p.temperature = 1.3f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.3f;
  p.presence_penalty = 0.2f;
  p.seed = seed;
  return p;
}

void expect_same(const outcome& plain, const outcome& drafted, const std::string& what) {
  EXPECT_EQ(drafted.text, plain.text) << what;
  EXPECT_EQ(drafted.stats.n_generated, plain.stats.n_generated) << what;
  EXPECT_EQ(drafted.stats.reason, plain.stats.reason) << what;
  EXPECT_EQ(drafted.history, plain.history) << what;  // unconfirmed drafts left the context
}

TEST(speculative, text_is_that_of_the_target_alone) {
  auto target = open("brown-f32.gguf"), plain = open("brown-f32.gguf");
  auto q8 = open("brown-q8_0.gguf"), same = open("brown-f32.gguf");
  ASSERT_TRUE(target && plain && q8 && same);
  ASSERT_TRUE(target->check_draft(*q8).is_ok());
  const std::vector<int32_t> prompt = *target->tokenize("The jury said that the city", true);
  struct config {
    const char* name;
    sampler_params sp;
  };
  const config configs[] = {{"greedy", greedy()}, {"warm", warm(7)}, {"hot", hot_penalized(3)}};
  for (const auto& c : configs) {
    generate_options go;
    go.n_predict = 80;
    const outcome reference = generate(*plain, prompt, c.sp, go);
    // Each draft with each --draft-max and each --draft-p-min, not every combination of the three
    // (a test of ~40 generations under the sanitizers otherwise).
    struct drafting {
      session* d;
      int n_draft;
      float p_min;
    };
    for (const auto& [d, n_draft, p_min] : {drafting{q8.get(), 1, 0.0f}, drafting{q8.get(), 4, 0.75f}, drafting{q8.get(), 16, 0.0f},
                                            drafting{same.get(), 1, 0.75f}, drafting{same.get(), 4, 0.0f}, drafting{same.get(), 16, 0.75f}}) {
      go.draft = d;
      go.n_draft = n_draft;
      go.draft_p_min = p_min;
      const std::string what = fmt::format("{} draft {} n_draft {} p_min {}", c.name, d == q8.get() ? "q8_0" : "f32", n_draft, p_min);
      const outcome o = generate(*target, prompt, c.sp, go);
      expect_same(reference, o, what);
      EXPECT_LE(o.stats.n_accepted, o.stats.n_drafted) << what;
      if (p_min == 0.0f) {
        EXPECT_GT(o.stats.n_drafted, 0) << what;
        // Sampling at a temperature rejects some drafts: the dropping of unconfirmed ones ran.
        if (c.sp.temperature > 0.0f) {
          EXPECT_LT(o.stats.n_accepted, o.stats.n_drafted) << what;
        }
      }
      // The model itself as its draft: greedy proposals are what greedy sampling takes.
      if (d == same.get() && c.sp.temperature == 0.0f) {
        EXPECT_EQ(o.stats.n_accepted, o.stats.n_drafted) << what;
      }
    }
  }
}

// Quantized weights take the integer kernels (VNNI/AMX tiles for prompt-sized batches where the CPU
// has them): a verification pass of 2..17 rows gives each row the bits of a one-row step there too.
TEST(speculative, quantized_targets) {
  // "avx2" only where "best" is something else (AVX-512): on an AVX2-only host it would repeat it.
  const bool best_is_avx2 = !make_cpu_backend(1, false, "avx512vnni").is_ok();
  for (const char* isa : {"best", "avx2", "scalar"})
  for (const char* model : {"brown-q8_0.gguf", "llama-h256-Q4_K_M.gguf", "llama-hd128-Q6_K.gguf", "llama-tied-Q4_0.gguf"}) {
    if (!make_cpu_backend(1, false, isa).is_ok()) continue;  // e.g. avx2 on an ARM host
    if (std::string(isa) == "avx2" && best_is_avx2) continue;
    if (std::string(isa) == "scalar" && std::string(model) != "brown-q8_0.gguf") continue;  // slow, and one suffices
    auto target = open(model, 256, 512, isa), plain = open(model, 256, 512, isa), draft = open(model, 256, 512, isa);
    ASSERT_TRUE(target && plain && draft);
    const std::vector<int32_t> prompt = {1, 415, 293, 906, 285, 114, 105, 754};
    generate_options go;
    go.n_predict = 48;
    const outcome reference = generate(*plain, prompt, warm(9), go);
    go.draft = draft.get();
    go.draft_p_min = 0.0f;
    expect_same(reference, generate(*target, prompt, warm(9), go), fmt::format("{} {}", model, isa));
  }
}

// Stopping at the end of the context, at a stop string, at n_predict and continuing a conversation
// (the draft's cached prefix reused, the target's trimmed) all end as without a draft.
TEST(speculative, stops_and_later_turns_match) {
  auto target = open("brown-f32.gguf", 48), plain = open("brown-f32.gguf", 48), draft = open("brown-q8_0.gguf", 48);
  ASSERT_TRUE(target && plain && draft);
  const std::vector<int32_t> prompt = *target->tokenize("It was the best of", true);
  generate_options go;
  go.n_predict = -1;
  const outcome full = generate(*plain, prompt, greedy(), go);
  EXPECT_EQ(full.stats.reason, stop_reason::context_full);
  go.draft = draft.get();
  go.draft_p_min = 0.0f;
  expect_same(full, generate(*target, prompt, greedy(), go), "context full");

  go.draft = nullptr;
  go.n_predict = 30;
  const outcome a = generate(*plain, prompt, warm(11), go);
  go.stop = {a.text.substr(a.text.size() / 2, 3)};
  const outcome stopped = generate(*plain, prompt, warm(11), go);
  EXPECT_EQ(stopped.stats.reason, stop_reason::stop_string);
  go.draft = draft.get();
  expect_same(stopped, generate(*target, prompt, warm(11), go), "stop string");

  // A second turn: the prompt extends what the first left in the context.
  go.stop.clear();
  go.n_predict = 6;
  go.draft = nullptr;
  const outcome first_plain = generate(*plain, prompt, greedy(), go);
  go.draft = draft.get();
  const outcome first = generate(*target, prompt, greedy(), go);
  expect_same(first_plain, first, "first turn");
  std::vector<int32_t> next = first.history;
  const auto more = target->tokenize(" and then", false);
  ASSERT_TRUE(more.is_ok());
  next.insert(next.end(), more->begin(), more->end());
  go.draft = nullptr;
  const outcome second_plain = generate(*plain, next, greedy(), go);
  go.draft = draft.get();
  const outcome second = generate(*target, next, greedy(), go);
  expect_same(second_plain, second, "second turn");
  EXPECT_GT(second.stats.n_reused, 0);
}

// Sliding-window layers with rings that wrap (window 8, rings of 8 + 512 - 1 slots, the least a
// session makes; a prompt of 520 tokens): dropping unconfirmed drafts never needs a key the ring
// already overwrote, since a verification batch fits one chunk.
TEST(speculative, sliding_window_rings) {
  auto target = open("gemma2-F16.gguf", 640, 4), plain = open("gemma2-F16.gguf", 640, 4), draft = open("gemma2-F16.gguf", 640, 4);
  ASSERT_TRUE(target && plain && draft);
  std::vector<int32_t> prompt = {2};
  for (int i = 0; i < 519; ++i) prompt.push_back(std::vector<int32_t>{651, 3413, 576, 1013, 603, 4320, 29889}[size_t(i) % 7]);
  for (const sampler_params& sp : {greedy(), warm(5)}) {
    generate_options go;
    go.n_predict = 40;
    const outcome reference = generate(*plain, prompt, sp, go);
    go.draft = draft.get();
    go.draft_p_min = 0.0f;
    const outcome o = generate(*target, prompt, sp, go);
    expect_same(reference, o, sp.temperature == 0.0f ? "greedy" : "warm");
    EXPECT_GT(o.stats.n_drafted, 0);
  }
}

// A forward pass that fails (here a NaN embedding row for a token the draft proposes) leaves the
// context as it was before the pass: the confirmed tokens stay, nothing is dropped twice.
TEST(speculative, a_failed_pass_keeps_the_confirmed_context) {
  // Untied (a NaN row of a tied embedding would poison every logit at once), F16.
  const std::string model = "llama-untied-F16.gguf";
  auto clean = open(model);
  ASSERT_TRUE(clean);
  const std::vector<int32_t> prompt = {1, 415, 293, 906, 285, 114, 105, 754};
  generate_options go;
  go.n_predict = 6;
  const outcome greedy_run = generate(*clean, prompt, greedy(), go);
  ASSERT_GE(greedy_run.history.size(), prompt.size() + 5);
  // A token the draft proposes after the first generated one (within the 4 drafts n_predict 6
  // allows), which neither the prompt nor that first token holds.
  const std::vector<int32_t> generated(greedy_run.history.begin() + std::ptrdiff_t(prompt.size()), greedy_run.history.end());
  int32_t poisoned = -1;
  for (size_t i = 1; i < 5 && poisoned < 0; ++i)
    if (std::find(prompt.begin(), prompt.end(), generated[i]) == prompt.end() && generated[i] != generated[0])
      poisoned = generated[i];
  ASSERT_GE(poisoned, 0);

  auto f = gguf::file::open(test::testdata("models/" + model));
  ASSERT_TRUE(f.is_ok());
  gguf::writer w;
  w.copy_metadata(**f);
  for (const auto& t : (*f)->tensors()) {
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    if (t.name == "token_embd.weight") {
      ASSERT_EQ(t.type, uint32_t(dtype::f16));
      for (int64_t j = 0; j < t.ne[0]; ++j) reinterpret_cast<uint16_t*>(data.data())[poisoned * t.ne[0] + j] = 0x7e00;  // NaN
    }
    ASSERT_TRUE(w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), data).is_ok());
  }
  const std::string path = test::scratch("speculative-nan-row.gguf");
  ASSERT_TRUE(w.write(path).is_ok());
  auto target = open_path(path);
  ASSERT_TRUE(target);
  auto draft = open(model);
  go.draft = draft.get();
  go.draft_p_min = 0.0f;
  sampler smp(greedy());
  generation_stats st;
  status r = target->generate(prompt, go, smp, [](std::string_view) { return true; }, &st);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("non-finite"), std::string::npos) << r.message();
  // The first generated token was sampled, the pass holding it and the drafts failed: the context
  // is the prompt.
  EXPECT_EQ(st.n_generated, 1);
  EXPECT_EQ(target->history(), prompt);
}

// A draft up to 128 tokens short of the model's vocabulary (as padded vocabularies differ) is
// accepted; once the context holds an id it lacks, it proposes nothing, and the text is unchanged.
TEST(speculative, a_draft_with_fewer_tokens) {
  auto f = gguf::file::open(test::testdata("models/brown-f32.gguf"));
  ASSERT_TRUE(f.is_ok());
  constexpr int64_t kept = 1000;
  gguf::writer w;
  w.copy_metadata(**f);
  for (const auto& [key, v] : (*f)->metadata())
    if (const auto* items = v.as_array(); items && key.starts_with("tokenizer.ggml.") && items->size() == 1024) {
      gguf::value cut = v;
      std::get<std::vector<gguf::value>>(cut.data).resize(kept);
      w.set(key, std::move(cut));
    }
  for (const auto& t : (*f)->tensors()) {
    std::vector<int64_t> dims(t.ne, t.ne + t.n_dims);
    size_t bytes = t.n_bytes;
    if (t.name == "token_embd.weight" || t.name == "output.weight") {
      bytes = t.n_bytes / size_t(dims[1]) * size_t(kept);
      dims[1] = kept;
    }
    ASSERT_TRUE(w.add_tensor(t.name, t.type, dims, {t.data, bytes}).is_ok()) << t.name;
  }
  const std::string path = test::scratch("speculative-vocab-1000.gguf");
  ASSERT_TRUE(w.write(path).is_ok());
  auto small = open_path(path);
  auto target = open("brown-f32.gguf"), plain = open("brown-f32.gguf");
  ASSERT_TRUE(small && target && plain);
  ASSERT_TRUE(target->check_draft(*small).is_ok());
  sampler_params sp = warm(2);
  sp.logit_bias[1010] = 8.0f;  // past the draft's vocabulary, and likely
  const std::vector<int32_t> prompt = *target->tokenize("The old man walked into the room and said", true);
  generate_options go;
  go.n_predict = 40;
  const outcome reference = generate(*plain, prompt, sp, go);
  ASSERT_NE(std::find(reference.history.begin(), reference.history.end(), 1010), reference.history.end());
  go.draft = small.get();
  go.draft_p_min = 0.0f;
  const outcome o2 = generate(*target, prompt, sp, go);
  expect_same(reference, o2, "draft of 1000 tokens");
  // (before the first id past its vocabulary it drafts; from then on not: no error either way)
}

TEST(speculative, drafts_need_the_same_vocabulary) {
  auto brown = open("brown-f32.gguf"), qwen = open("qwen3-F16.gguf");
  ASSERT_TRUE(brown && qwen);
  status s = brown->check_draft(*qwen);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("vocabulary"), std::string::npos) << s.message();
  s = brown->check_draft(*brown);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("cannot be its own draft model"), std::string::npos) << s.message();
  generate_options go;
  go.draft = brown.get();
  sampler smp(greedy());
  status r = brown->generate(*brown->tokenize("The", true), go, smp, [](std::string_view) { return true; });
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("cannot be its own draft model"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace glia
