// Hugging Face checkpoint folders as a user has them: the tokenizer and chat template come along, and
// a folder that is not a usable checkpoint (missing or odd files, caches, partial downloads) is refused
// with a message that names the file and the key at fault. (Weights, configs and the CLI:
// hf_weights_test.cpp.)
#include "hf_checkpoint_util.h"

namespace glia {
namespace {

TEST(hf_checkpoint, tokenizer_and_chat_template_come_from_the_folder) {
  const std::string dir = llama_dir("tokenizer");
  json config = read_json(dir + "/tokenizer_config.json");
  config["chat_template"] = "{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}";
  write_text(dir + "/tokenizer_config.json", config.dump());
  auto sess = open_session(dir);
  ASSERT_TRUE(sess);
  auto reference = tokenizer::from_hf(dir);
  ASSERT_TRUE(reference.is_ok()) << reference.message();
  const std::string text = "Hello world, this is\n a test of the tokenizer.";
  auto ours = sess->tokenize(text, true, true);
  ASSERT_TRUE(ours.is_ok());
  EXPECT_EQ(*ours, (*reference)->encode(text, true, true));
  EXPECT_EQ(ours->front(), 1);  // <s>, from the tokenizer's post-processor

  EXPECT_EQ(render_default(dir, R"([{"role": "user", "content": "hi"}])"), "[user] hi</s>");

  // chat_template.jinja, where newer transformers save the template, wins over the config's.
  write_text(dir + "/chat_template.jinja", "J{{ bos_token }}");
  EXPECT_EQ(render_default(dir, "[]"), "J<s>");
}

TEST(hf_checkpoint, chat_template_jinja_alone_is_the_template) {
  const std::string dir = llama_dir("jinja_only");
  fs::remove(dir + "/tokenizer_config.json");
  write_text(dir + "/chat_template.jinja", "J{{ messages[0].content }}");
  EXPECT_EQ(render_default(dir, R"([{"role": "user", "content": "hi"}])"), "Jhi");
}

TEST(hf_checkpoint, without_tokenizer_json_a_session_says_what_is_missing) {
  const std::string dir = test::scratch("hf_checkpoint/no_tokenizer");
  ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/qwen3-F16.gguf"), dir).is_ok());
  ASSERT_TRUE(load_model(dir).is_ok());  // the model itself needs no tokenizer
  session_options so;
  so.model_path = dir;
  auto sess = session::create(so);
  ASSERT_FALSE(sess.is_ok());
  EXPECT_NE(sess.message().find("tokenizer.json"), std::string::npos) << sess.message();
}

// nlohmann stops reading at a NUL byte: a tokenizer.json with text after one is refused, as Python's
// json module refuses it, rather than loaded from its first part.
TEST(hf_checkpoint, a_nul_byte_in_the_tokenizer_files_is_refused) {
  for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) {
    const std::string dir = llama_dir(std::string("nul_") + file);
    ASSERT_TRUE(fs::exists(dir + "/" + file)) << file;
    write_text(dir + "/" + file, test::read_text(dir + "/" + file) + std::string("\0{\"junk\"", 9));
    session_options so;
    so.model_path = dir;
    auto sess = session::create(so);
    ASSERT_FALSE(sess.is_ok()) << file;
    EXPECT_NE(sess.message().find(std::string(file) + ": not valid JSON (a NUL byte at offset"), std::string::npos) << sess.message();
  }
}

TEST(hf_checkpoint, folder_problems_are_named) {
  const std::string dir = test::scratch("hf_checkpoint/problems");
  auto fresh = [&] { ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/llama-untied-F16.gguf"), dir).is_ok()); };
  auto expect_error = [&](const std::string& want) {
    const std::string msg = load_error(dir);
    EXPECT_NE(msg.find(want), std::string::npos) << "wanted '" << want << "' in: " << msg;
    EXPECT_EQ(msg.rfind(dir, 0), 0u) << "the message should start with the folder: " << msg;
  };

  fresh();
  fs::remove(dir + "/config.json");
  expect_error("no config.json");
  fs::create_directory(dir + "/config.json");  // there, but not a file
  expect_error("its config.json is not a regular file");
  fs::remove(dir + "/config.json");
  fs::create_symlink("../blobs/deleted", dir + "/config.json");
  expect_error("its config.json is a broken symbolic link");
  fs::remove(dir + "/config.json");

  fresh();
  fs::create_directory(dir + "/tokenizer.json");
  expect_error("tokenizer.json: not a regular file");
  fs::remove(dir + "/tokenizer.json");
  // A side file or the shard index as a broken link is no more absent than config.json is: a
  // missing generation_config.json would change the sampling defaults without a word.
  for (const char* side : {"tokenizer.json", "generation_config.json", "model.safetensors.index.json"}) {
    fresh();
    fs::remove(dir + "/" + std::string(side));
    // The index counts where there is no model.safetensors (else the shards are globbed without it).
    if (std::string(side).starts_with("model.")) fs::rename(dir + "/model.safetensors", dir + "/model-00001-of-00001.safetensors");
    fs::create_symlink("../blobs/deleted", dir + "/" + std::string(side));
    expect_error(std::string(side) + ": a broken symbolic link");
    fs::remove(dir + "/" + std::string(side));
  }

  // Without mmap the weights are read: a pipe would block for ever, /dev/zero fill the memory.
  for (const bool fifo : {true, false}) {
    fresh();
    fs::remove(dir + "/model.safetensors");
    if (fifo) ASSERT_EQ(::mkfifo((dir + "/model.safetensors").c_str(), 0600), 0);
    else fs::create_symlink("/dev/zero", dir + "/model.safetensors");
    for (const bool mmap : {true, false}) {
      load_options lo;
      lo.use_mmap = mmap;
      auto m = load_model(dir, lo);
      ASSERT_FALSE(m.is_ok());
      EXPECT_NE(m.message().find("model.safetensors: not a regular file"), std::string::npos) << m.message();
    }
    fs::remove(dir + "/model.safetensors");
  }

  fresh();
  write_text(dir + "/config.json", "{ not json");
  expect_error("config.json: not valid JSON: parse error at line 1, column");

  fresh();
  json c = read_json(dir + "/config.json");
  c["architectures"] = {"MixtralForCausalLM"};
  write_text(dir + "/config.json", c.dump());
  expect_error("architecture MixtralForCausalLM is not supported (supported: LlamaForCausalLM");

  fresh();
  c = read_json(dir + "/config.json");
  c.erase("hidden_size");
  write_text(dir + "/config.json", c.dump());
  expect_error("config.json: hidden_size is missing");

  fresh();
  c = read_json(dir + "/config.json");
  c["num_attention_heads"] = -4;
  write_text(dir + "/config.json", c.dump());
  expect_error("num_attention_heads must be a positive integer, found -4");

  fresh();
  c = read_json(dir + "/config.json");
  c["num_hidden_layers"] = 1;
  write_text(dir + "/config.json", c.dump());
  expect_error("belongs to layer 1, but config.json says num_hidden_layers is 1");


  // Settings that change the forward in ways the GGUF architecture cannot express are refused.
  const std::pair<json, std::string> refused[] = {
      {{{"attention_bias", true}}, "attention_bias is true; attention biases are not supported for LlamaForCausalLM"},
      {{{"hidden_act", "gelu"}}, "hidden_act \"gelu\" is not supported for LlamaForCausalLM"},
      {{{"mlp_bias", true}}, "mlp_bias is true"},
      {{{"partial_rotary_factor", 0.5}}, "partial_rotary_factor 0.5 is not supported"},
      {{{"final_logit_softcapping", 30.0}}, "final_logit_softcapping is set; softcapping is not supported for LlamaForCausalLM"},
      {{{"quantization_config", {{"quant_method", "gptq"}, {"bits", 4}}}}, "a quantized checkpoint (quantization_config, method \"gptq\")"},
      {{{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}}}, "rope_scaling type dynamic is not supported"},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"attention_factor", 1.2}}}}, "rope_scaling.attention_factor is not supported"},
      {{{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 1.0},
                          {"original_max_position_embeddings", 64}}}},
       "high_freq_factor (1) must be greater than low_freq_factor (4)"},
      {{{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 20000.0}}}}, "rope_theta 10000.0 and rope_parameters' 20000.0 disagree"},
      {{{"max_position_embeddings", 4294967296LL}}, "max_position_embeddings must be a positive integer, found 4294967296"},
      // Checked under the GGUF key it becomes, and named as the user wrote it.
      {{{"num_hidden_layers", 2000000000}},
       "metadata key llama.block_count: 2000000000 layers is outside 1..4096 (llama.block_count is config.json's num_hidden_layers)"},
      // Stored as a float it would be 0, "no scaling".
      {{{"rope_scaling", {{"rope_type", "linear"}, {"factor", 1e-300}}}}, "rope_scaling.factor 1e-300 is outside the range of a float"},
      {{{"rope_theta", nullptr}, {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.5}}}},
       "rope_parameters' partial_rotary_factor 0.5 is not supported"},
  };
  for (const auto& [patch, want] : refused) {
    fresh();
    c = read_json(dir + "/config.json");
    c.update(patch);
    write_text(dir + "/config.json", c.dump());
    expect_error(want);
  }

  // An intermediate_size the weights disagree with (transformers refuses it with a size mismatch).
  fresh();
  c = read_json(dir + "/config.json");
  c["intermediate_size"] = c["intermediate_size"].get<int>() * 2;
  write_text(dir + "/config.json", c.dump());
  expect_error("tensor blk.0.ffn_gate.weight has shape");

  // nlohmann stops at a NUL byte; what follows it must not be ignored.
  fresh();
  write_text(dir + "/config.json", read_json(dir + "/config.json").dump() + std::string("\0{\"hidden_size\": 64, junk", 25));
  expect_error("config.json: not valid JSON (a NUL byte at offset");

  // transformers matches module names exactly: "model.layers.01" is not layer 1.
  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    for (const auto& t : f.tensors()) {
      std::string name = t.name;
      if (name.starts_with("model.layers.1.")) name.insert(std::string_view("model.layers.").size(), "0");
      ASSERT_TRUE(w.add(name, t.type, t.shape, {t.data, size_t(t.n_bytes)}).is_ok());
    }
  });
  expect_error("tensor model.layers.01.");

  fresh();
  write_text(dir + "/config.json", std::string(100000, '[') + std::string(100000, ']'));
  expect_error("config.json: nests 100000 levels deep; the limit is 64");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    copy_all_but(f, w, "");
    std::vector<uint8_t> b(128 * 4);
    ASSERT_TRUE(w.add("model.layers.0.self_attn.o_proj.bias", safetensors::dtype::f32, {128}, b).is_ok());
  });
  expect_error("tensor model.layers.0.self_attn.o_proj.bias is not part of a LlamaForCausalLM model");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) { copy_all_but(f, w, "lm_head.weight"); });
  expect_error("the checkpoint has no lm_head.weight, and config.json does not tie it to the embedding (tie_word_embeddings is false)");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) { copy_all_but(f, w, "model.layers.1.mlp.up_proj.weight"); });
  expect_error("missing tensor blk.1.ffn_up.weight (expected shape [128, 256]) (blk.1.ffn_up.weight is the checkpoint's "
               "model.layers.1.mlp.up_proj.weight, whose shape lists the dimensions in reverse order)");
  // A vector's shape reads the same both ways: no note on the order.
  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    copy_all_but(f, w, "model.layers.1.post_attention_layernorm.weight");
  });
  expect_error("missing tensor blk.1.ffn_norm.weight (expected shape [128]) (blk.1.ffn_norm.weight is the checkpoint's "
               "model.layers.1.post_attention_layernorm.weight)");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    copy_all_but(f, w, "");
    std::vector<uint8_t> b(8);
    ASSERT_TRUE(w.add("model.layers.0.mlp.experts.0.w1.weight", safetensors::dtype::f32, {2}, b).is_ok());
  });
  expect_error("model.safetensors: tensor model.layers.0.mlp.experts.0.w1.weight is not part of a LlamaForCausalLM model");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    for (const auto& t : f.tensors()) {
      if (t.name == "model.layers.0.mlp.up_proj.weight") {
        std::vector<uint8_t> q(size_t(t.n_elements()));
        ASSERT_TRUE(w.add(t.name, safetensors::dtype::i8, t.shape, q).is_ok());
      } else {
        ASSERT_TRUE(w.add(t.name, t.type, t.shape, {t.data, size_t(t.n_bytes)}).is_ok());
      }
    }
  });
  expect_error("tensor model.layers.0.mlp.up_proj.weight has dtype I8");

  fresh();
  write_text(dir + "/model.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"a\": 1}", 16));
  expect_error("model.safetensors");

  fresh();
  fs::rename(dir + "/model.safetensors", dir + "/pytorch_model.bin");
  expect_error("PyTorch");

  // The index is read when there is no model.safetensors (which transformers prefers).
  fresh();
  fs::rename(dir + "/model.safetensors", dir + "/model-00001-of-00002.safetensors");
  write_text(dir + "/model.safetensors.index.json",
             json{{"weight_map", {{"model.norm.weight", "model-00002-of-00002.safetensors"}}}}.dump());
  expect_error("model-00002-of-00002.safetensors: cannot open");

  fresh();
  fs::rename(dir + "/model.safetensors", dir + "/model-00001-of-00001.safetensors");
  write_text(dir + "/model.safetensors.index.json", json{{"weight_map", {{"model.norm.weight", "../model.safetensors"}}}}.dump());
  expect_error("is not a file name in this folder");

  fresh();
  fs::rename(dir + "/model.safetensors", dir + "/model-00001-of-00001.safetensors");
  write_text(dir + "/model.safetensors.index.json",
             json{{"weight_map", {{"model.norm.weight", "model-00001-of-00001.safetensors"}, {"model.extra.weight", "model-00001-of-00001.safetensors"}}}}.dump());
  expect_error("model.safetensors.index.json: tensor model.extra.weight is not in \"model-00001-of-00001.safetensors\"");
}

