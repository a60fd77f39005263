// Hugging Face checkpoint weights and configs: what transformers refuses is refused, BF16 and
// sliding windows are used as they are, the CLI quantizes, runs and describes a folder, and a tensor
// at fault is named by its checkpoint name. (Folders and their files: hf_checkpoint_test.cpp.)
#include "hf_checkpoint_util.h"

namespace glia {
namespace {

// What transformers refuses to load is refused too, not run with a guess: a vocab_size the embedding
// does not have, an lm_head.weight of another shape than the embedding it is tied to, a
// rope_scaling type that is not a name.
TEST(hf_checkpoint, configs_that_disagree_with_the_weights_are_refused) {
  std::string dir = llama_dir("vocab_size");
  json config = read_json(dir + "/config.json");
  config["vocab_size"] = 5000;
  write_text(dir + "/config.json", config.dump());
  EXPECT_NE(load_error(dir).find("config.json: vocab_size is 5000, but the embedding has 32000 rows"), std::string::npos);

  dir = llama_dir("tied_head");
  config = read_json(dir + "/config.json");
  config["tie_word_embeddings"] = true;
  write_text(dir + "/config.json", config.dump());
  EXPECT_TRUE(load_model(dir).is_ok());  // an lm_head.weight of the embedding's shape is left for the tie
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    for (const auto& t : f.tensors()) {
      std::vector<int64_t> shape = t.shape;
      if (t.name == "lm_head.weight") shape = {shape[0] / 2, shape[1] * 2};  // the same bytes, another shape
      ASSERT_TRUE(w.add(t.name, t.type, shape, {t.data, size_t(t.n_bytes)}).is_ok());
    }
  });
  const std::string tied = load_error(dir);
  EXPECT_NE(tied.find("lm_head.weight is [16000, "), std::string::npos) << tied;
  EXPECT_NE(tied.find("ties it to the embedding, which is [32000, "), std::string::npos) << tied;

  dir = llama_dir("rope_type_number");
  config = read_json(dir + "/config.json");
  config["rope_scaling"] = json{{"type", 5}, {"factor", 2.0}};
  write_text(dir + "/config.json", config.dump());
  EXPECT_NE(load_error(dir).find("config.json: rope_scaling.type must be a string, found 5"), std::string::npos);
  config["rope_scaling"]["rope_type"] = "linear";  // transformers reads rope_type first
  write_text(dir + "/config.json", config.dump());
  EXPECT_TRUE(load_model(dir).is_ok());
}

