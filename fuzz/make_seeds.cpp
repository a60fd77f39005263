// Writes small seed inputs for the gguf_model target: tiny models of each family switch (biases,
// QK-norm, post norms, sliding windows, V = K, rope_freqs, YaRN, quantized matrices) with a small
// SentencePiece vocabulary, and a "zoo" file with a value of every metadata type and a tensor of
// every implemented type. Tiny inputs keep libFuzzer fast while reaching binding and the forward.
// From the test-data pack, read now (never copied into the repository), it also writes the other
// targets' seeds in subfolders, in each target's input format:
//   tokenizer_encode/  the pack's test strings, each behind a flag byte naming a tokenizer kind;
//   template_render/   every chat template, NUL, each of the pack's conversations;
//   tokenizer_load/    the pack's tokenizer.json files cut down to a few hundred tokens and merges:
//                      llama2's (BPE, byte fallback); with --all also llama3's and qwen3's (byte-level
//                      BPE), whose 9-11 MB files take minutes to cut down, too slow for a CI fixture.
//
//   fuzz_make_seeds [--all] DIR
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fixtures.h"
#include "fuzz_support.h"
#include "gguf/gguf.h"
#include "quant/types.h"
#include "tokenizer/vocab_hf.h"

namespace {

using namespace glia;

struct model_spec {
  std::string file, arch;
  int n_embd = 8, n_layer = 1, n_head = 2, n_kv = 1, n_ff = 16, n_ctx = 8;
  dtype mat = dtype::f32;  // type of the 2-D weights
  bool qkv_bias = false, qk_norm = false, post_norms = false, untied = false, rope_freqs = false;
  bool output_scale = false;
  std::vector<bool> v_from_k{};  // per layer: no attn_v tensor
  std::function<void(gguf::writer&)> keys{};
};

std::mt19937 rng(1234);

std::vector<uint8_t> encode(dtype t, const std::vector<float>& v) {
  const type_traits& tt = type_info(t);
  std::vector<uint8_t> out(row_bytes(tt, int64_t(v.size())));
  tt.quantize_row(v.data(), out.data(), int64_t(v.size()));
  return out;
}

void add(gguf::writer& w, const std::string& name, dtype t, std::vector<int64_t> dims, float base, float spread) {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  std::normal_distribution<float> nd(base, spread);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  // Rows are quantized one at a time, as a file stores them.
  std::vector<uint8_t> data;
  for (int64_t r = 0; r < n / dims[0]; ++r) {
    auto row = encode(t, std::vector<float>(v.begin() + r * dims[0], v.begin() + (r + 1) * dims[0]));
    data.insert(data.end(), row.begin(), row.end());
  }
  status s = w.add_tensor(name, uint32_t(t), dims, data);
  if (!s) std::fprintf(stderr, "seed tensor %s: %s\n", name.c_str(), s.message().c_str());
}

void add_vocab(gguf::writer& w) {
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "<0xC3>", "\xE2\x96\x81", "a",
                                           "b", "c", "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab", "abc",
                                           "<|im_end|>", "<tool>"};
  const std::vector<int32_t> types = {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 3, 4};
  std::vector<float> scores;
  for (size_t i = 0; i < tokens.size(); ++i) scores.push_back(-float(i));
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
}