TEST(hf_checkpoint, chat_template_json_of_multimodal_repositories) {
  const std::string dir = llama_dir("chat_template_json");
  write_text(dir + "/chat_template.json", json{{"chat_template", "P{{ messages[0].content }}"}}.dump());
  EXPECT_EQ(render_default(dir, R"([{"role": "user", "content": "hi"}])"), "Phi");
}

// Newer transformers save named templates as additional_chat_templates/NAME.jinja.
TEST(hf_checkpoint, additional_chat_templates_are_named_templates) {
  const std::string dir = llama_dir("named_templates");
  fs::create_directories(dir + "/additional_chat_templates");
  write_text(dir + "/additional_chat_templates/tool_use.jinja", "T{{ messages[0].content }}");
  write_text(dir + "/chat_template.jinja", "D");
  auto f = open_model_metadata(dir);
  ASSERT_TRUE(f.is_ok()) << f.message();
  for (auto set : {jinja::load_chat_templates(**f), jinja::load_chat_templates_hf(dir)}) {
    ASSERT_TRUE(set.is_ok()) << set.message();
    ASSERT_NE(set->select("tool_use"), nullptr);
    EXPECT_EQ(*set->select("tool_use"), "T{{ messages[0].content }}");
    EXPECT_EQ(*set->select(), "D");
    EXPECT_EQ(*set->select("", true), "T{{ messages[0].content }}");  // HF picks tool_use when tools are given
  }
  // A session (the server) renders a conversation with tools with it, one without with the default.
  session_options so;
  so.model_path = dir;
  auto sess = session::create(so);
  ASSERT_TRUE(sess.is_ok()) << sess.message();
  EXPECT_EQ((*sess)->chat_template("", true)->source, "T{{ messages[0].content }}");
  EXPECT_EQ((*sess)->chat_template("")->source, "D");
  EXPECT_EQ((*sess)->chat_template("chatml", true)->source, (*sess)->chat_template("chatml")->source);  // a template asked for is the one
}