TEST(hf_checkpoint, cli_quantizes_runs_and_describes_a_folder) {
  if (test::emulated) GTEST_SKIP() << "the CLI runs under an emulator; the library tests cover the loader";
  const std::string dir = llama_dir("cli");
  const std::string out = test::scratch("hf_checkpoint/cli-Q8_0.gguf");
  const std::string chat_template = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}";
  write_text(dir + "/chat_template.jinja", chat_template);
  auto q = test::run_glia({"quantize", dir, out, "Q8_0"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.err.find("note:"), std::string::npos) << q.err;
  // llama.cpp's keys are written too: its SentencePiece tokenizer over them tokenizes as the folder,
  // and the chat template is tokenizer.chat_template.
  {
    auto f = gguf::file::open(out);
    ASSERT_TRUE(f.is_ok()) << f.message();
    EXPECT_EQ((*f)->get_string("tokenizer.ggml.model"), "llama");
    // glia itself reads the tokenizer.json (the "hf:" vocabulary), marked as the keys' source.
    EXPECT_EQ((*f)->get_bool(gguf::key_hf_ggml_derived), true);
    auto glia_tok = tokenizer::from_gguf(**f);
    ASSERT_TRUE(glia_tok.is_ok()) << glia_tok.message();
    EXPECT_EQ((*glia_tok)->vocab().model, "hf:BPE");
    EXPECT_EQ((*f)->get_string("tokenizer.chat_template"), chat_template);
    gguf::writer keys_only;
    for (const auto& [k, v] : (*f)->metadata())
      if (k.starts_with("tokenizer.ggml.")) keys_only.set(k, v);
    auto bytes = keys_only.to_bytes();
    ASSERT_TRUE(bytes.is_ok());
    auto g = gguf::file::from_memory(*bytes);
    ASSERT_TRUE(g.is_ok()) << g.message();
    auto ggml_tok = tokenizer::from_gguf(**g);
    ASSERT_TRUE(ggml_tok.is_ok()) << ggml_tok.message();
    EXPECT_EQ((*ggml_tok)->n_vocab(), (*f)->find_tensor("token_embd.weight")->ne[1]);
    for (std::string text : {"Hello world", " leading space", "<s>[INST] tabs\tand\nnew lines [/INST]", "caf\xC3\xA9 \xF0\x9F\xA6\x99"})
      EXPECT_EQ((*ggml_tok)->encode(text, true, true), (*tokenizer::from_hf(dir))->encode(text, true, true)) << text;
  }
  // The quantized file matches llama.cpp's logits for the F16 GGUF within the Q8_0 tolerance.
  auto m = load_model(out);
  ASSERT_TRUE(m.is_ok()) << m.message();
  auto be = make_cpu_backend(2);
  float worst = 0.0f;
  test::expect_golden_logits(**m, test::read_golden("llama-untied-F16"), test::tolerance_for("llama-tied-Q8_0"), *be, 512,
                             dtype::f32, false, worst);
  // It keeps the tokenizer: a session on it tokenizes as the folder does.
  session_options so;
  so.model_path = out;
  auto sess = session::create(so);
  ASSERT_TRUE(sess.is_ok()) << sess.message();
  auto ids = (*sess)->tokenize("Hello world", true, true);
  ASSERT_TRUE(ids.is_ok());
  EXPECT_EQ(*ids, (*tokenizer::from_hf(dir))->encode("Hello world", true, true));

  auto run = test::run_glia({"run", "-m", dir, "-p", "Hello", "-n", "4", "--temp", "0", "-c", "64"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  auto info = test::run_glia({"info", "-m", dir});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("llama"), std::string::npos) << info.out;
  auto tok = test::run_glia({"tokenize", "-m", dir, "-p", "Hello"});
  EXPECT_EQ(tok.exit_code, 0) << tok.err;
  // The folder's config.json stands for the folder; one weights file is not a model.
  auto by_config = test::run_glia({"info", "-m", dir + "/config.json"});
  EXPECT_EQ(by_config.exit_code, 0) << by_config.err;
  auto by_shard = test::run_glia({"info", "-m", dir + "/model.safetensors"});
  EXPECT_NE(by_shard.exit_code, 0);
  EXPECT_NE(by_shard.err.find("one file of a Hugging Face checkpoint; give its folder"), std::string::npos) << by_shard.err;
}

// Most checkpoints ship BF16 weights: they are used as they are, so a BF16 checkpoint of the Brown
// model gives the logits of `glia quantize brown-f32.gguf BF16` (the same bits in the same kernels;
// only the order of each head's elements differs, Q/K rows being in checkpoint order, so the sums of
// the attention's dot products may round differently: as close as two instruction sets' kernels). Quantizing the folder to BF16 writes exactly
// that file's tensors: Q/K rows interleaved as the converter does.
TEST(hf_checkpoint, bf16_weights_are_used_as_they_are) {
  if (test::emulated) GTEST_SKIP() << "the CLI runs under an emulator";
  const std::string dir = test::scratch("hf_checkpoint/bf16");
  test::hf_export_options o;
  o.bf16 = true;
  ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/brown-f32.gguf"), dir, o).is_ok());
  const std::string gguf = test::scratch("hf_checkpoint/brown-BF16.gguf");
  auto q = test::run_glia({"quantize", test::testdata("models/brown-f32.gguf"), gguf, "BF16"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  for (const char* isa : {"scalar", "best"}) {
    auto logits_of = [&](const std::string& path) {
      auto m = load_model(path);
      EXPECT_TRUE(m.is_ok()) << m.message();
      auto be = make_cpu_backend(2, true, isa);
      EXPECT_TRUE(be.is_ok());
      auto cache = kv_cache::create((*m)->profile, 64, 64, dtype::f32, **be);
      forward_pass fwd(**m, **be);
      const std::vector<int32_t> ids = {1, 45, 300, 7, 999, 12, 600, 33, 21, 5, 8, 77, 1000, 3, 4};
      std::vector<float> out;
      EXPECT_TRUE(fwd.run(*cache, ids, 0, true, out).is_ok());
      return out;
    };
    const auto hf = logits_of(dir), reference = logits_of(gguf);
    ASSERT_EQ(hf.size(), reference.size());
    float worst = 0.0f;
    for (size_t i = 0; i < hf.size(); ++i) worst = std::max(worst, std::fabs(hf[i] - reference[i]));
    // The scale of rounding noise: the scalar and vector kernels differ by up to 0.008 on this file.
    float largest = 1.0f;
    for (float v : reference) largest = std::max(largest, std::fabs(v));
    EXPECT_LE(worst, 1e-3f * largest) << isa;
  }
  auto m = load_model(dir);
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ((*m)->file->get_int("general.file_type"), 32);  // MOSTLY_BF16, as the converter writes it
  EXPECT_TRUE((*m)->profile.qk_checkpoint_order);
  EXPECT_EQ((*m)->profile.layers[0].rope.style, rope_style::neox);

  const std::string from_folder = test::scratch("hf_checkpoint/bf16-from-folder.gguf");
  q = test::run_glia({"quantize", dir, from_folder, "BF16"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto a = gguf::file::open(from_folder), b = gguf::file::open(gguf);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_FALSE((*a)->get_bool(key_rope_checkpoint_order).has_value());
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  for (const auto& t : (*b)->tensors()) {
    const gguf::tensor_info* u = (*a)->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(u->n_bytes, t.n_bytes) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.n_bytes), 0) << t.name;
  }
}

// A file marked as holding checkpoint-order rows is refused for families whose GGUF convention keeps
// that order anyway (the mark would mean nothing there).
TEST(hf_checkpoint, checkpoint_order_mark_is_for_llama_only) {
  auto marked = [](const std::string& model, gguf::value mark, uint32_t n_rot = 0) {
    auto f = gguf::file::open(test::testdata("models/" + model));
    EXPECT_TRUE(f.is_ok()) << f.message();
    gguf::writer w;
    w.copy_metadata(**f);
    EXPECT_TRUE(w.copy_tensors(**f).is_ok());
    w.set(std::string(key_rope_checkpoint_order), std::move(mark));
    if (n_rot) w.set_u32("llama.rope.dimension_count", n_rot);
    const std::string path = test::scratch("hf_checkpoint/marked-" + model);
    EXPECT_TRUE(w.write(path).is_ok());
    auto g = gguf::file::open(path);
    EXPECT_TRUE(g.is_ok()) << g.message();
    return profile_from_gguf(**g);
  };
  auto boolean = [](bool b) {
    gguf::value v;
    v.type = gguf::value_type::boolean;
    v.data = b;
    return v;
  };
  auto p = marked("qwen3-F16.gguf", boolean(true));
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.message().find("glia.rope.checkpoint_order applies to llama models only"), std::string::npos) << p.message();
  p = marked("brown-f32.gguf", boolean(true));
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_EQ(p->layers.back().rope.style, rope_style::neox);
  p = marked("brown-f32.gguf", boolean(false));
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_EQ(p->layers.back().rope.style, rope_style::normal);
  // Ignoring a mark of another type would rotate the wrong pairs.
  gguf::value one;
  one.type = gguf::value_type::u32;
  one.data = uint64_t(1);
  p = marked("brown-f32.gguf", one);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.message().find("glia.rope.checkpoint_order must be a bool"), std::string::npos) << p.message();
  // NeoX over part of a head is not what interleaving whole heads gives: refused.
  p = marked("brown-f32.gguf", boolean(true), 16);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.message().find("layer 0 rotates 16 of its 32 key dimensions"), std::string::npos) << p.message();
}