gguf::writer make_model(const model_spec& s) {
  gguf::writer w;
  const std::string a = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", s.file);
  w.set_u32(a + "context_length", uint32_t(s.n_ctx));
  w.set_u32(a + "embedding_length", uint32_t(s.n_embd));
  w.set_u32(a + "block_count", uint32_t(s.n_layer));
  w.set_u32(a + "feed_forward_length", uint32_t(s.n_ff));
  w.set_u32(a + "attention.head_count", uint32_t(s.n_head));
  w.set_u32(a + "attention.head_count_kv", uint32_t(s.n_kv));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (s.keys) s.keys(w);
  add_vocab(w);
  const int64_t n_vocab = 16, hd = s.n_embd / s.n_head;
  add(w, "token_embd.weight", s.mat, {s.n_embd, n_vocab}, 0, 0.15f);
  add(w, "output_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
  if (s.untied) add(w, "output.weight", s.mat, {s.n_embd, n_vocab}, 0, 0.15f);
  if (s.rope_freqs) add(w, "rope_freqs.weight", dtype::f32, {hd / 2}, 1.5f, 0.1f);
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(w, p + "attn_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    add(w, p + "attn_q.weight", s.mat, {s.n_embd, s.n_head * hd}, 0, 0.08f);
    add(w, p + "attn_k.weight", s.mat, {s.n_embd, s.n_kv * hd}, 0, 0.08f);
    if (size_t(il) >= s.v_from_k.size() || !s.v_from_k[size_t(il)])
      add(w, p + "attn_v.weight", s.mat, {s.n_embd, s.n_kv * hd}, 0, 0.08f);
    if (s.qkv_bias) {
      add(w, p + "attn_q.bias", dtype::f32, {s.n_head * hd}, 0, 0.1f);
      add(w, p + "attn_k.bias", dtype::f32, {s.n_kv * hd}, 0, 0.1f);
      add(w, p + "attn_v.bias", dtype::f32, {s.n_kv * hd}, 0, 0.1f);
    }
    if (s.qk_norm) {
      add(w, p + "attn_q_norm.weight", dtype::f32, {hd}, 1, 0.1f);
      add(w, p + "attn_k_norm.weight", dtype::f32, {hd}, 1, 0.1f);
    }
    add(w, p + "attn_output.weight", s.mat, {s.n_head * hd, s.n_embd}, 0, 0.08f);
    if (s.post_norms) add(w, p + "post_attention_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    add(w, p + "ffn_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    add(w, p + "ffn_gate.weight", s.mat, {s.n_embd, s.n_ff}, 0, 0.08f);
    add(w, p + "ffn_up.weight", s.mat, {s.n_embd, s.n_ff}, 0, 0.08f);
    add(w, p + "ffn_down.weight", s.mat, {s.n_ff, s.n_embd}, 0, 0.08f);
    if (s.post_norms) add(w, p + "post_ffw_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    if (s.output_scale) add(w, p + "layer_output_scale.weight", dtype::f32, {1}, 0.75f, 0.1f);
  }
  return w;
}

gguf::value scalar(gguf::value_type t, std::variant<uint64_t, int64_t, double, bool, std::string> x) {
  gguf::value v;
  v.type = t;
  std::visit([&](auto&& e) { v.data = e; }, x);
  return v;
}

gguf::value array(gguf::value_type elem, std::vector<gguf::value> e) {
  gguf::value v;
  v.type = gguf::value_type::array;
  v.elem_type = elem;
  v.data = std::move(e);
  return v;
}

// Every metadata type, and one 256-element row of every implemented tensor type (256 is a whole
// number of blocks for all of them).
gguf::writer make_zoo() {
  using vt = gguf::value_type;
  gguf::writer w;
  w.set_string("general.architecture", "zoo");
  w.set("zoo.u8", scalar(vt::u8, uint64_t(200)));
  w.set("zoo.i8", scalar(vt::i8, int64_t(-100)));
  w.set("zoo.u16", scalar(vt::u16, uint64_t(60000)));
  w.set("zoo.i16", scalar(vt::i16, int64_t(-30000)));
  w.set("zoo.u32", scalar(vt::u32, uint64_t(4000000000u)));
  w.set("zoo.i32", scalar(vt::i32, int64_t(-2000000000)));
  w.set("zoo.u64", scalar(vt::u64, uint64_t(1) << 60));
  w.set("zoo.i64", scalar(vt::i64, -(int64_t(1) << 60)));
  w.set("zoo.f32", scalar(vt::f32, 1.5));
  w.set("zoo.f64", scalar(vt::f64, -2.25));
  w.set("zoo.bool", scalar(vt::boolean, true));
  w.set("zoo.string", scalar(vt::string, std::string("text \xE2\x96\x81")));
  w.set("zoo.nested", array(vt::array, {array(vt::u16, {scalar(vt::u16, uint64_t(1)), scalar(vt::u16, uint64_t(2))}),
                                        array(vt::string, {scalar(vt::string, std::string("x"))})}));
  w.set("zoo.bools", array(vt::boolean, {scalar(vt::boolean, false), scalar(vt::boolean, true)}));
  w.set_alignment(64);
  for (const type_traits& t : all_types()) add(w, std::string("zoo.") + t.name, t.type, {256}, 0, 1);
  return w;
}

using ojson = nlohmann::ordered_json;

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool write_bytes(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  return bool(out);
}

// tokenizer_encode: string i of strings.json goes to kind i % n_kinds with flags (i / n_kinds) % 4, so
// every kind gets a share of the strings and every add_special/parse_special combination.
int write_encode_seeds(const std::filesystem::path& dir, bool) {
  std::filesystem::create_directories(dir);
  const ojson strings = ojson::parse(read_all(fuzz::testdata("tokenizers/strings.json")), nullptr, false);
  if (!strings.is_array()) return std::fprintf(stderr, "tokenizers/strings.json: not a JSON array\n"), -1;
  const int n_kinds = fuzz::n_tokenizer_kinds();
  int n = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    if (!strings[i].is_string()) continue;
    const int kind = int(i % n_kinds);
    const uint8_t flags = uint8_t((kind << 2) | ((i / n_kinds) % 4));
    std::string bytes(1, char(flags));  // (not `string(1, c) + s`: GCC 12 warns falsely, -Wrestrict)
    bytes += strings[i].get<std::string>();
    if (!write_bytes(dir / fmt::format("{}-{:03}.bin", fuzz::tokenizer_kind_name(kind), i), bytes)) return -1;
    ++n;
  }
  return n;
}

// template_render: template NUL messages, for every template and conversation of the pack.
int write_template_seeds(const std::filesystem::path& dir, bool) {
  std::filesystem::create_directories(dir);
  const ojson convs = ojson::parse(read_all(fuzz::testdata("chat_templates/conversations.json")), nullptr, false);
  if (!convs.is_array()) return std::fprintf(stderr, "chat_templates/conversations.json: not a JSON array\n"), -1;
  std::vector<std::filesystem::path> templates;
  for (const auto& e : std::filesystem::directory_iterator(fuzz::testdata("chat_templates/templates")))
    if (e.path().extension() == ".jinja") templates.push_back(e.path());
  std::sort(templates.begin(), templates.end());
  int n = 0;
  for (const auto& t : templates) {
    const std::string source = read_all(t);
    for (const auto& c : convs) {
      if (!c.is_object() || !c.contains("messages")) continue;
      const std::string name = c.value("name", std::to_string(n));
      const std::string bytes = source + '\0' + c["messages"].dump();
      if (!write_bytes(dir / (t.stem().string() + "-" + name + ".bin"), bytes)) return -1;
      ++n;
    }
  }
  return n;
}

// tokenizer_load: a real tokenizer.json keeps its normalizer, pre-tokenizer, post-processor, decoder and
// added tokens, but only the first `keep` vocabulary entries (plus the added tokens' own) and the
// merges among them, so that one input is kilobytes instead of megabytes.
int write_loader_seeds(const std::filesystem::path& dir, bool all) {
  std::filesystem::create_directories(dir);
  int n = 0;
  std::vector<const char*> names = {"llama2"};
  if (all) names.insert(names.end(), {"llama3", "qwen3"});
  for (const char* name : names) {
    const std::string rel = std::string("tokenizers/") + name + "/tokenizer.json.gz";
    auto text = tok::read_file_maybe_gz(fuzz::testdata(rel));
    if (!text) return std::fprintf(stderr, "%s\n", text.message().c_str()), -1;
    ojson j = ojson::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
      return std::fprintf(stderr, "%s: no model\n", rel.c_str()), -1;
    std::set<int64_t> added;
    if (j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& a : j["added_tokens"])
        if (a.is_object() && a.contains("id") && a["id"].is_number_integer()) added.insert(a["id"].get<int64_t>());
    ojson& model = j["model"];
    std::set<std::string> kept;
    if (model.contains("vocab") && model["vocab"].is_object()) {
      ojson small = ojson::object();
      for (const auto& [piece, id] : model["vocab"].items()) {
        if (!id.is_number_integer()) continue;
        const int64_t i = id.get<int64_t>();
        if (i < 400 || added.count(i)) {
          small[piece] = id;
          kept.insert(piece);
        }
      }
      model["vocab"] = std::move(small);
    }
    if (model.contains("merges") && model["merges"].is_array()) {
      ojson small = ojson::array();
      for (const auto& m : model["merges"]) {
        std::string a, b;
        if (m.is_string()) {
          const std::string s = m.get<std::string>();
          const size_t sp = s.find(' ');
          if (sp == std::string::npos) continue;
          a = s.substr(0, sp), b = s.substr(sp + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
          a = m[0].get<std::string>(), b = m[1].get<std::string>();
        } else {
          continue;
        }
        if (kept.count(a) && kept.count(b) && kept.count(a + b)) small.push_back(m);
        if (small.size() >= 300) break;
      }
      model["merges"] = std::move(small);
    }
    std::string config;
    const std::string config_path = fuzz::testdata(std::string("tokenizers/") + name + "/tokenizer_config.json");
    if (std::filesystem::exists(config_path)) {
      // Only the members the loader reads; the chat template is template_render's business.
      ojson c = ojson::parse(read_all(config_path), nullptr, false);
      ojson small = ojson::object();
      if (c.is_object())
        for (const char* k : {"add_bos_token", "add_eos_token", "clean_up_tokenization_spaces", "bos_token", "eos_token",
                              "unk_token", "pad_token", "legacy"})
          if (c.contains(k)) small[k] = c[k];
      config = small.dump();
    }
    if (!write_bytes(dir / (std::string(name) + ".json"), j.dump(1)) ||
        !write_bytes(dir / (std::string(name) + "-config.bin"), j.dump() + '\0' + config))
      return -1;
    n += 2;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const bool all = argc == 3 && std::string(argv[1]) == "--all";
  if (argc != 2 && !all) {
    std::fprintf(stderr, "usage: fuzz_make_seeds [--all] DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[argc - 1];
  std::filesystem::create_directories(dir);
  using vt = gguf::value_type;
  std::vector<model_spec> specs = {
      {.file = "llama-f32", .arch = "llama", .n_layer = 2},
      {.file = "llama-q8_0-untied", .arch = "llama", .n_embd = 32, .n_ff = 32, .mat = dtype::q8_0, .untied = true},
      {.file = "llama-q4_0-yarn", .arch = "llama", .n_embd = 32, .n_ff = 32, .mat = dtype::q4_0,
       .keys = [](gguf::writer& w) {
         w.set_string("llama.rope.scaling.type", "yarn");
         w.set_f32("llama.rope.scaling.factor", 4);
         w.set_u32("llama.rope.scaling.original_context_length", 4);
       }},
      {.file = "llama-f16-rope-freqs", .arch = "llama", .mat = dtype::f16, .rope_freqs = true},
      {.file = "qwen2-bias", .arch = "qwen2", .qkv_bias = true},
      {.file = "qwen3-qk-norm", .arch = "qwen3", .qk_norm = true},
      {.file = "gemma-bf16", .arch = "gemma", .mat = dtype::bf16},
      {.file = "gemma2-swa", .arch = "gemma2", .n_layer = 2, .post_norms = true,
       .keys = [](gguf::writer& w) {
         w.set_u32("gemma2.attention.sliding_window", 2);
         w.set_f32("gemma2.attn_logit_softcapping", 2);
         w.set_f32("gemma2.final_logit_softcapping", 4);
       }},
      {.file = "gemma3-swa", .arch = "gemma3", .n_layer = 2, .qk_norm = true, .post_norms = true,
       .keys = [](gguf::writer& w) {
         w.set_u32("gemma3.attention.sliding_window", 2);
         w.set_u32("gemma3.attention.sliding_window_pattern", 2);
         w.set_string("gemma3.rope.scaling.type", "linear");
         w.set_f32("gemma3.rope.scaling.factor", 8);
       }},
      {.file = "gemma4-v-from-k", .arch = "gemma4", .n_layer = 2, .qk_norm = true, .post_norms = true,
       .rope_freqs = true, .output_scale = true, .v_from_k = {false, true},
       .keys = [](gguf::writer& w) {
         w.set_u32("gemma4.attention.sliding_window", 2);
         w.set("gemma4.attention.sliding_window_pattern",
               array(vt::boolean, {scalar(vt::boolean, true), scalar(vt::boolean, false)}));
         w.set_f32("gemma4.final_logit_softcapping", 6);
       }},
  };
  int failures = 0;
  auto write = [&](const gguf::writer& w, const std::string& name) {
    status s = w.write((dir / (name + ".gguf")).string());
    if (!s) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), s.message().c_str());
      ++failures;
    }
  };
  for (const auto& s : specs) write(make_model(s), s.file);
  write(make_zoo(), "zoo");
  std::printf("wrote %zu seeds to %s\n", specs.size() + 1, dir.c_str());
  for (const auto& [sub, fn] : {std::pair{"tokenizer_encode", &write_encode_seeds},
                                std::pair{"template_render", &write_template_seeds},
                                std::pair{"tokenizer_load", &write_loader_seeds}}) {
    const int n = fn(dir / sub, all);
    if (n < 0) ++failures;
    else std::printf("wrote %d seeds to %s\n", n, (dir / sub).c_str());
  }
  return failures == 0 ? 0 : 1;
}