// huggingface-cli download leaves models--org--name/{refs/main, snapshots/<rev>/*} with the snapshot's
// files symlinked to blobs/: either folder opens, named org/name, and quantize never writes through
// a link onto a blob.
TEST(hf_checkpoint, hugging_face_cache_layout) {
  if (test::emulated) GTEST_SKIP() << "the CLI runs under an emulator";
  const std::string src = llama_dir("cache_src");
  const fs::path repo = test::scratch("hf_checkpoint/cache/models--acme--tiny-llama");
  fs::remove_all(repo);
  const fs::path snap = repo / "snapshots" / "0123abcd";
  fs::create_directories(snap);
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  write_text(repo / "refs" / "main", "0123abcd");
  int n = 0;
  for (const auto& e : fs::directory_iterator(src)) {
    const fs::path blob = repo / "blobs" / ("blob" + std::to_string(n++));
    fs::copy_file(e.path(), blob);
    fs::create_symlink(fs::path("../../blobs") / blob.filename(), snap / e.path().filename());
  }
  for (const fs::path& p : {repo, snap}) {
    auto m = load_model(p.string());
    ASSERT_TRUE(m.is_ok()) << m.message();
    EXPECT_EQ((*m)->profile.name, "acme/tiny-llama");
  }
  const auto blob_size = fs::file_size(snap / "model.safetensors");
  auto q = test::run_glia({"quantize", snap.string(), (snap / "model.safetensors").string(), "Q8_0"});
  EXPECT_NE(q.exit_code, 0);
  EXPECT_NE(q.err.find("the output would overwrite the input's model.safetensors"), std::string::npos) << q.err;
  // Another name for the same blob is the same file.
  fs::create_symlink(fs::canonical(snap / "model.safetensors"), repo / "alias.safetensors");
  q = test::run_glia({"quantize", snap.string(), (repo / "alias.safetensors").string(), "Q8_0"});
  EXPECT_NE(q.exit_code, 0);
  // Nor when the input is given as the repository folder or as the snapshot's config.json.
  q = test::run_glia({"quantize", repo.string(), (snap / "model.safetensors").string(), "Q8_0"});
  EXPECT_NE(q.err.find("the output would overwrite the input's model.safetensors"), std::string::npos) << q.err;
  q = test::run_glia({"quantize", (snap / "config.json").string(), (repo / "alias.safetensors").string(), "Q8_0"});
  EXPECT_NE(q.err.find("the output would overwrite the input's model.safetensors"), std::string::npos) << q.err;
  EXPECT_EQ(fs::file_size(snap / "model.safetensors"), blob_size);
  EXPECT_TRUE(load_model(snap.string()).is_ok());

  // Without refs/main (a download by revision) the only snapshot is the one; a refs/main naming a
  // missing snapshot says so.
  fs::remove(repo / "refs" / "main");
  EXPECT_TRUE(load_model(repo.string()).is_ok());
  write_text(repo / "refs" / "main", "fedcba98\n");
  EXPECT_NE(load_error(repo.string()).find("refs/main names revision 'fedcba98', which is not a folder in snapshots/"),
            std::string::npos);
}