// A folder whose config does not fit its tensors is refused by quantize as by the loader (quantize
// would otherwise reorder rows by the wrong head size and write a file nothing loads).
TEST(hf_checkpoint, quantize_refuses_heads_that_do_not_fit_the_rows) {
  if (test::emulated) GTEST_SKIP() << "the CLI runs under an emulator";
  const std::string dir = test::scratch("hf_checkpoint/wrong-head-dim");
  test::hf_export_options o;
  o.config_patch = R"({"head_dim": 16})";
  ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/brown-f32.gguf"), dir, o).is_ok());
  EXPECT_FALSE(load_model(dir).is_ok());
  auto q = test::run_glia({"quantize", dir, test::scratch("hf_checkpoint/wrong-head-dim.gguf"), "F16"});
  EXPECT_NE(q.exit_code, 0);
  EXPECT_NE(q.err.find("tensor blk.0.attn_k.weight has 64 rows; 2 heads of 16 need 32"), std::string::npos) << q.err;
}

// A folder whose tokenizer does not load (here: a BOS that is not a token) runs nowhere, glia
// included: quantize refuses it and writes nothing, rather than a file that only fails later.
TEST(hf_checkpoint, quantize_refuses_a_tokenizer_that_does_not_load) {
  if (test::emulated) GTEST_SKIP() << "the CLI runs under an emulator";
  const std::string dir = llama_dir("bad_bos");
  json config = read_json(dir + "/tokenizer_config.json");
  config["bos_token"] = "<not-a-token>";
  write_text(dir + "/tokenizer_config.json", config.dump());
  const std::string out = test::scratch("hf_checkpoint/bad_bos.gguf");
  fs::remove(out);
  auto q = test::run_glia({"quantize", dir, out, "Q8_0"});
  EXPECT_NE(q.exit_code, 0);
  EXPECT_NE(q.err.find("its tokenizer does not load"), std::string::npos) << q.err;
  EXPECT_NE(q.err.find("bos_token is not a token"), std::string::npos) << q.err;
  EXPECT_FALSE(fs::exists(out));
}

// Mistral 7B v0.1 attends over a sliding window on every layer; transformers lets position q see
// k when q - window < k <= q. With a window of 3 on the Brown model's 6 layers, the last of 16
// positions (15) reaches back 6 * 2 positions, to 3: the token at 2 no longer changes its logits
// (as it does with full attention) and the token at 3 still does; the first 3 positions are those
// of full attention, and decoding one token at a time through the ring buffer agrees with the
// whole prompt at once.
TEST(hf_checkpoint, mistral_sliding_window_limits_what_each_position_sees) {
  const std::string windowed = test::scratch("hf_checkpoint/mistral-window3"), full = test::scratch("hf_checkpoint/llama-full");
  test::hf_export_options o;
  o.architecture = "MistralForCausalLM";
  o.config_patch = R"({"sliding_window": 3})";
  ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/brown-f32.gguf"), windowed, o).is_ok());
  ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/brown-f32.gguf"), full).is_ok());
  auto mw = load_model(windowed), mf = load_model(full);
  ASSERT_TRUE(mw.is_ok() && mf.is_ok()) << mw.message() << mf.message();
  for (const auto& l : (*mw)->profile.layers) {
    EXPECT_TRUE(l.sliding);
    EXPECT_EQ(l.window, 3);
  }
  auto be = make_cpu_backend(2);
  const int64_t n_vocab = (*mw)->profile.n_vocab;
  // Chunks of 4 (one token at a time): rings of 3 + 4 - 1 (3) slots, which wrap over 16 positions.
  auto logits = [&](const model& m, const std::vector<int32_t>& ids, bool one_by_one) {
    auto cache = kv_cache::create(m.profile, 64, one_by_one ? 1 : 4, dtype::f32, *be);
    EXPECT_TRUE(cache.is_ok()) << cache.message();
    if (&m == mw->get()) {
      EXPECT_LT(cache->bytes(), kv_cache::bytes_needed((*mf)->profile, 64, one_by_one ? 1 : 4, dtype::f32, be->kv_layout()));
    }
    forward_pass fwd(m, *be);
    std::vector<float> all, step;
    if (!one_by_one) {
      EXPECT_TRUE(fwd.run(*cache, ids, 0, true, all).is_ok());
      return all;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_TRUE(fwd.run(*cache, std::span(ids).subspan(i, 1), int32_t(i), true, step).is_ok());
      all.insert(all.end(), step.begin(), step.end());
    }
    return all;
  };
  std::vector<int32_t> ids = {1, 45, 300, 7, 999, 12, 600, 33, 21, 5, 8, 77, 1000, 3, 4, 90};
  auto changed_at = [&](size_t i) {
    std::vector<int32_t> v = ids;
    v[i] = 2;
    return v;
  };
  auto last = [&](const std::vector<float>& v) { return std::vector<float>(v.end() - n_vocab, v.end()); };
  const auto w = logits(**mw, ids, false), f = logits(**mf, ids, false);
  EXPECT_EQ(last(w), last(logits(**mw, changed_at(2), false)));
  EXPECT_NE(last(w), last(logits(**mw, changed_at(3), false)));
  EXPECT_NE(last(f), last(logits(**mf, changed_at(2), false)));
  float worst_head = 0.0f, worst_steps = 0.0f, worst_tail = 0.0f;
  const auto steps = logits(**mw, ids, true);
  ASSERT_EQ(steps.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    worst_steps = std::max(worst_steps, std::fabs(steps[i] - w[i]));
    if (i < size_t(3 * n_vocab)) worst_head = std::max(worst_head, std::fabs(f[i] - w[i]));
    else worst_tail = std::max(worst_tail, std::fabs(f[i] - w[i]));
  }
  EXPECT_LT(worst_head, 1e-4f);
  EXPECT_LT(worst_steps, 1e-3f);
  EXPECT_GT(worst_tail, 0.1f);  // the window changes what later positions see
}