TEST(hf_checkpoint, folders_that_are_not_whole_models_say_what_they_are) {
  const std::string dir = test::scratch("hf_checkpoint/adapter");
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_text(dir + "/adapter_config.json", "{}");
  EXPECT_NE(load_error(dir).find("a PEFT adapter"), std::string::npos);
  fs::remove(dir + "/adapter_config.json");
  write_text(dir + "/params.json", "{}");
  EXPECT_NE(load_error(dir).find("Mistral's own layout (params.json)"), std::string::npos);
  // Only consolidated.safetensors (Mistral's layout) beside a config: not transformers' weights.
  const std::string mistral = llama_dir("consolidated");
  fs::rename(mistral + "/model.safetensors", mistral + "/consolidated.safetensors");
  EXPECT_NE(load_error(mistral).find("no model*.safetensors weights"), std::string::npos);
  // A whole model with an adapter beside it: transformers would apply the adapter, so the bare
  // weights are not run (nor quantized) as if it were not there.
  const std::string with_adapter = llama_dir("with-adapter");
  write_text(with_adapter + "/adapter_config.json", R"({"peft_type": "LORA", "r": 8})");
  EXPECT_NE(load_error(with_adapter).find("adapter_config.json: a PEFT (LoRA) adapter sits beside the model"), std::string::npos)
      << load_error(with_adapter);
}

}  // namespace
}  // namespace glia