// Gemma 3 1B's tokenizer has one added token (<image_soft_token>) past its 262144 embedding rows:
// such a token is left out, its text tokenized as text, as in llama.cpp's GGUF of the model.
TEST(hf_checkpoint, added_tokens_past_the_embedding_are_text) {
  const std::string dir = llama_dir("added_past_rows");
  json tok = read_json(dir + "/tokenizer.json");
  tok["added_tokens"].push_back({{"id", 32000}, {"content", "<image_soft_token>"}, {"special", true}, {"single_word", false},
                                 {"lstrip", false}, {"rstrip", false}, {"normalized", false}});
  write_text(dir + "/tokenizer.json", tok.dump());
  auto sess = open_session(dir);
  ASSERT_TRUE(sess);
  auto ids = sess->tokenize("Look: <image_soft_token>", true, true);
  ASSERT_TRUE(ids.is_ok()) << ids.message();
  for (int32_t id : *ids) EXPECT_LT(id, 32000);
  std::vector<float> logits;
  EXPECT_TRUE(sess->eval(*ids, false, logits).is_ok());

  // A GGUF quantized from such a folder by an earlier build (no llama.vocab_size) behaves the same.
  if (!test::emulated) {
    const std::string q8 = test::scratch("hf_checkpoint/added_past_rows-Q8_0.gguf");
    auto q = test::run_glia({"quantize", dir, q8, "Q8_0"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    auto src = gguf::file::open(q8);
    ASSERT_TRUE(src.is_ok());
    gguf::writer w;
    w.copy_metadata(**src);
    w.remove("llama.vocab_size");
    ASSERT_TRUE(w.copy_tensors(**src).is_ok());
    const std::string old_style = test::scratch("hf_checkpoint/added_past_rows-no-vocab-size.gguf");
    ASSERT_TRUE(w.write(old_style).is_ok());
    auto old_sess = open_session(old_style);
    ASSERT_TRUE(old_sess);
    auto old_ids = old_sess->tokenize("Look: <image_soft_token>", true, true);
    ASSERT_TRUE(old_ids.is_ok());
    EXPECT_EQ(*old_ids, *ids);
  }

  // A vocabulary the embedding cannot hold at all is refused when the model loads.
  json c = read_json(dir + "/config.json");
  c["vocab_size"] = 1000;
  write_text(dir + "/config.json", c.dump());
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    for (const auto& t : f.tensors()) {
      if (t.name == "model.embed_tokens.weight" || t.name == "lm_head.weight") {
        ASSERT_TRUE(w.add(t.name, t.type, {1000, t.shape[1]}, {t.data, size_t(1000 * t.shape[1] * 2)}).is_ok());
      } else {
        ASSERT_TRUE(w.add(t.name, t.type, t.shape, {t.data, size_t(t.n_bytes)}).is_ok());
      }
    }
  });
  session_options so;
  so.model_path = dir;
  auto small = session::create(so);
  ASSERT_FALSE(small.is_ok());
  EXPECT_NE(small.message().find("model.vocab has ids up to 31999, but the model's embedding has only 1000 rows"), std::string::npos)
      << small.message();
}

TEST(hf_checkpoint, generation_config_eos_ids_end_generation) {
  const std::string dir = llama_dir("eos_ids");
  auto plain = open_session(dir);
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->is_end_of_generation(2));  // </s>
  EXPECT_FALSE(plain->is_end_of_generation(13));
  json config = read_json(dir + "/config.json");
  config["eos_token_id"] = 2;
  write_text(dir + "/config.json", config.dump());
  write_text(dir + "/generation_config.json", R"({"bos_token_id": 1, "eos_token_id": [2, 13], "temperature": 0.6})");
  auto with = open_session(dir);
  ASSERT_TRUE(with);
  EXPECT_TRUE(with->is_end_of_generation(13));
  // config.json's eos_token_id (2) is not listed twice.
  auto f = hf::open_checkpoint(dir);
  ASSERT_TRUE(f.is_ok()) << f.message();
  const gguf::value* eos = (*f)->find(gguf::key_hf_eos_token_ids);
  ASSERT_TRUE(eos && eos->as_array());
  std::vector<int64_t> ids;
  for (const gguf::value& e : *eos->as_array()) ids.push_back(e.as_int().value_or(-1));
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 13}));
  // Its sampling settings are the model's defaults (general.sampling.*), as vLLM applies them.
  EXPECT_FLOAT_EQ(float(with->metadata_number("general.sampling.temp").value_or(-1)), 0.6f);
  write_text(dir + "/generation_config.json", R"({"eos_token_id": "x"})");
  EXPECT_NE(load_error(dir).find("generation_config.json: eos_token_id must be a token id or a list of them"), std::string::npos);
}

TEST(hf_checkpoint, no_mmap_reads_the_weights_into_memory) {
  const std::string dir = llama_dir("no_mmap");
  auto mapped = open_session(dir, true), read = open_session(dir, false);
  ASSERT_TRUE(mapped && read);
  EXPECT_TRUE(mapped->model_is_mapped());
  EXPECT_FALSE(read->model_is_mapped());
  std::vector<float> a, b;
  const std::vector<int32_t> ids = {1, 100, 200, 300};
  ASSERT_TRUE(mapped->eval(ids, false, a).is_ok());
  ASSERT_TRUE(read->eval(ids, false, b).is_ok());
  EXPECT_EQ(a, b);
}

// --check-tensors finds a NaN in a folder's weights and names the checkpoint's tensor.
TEST(hf_checkpoint, check_tensors_names_the_checkpoint_tensor) {
  const std::string dir = llama_dir("nan");
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    for (const auto& t : f.tensors()) {
      std::vector<uint8_t> b(t.data, t.data + t.n_bytes);
      if (t.name == "model.layers.1.mlp.down_proj.weight") b[10] = 0x00, b[11] = 0x7e;  // F16 NaN
      ASSERT_TRUE(w.add(t.name, t.type, t.shape, b).is_ok());
    }
  });
  session_options so;
  so.model_path = dir;
  so.check_tensors = true;
  auto sess = session::create(so);
  ASSERT_FALSE(sess.is_ok());
  EXPECT_NE(sess.message().find("is the checkpoint's model.layers.1.mlp.down_proj.weight"), std::string::npos) << sess.message();
}

}  // namespace
}  // namespace glia
