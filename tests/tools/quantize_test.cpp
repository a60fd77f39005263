// glia quantize against outside oracles: llama-quantize's own output in the pack (brown-q8_0 is
// `llama-quantize brown-f32.gguf Q8_0`; Q8_0 rounding is deterministic, so the bytes must agree),
// the per-tensor types of every quantized pack file (MANIFEST.json, made by llama-quantize with
// the options the README lists), and llama.cpp's golden logits.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "gguf/gguf.h"
#include "model/model.h"
#include "model/quantize.h"
#include "tools_test_util.h"

namespace glia {
namespace {

using tools_test::compare_with_golden;
using tools_test::quote;
using tools_test::run_cli;

std::shared_ptr<gguf::file> open_gguf(const std::string& path) {
  auto f = gguf::file::open(path);
  EXPECT_TRUE(f.is_ok()) << f.message();
  return f ? *f : nullptr;
}

std::string quantized(const std::string& src_rel, const std::string& name, const quantize_options& q) {
  const std::string out = test::scratch(name);
  auto r = quantize_model(test::testdata(src_rel), out, q);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return out;
}

quantize_options opts(file_type ft) {
  quantize_options q;
  q.mix.ftype = ft;
  q.n_threads = 2;
  return q;
}

TEST(quantize, brown_q8_0_reproduces_llama_quantize_byte_for_byte) {
  const std::string out = quantized("models/brown-f32.gguf", "brown-q8_0-ours.gguf", opts(file_type::mostly_q8_0));
  auto ours = open_gguf(out);
  auto ref = open_gguf(test::testdata("models/brown-q8_0.gguf"));
  ASSERT_TRUE(ours && ref);
  ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const auto& r = ref->tensors()[i];
    const auto& o = ours->tensors()[i];
    EXPECT_EQ(o.name, r.name) << "tensor order differs at " << i;
    const auto* ot = ours->find_tensor(r.name);
    ASSERT_NE(ot, nullptr) << r.name;
    EXPECT_EQ(ot->type, r.type) << r.name;
    ASSERT_EQ(ot->n_bytes, r.n_bytes) << r.name;
    EXPECT_EQ(std::memcmp(ot->data, r.data, r.n_bytes), 0) << r.name << ": quantized bytes differ";
  }
  EXPECT_EQ(ours->get_int("general.file_type"), 7);
  EXPECT_EQ(ours->get_int("general.quantization_version"), 2);
  // Same metadata in the same order and the same layout: the whole file is llama-quantize's.
  EXPECT_EQ(test::read_file(out), test::read_file(test::testdata("models/brown-q8_0.gguf")));
}

TEST(quantize, brown_q8_0_logits_match_the_f32_golden) {
  const std::string out = quantized("models/brown-f32.gguf", "brown-q8_0-logits.gguf", opts(file_type::mostly_q8_0));
  const auto d = compare_with_golden(out, "brown-f32");
  EXPECT_EQ(d.rows, 16);
  EXPECT_LT(d.max_abs, 0.3);
  EXPECT_EQ(d.golden_top1_in_top5, d.rows);
}

// brown is 192 wide: no k-quant fits its rows, so llama.cpp's fallbacks decide most types.
TEST(quantize, brown_q4_k_m_follows_the_mix_and_its_fallbacks) {
  const std::string out = quantized("models/brown-f32.gguf", "brown-q4_k_m.gguf", opts(file_type::mostly_q4_k_m));
  auto f = open_gguf(out);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->get_int("general.file_type"), 15);
  // use_more_bits(i, 6) holds for layers 2 and 5 (i % 3 == 2, i >= 7*6/8).
  std::map<std::string, std::string> want = {{"token_embd.weight", "Q8_0"}, {"output_norm.weight", "F32"}};
  for (int il = 0; il < 6; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    const bool more = il == 2 || il == 5;
    for (const char* n : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"}) want[b + n + ".weight"] = "Q5_0";
    want[b + "attn_v.weight"] = more ? "Q8_0" : "Q5_0";      // Q6_K / Q4_K, rows of 192 fall back
    want[b + "ffn_down.weight"] = more ? "Q6_K" : "Q4_K";    // rows of 512 fit
    want[b + "attn_norm.weight"] = want[b + "ffn_norm.weight"] = "F32";
  }
  ASSERT_EQ(f->tensors().size(), want.size());
  for (const auto& t : f->tensors()) EXPECT_EQ(type_name(t.type), want[t.name]) << t.name;
  const auto d = compare_with_golden(out, "brown-f32");
  EXPECT_LT(d.max_abs, 1.0);
  EXPECT_EQ(d.golden_top1_in_top5, d.rows);
}

TEST(quantize, untied_f16_to_q8_0_and_q4_0) {
  const std::string q8 = quantized("models/llama-untied-F16.gguf", "untied-q8_0.gguf", opts(file_type::mostly_q8_0));
  const auto d8 = compare_with_golden(q8, "llama-untied-F16");
  EXPECT_LT(d8.max_abs, 0.3);
  EXPECT_EQ(d8.golden_top1_in_top5, d8.rows);

  const std::string out = quantized("models/llama-untied-F16.gguf", "untied-q4_0.gguf", opts(file_type::mostly_q4_0));
  auto f = open_gguf(out);
  ASSERT_TRUE(f);
  for (const auto& t : f->tensors()) {
    if (t.n_dims == 1) EXPECT_EQ(type_name(t.type), "F32") << t.name;
    else if (t.name == "output.weight") EXPECT_EQ(type_name(t.type), "Q8_0") << "Q6_K falls back on rows of 128";
    else EXPECT_EQ(type_name(t.type), "Q4_0") << t.name;
  }
  // This random-weight model (logit sd ~2, near-ties) amplifies weight noise: a Q4_0 step is an
  // eighth of a block's largest weight, 16x Q8_0's, and the logits move by about a quarter of their
  // spread (Q5_0 halves that). A wrong layout or a mixed-up tensor makes the error as large as the
  // logits themselves (relative RMS >= 1) and scatters the argmax.
  const auto d = compare_with_golden(out, "llama-untied-F16");
  EXPECT_EQ(d.rows, 16);
  EXPECT_LT(d.relative_rms(), 0.5);
  EXPECT_GE(d.golden_top1_in_top5, 12);
}

TEST(quantize, requantizing_through_f32_is_a_fixed_point_of_q8_0) {
  // A dequantized Q8_0 block is q * d with max |q| = 127, so requantizing finds the same d
  // (127 d / 127, exact in float) and rounds every q * d / d back to q: llama-quantize's bytes again.
  const std::string f32 = quantized("models/brown-q8_0.gguf", "brown-q8-to-f32.gguf", opts(file_type::all_f32));
  auto mid = open_gguf(f32);
  ASSERT_TRUE(mid);
  for (const auto& t : mid->tensors()) EXPECT_EQ(type_name(t.type), "F32") << t.name;
  auto r = quantize_model(f32, test::scratch("brown-q8-f32-q8.gguf"), opts(file_type::mostly_q8_0));
  ASSERT_TRUE(r.is_ok()) << r.message();
  auto a = open_gguf(test::scratch("brown-q8-f32-q8.gguf"));
  auto b = open_gguf(test::testdata("models/brown-q8_0.gguf"));
  ASSERT_TRUE(a && b);
  for (const auto& t : b->tensors()) {
    const auto* o = a->find_tensor(t.name);
    ASSERT_NE(o, nullptr);
    ASSERT_EQ(o->n_bytes, t.n_bytes);
    EXPECT_EQ(std::memcmp(o->data, t.data, t.n_bytes), 0) << t.name;
  }
}

// Every quantized file of the pack, re-planned from its tensor list with the options the README
// says llama-quantize was given: our mix must pick the same type for every tensor, and our order
// must be the file's order.
TEST(quantize, mixes_match_every_llama_quantize_file_of_the_pack) {
  std::ifstream in(test::testdata("models/MANIFEST.json"));
  const auto manifest = nlohmann::ordered_json::parse(in);
  const std::map<std::string, std::string> token_embd_option = {
      {"llama-tied-Q4_0", "q4_0"},   {"llama-tied-IQ4_NL", "iq4_nl"}, {"llama-h256-Q2_K", "q2_K"},
      {"llama-h160-Q4_1", "q4_1"},   {"llama-h160-Q5_0", "q5_0"},     {"llama-h160-Q5_1", "q5_1"},
      {"llama-hd128-Q3_K_M", "q3_K"}, {"llama-hd128-Q5_K_M", "q5_K"}, {"llama-hd128-IQ4_XS", "iq4_xs"}};
  int n_files = 0;
  for (const auto& e : manifest) {
    const std::string file = e["file"];
    const std::string stem = std::filesystem::path(file).stem();
    const auto& md = e["metadata"];
    if (!md.contains("general.file_type") || md["general.file_type"].get<int>() <= 1) continue;  // F32/F16 masters
    SCOPED_TRACE(stem);
    ++n_files;
    mix_options mix;
    mix.ftype = file_type(md["general.file_type"].get<uint32_t>());
    ASSERT_NE(find_file_type(mix.ftype), nullptr);
    if (auto it = token_embd_option.find(stem); it != token_embd_option.end()) mix.token_embd_type = parse_weight_type(it->second);
    const std::string arch = md["general.architecture"];
    mix_facts facts;
    facts.n_layer = md[arch + ".block_count"];
    facts.n_gqa = md[arch + ".attention.head_count"].get<int>() / md[arch + ".attention.head_count_kv"].get<int>();

    std::vector<tensor_desc> descs;
    std::vector<std::string> file_order, want_types;
    for (const auto& [name, t] : e["tensors"].items()) {
      const auto dims = t["dims"].get<std::vector<int64_t>>();
      // The masters held 2-D weights in F16 (brown: F32) and 1-D tensors in F32.
      descs.push_back({name, dims, dims.size() == 1 || stem == "brown-q8_0" ? dtype::f32 : dtype::f16});
      file_order.push_back(name);
      want_types.push_back(t["type"]);
    }
    std::vector<std::string> sorted = file_order;
    std::stable_sort(sorted.begin(), sorted.end(), llama_tensor_order);
    EXPECT_EQ(sorted, file_order);
    auto types = plan_tensor_types(descs, mix, facts);
    ASSERT_TRUE(types.is_ok()) << types.message();
    for (size_t i = 0; i < descs.size(); ++i) EXPECT_EQ(type_info((*types)[i]).name, want_types[i]) << descs[i].name;
  }
  EXPECT_EQ(n_files, 14);  // brown-q8_0, 3 llama-tied, 2 llama-h256, 4 llama-h160, 4 llama-hd128
}

TEST(quantize, names_and_errors) {
  EXPECT_EQ(parse_file_type("q4_k_m"), file_type::mostly_q4_k_m);
  EXPECT_EQ(parse_file_type("Q4_K"), file_type::mostly_q4_k_m);  // llama-quantize's alias
  EXPECT_EQ(parse_file_type("IQ4_XS"), file_type::mostly_iq4_xs);
  EXPECT_FALSE(parse_file_type("Q4_K_X").has_value());
  EXPECT_EQ(parse_file_type("15"), file_type::mostly_q4_k_m);  // general.file_type numbers, as llama-quantize
  EXPECT_EQ(parse_file_type("7"), file_type::mostly_q8_0);
  for (const char* bad : {"999", "-1", "7x", ""}) EXPECT_FALSE(parse_file_type(bad).has_value()) << bad;
  EXPECT_EQ(parse_weight_type("q6_K"), dtype::q6_k);
  EXPECT_FALSE(parse_weight_type("q8_K").has_value());  // activation-only format
  // Q4_0 needs rows of whole blocks of 32 and has no fallback.
  std::vector<tensor_desc> bad = {{"blk.0.attn_q.weight", {48, 64}, dtype::f16}};
  auto r = plan_tensor_types(bad, mix_options{file_type::mostly_q4_0, {}, {}, false}, mix_facts{1, 1});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("blk.0.attn_q.weight"), std::string::npos) << r.message();
  // --output-tensor-type sets a tied model's token embedding (its output matrix) with the mix's
  // rules, with --pure, and with a float target; an explicit --token-embedding-type wins, as in
  // llama-quantize (which applies it last).
  const std::vector<tensor_desc> tied = {{"token_embd.weight", {64, 100}, dtype::bf16},
                                         {"blk.0.attn_q.weight", {64, 64}, dtype::bf16}};
  for (file_type ft : {file_type::mostly_q4_0, file_type::mostly_f16})
    for (bool pure : {false, true}) {
      auto types = plan_tensor_types(tied, mix_options{ft, std::nullopt, dtype::q5_0, pure}, mix_facts{1, 1});
      ASSERT_TRUE(types.is_ok()) << types.message();
      EXPECT_EQ((*types)[0], dtype::q5_0) << int(ft) << " pure " << pure;
      EXPECT_EQ((*types)[1], ft == file_type::mostly_f16 ? dtype::f16 : dtype::q4_0);
      types = plan_tensor_types(tied, mix_options{ft, dtype::q4_1, dtype::q5_0, pure}, mix_facts{1, 1});
      ASSERT_TRUE(types.is_ok()) << types.message();
      EXPECT_EQ((*types)[0], dtype::q4_1) << int(ft) << " pure " << pure;
      // An untied model's token embedding takes --token-embedding-type.
      std::vector<tensor_desc> untied = tied;
      untied.push_back({"output.weight", {64, 100}, dtype::bf16});
      types = plan_tensor_types(untied, mix_options{ft, dtype::q4_1, dtype::q5_0, pure}, mix_facts{1, 1});
      ASSERT_TRUE(types.is_ok()) << types.message();
      EXPECT_EQ((*types)[0], dtype::q4_1);
      EXPECT_EQ((*types)[2], dtype::q5_0);
    }
  // A type asked for by name falls back for rows it cannot hold, as the mix's own choices do and as
  // llama-quantize does (IQ4_XS's 256-element blocks on 192-wide rows: IQ4_NL); Q4_0 has no fallback.
  const std::vector<tensor_desc> narrow = {{"token_embd.weight", {192, 100}, dtype::f32}, {"output.weight", {192, 100}, dtype::f32}};
  auto fell = plan_tensor_types(narrow, mix_options{file_type::mostly_q8_0, dtype::iq4_xs, dtype::q6_k, false}, mix_facts{1, 1});
  ASSERT_TRUE(fell.is_ok()) << fell.message();
  EXPECT_EQ((*fell)[0], dtype::iq4_nl);
  EXPECT_EQ((*fell)[1], dtype::q8_0);
  const std::vector<tensor_desc> odd = {{"output.weight", {48, 100}, dtype::f32}};
  EXPECT_FALSE(plan_tensor_types(odd, mix_options{file_type::mostly_f16, std::nullopt, dtype::q4_0, false}, mix_facts{1, 1}).is_ok());
  // The output must not overwrite the input.
  auto same = quantize_model(test::testdata("models/brown-f32.gguf"), test::testdata("models/brown-f32.gguf"), opts(file_type::mostly_q8_0));
  EXPECT_FALSE(same.is_ok());
}

// brown-f32 with one value of tensor `name` replaced.
std::string brown_with_value(const std::string& file_name, const std::string& name, float v) {
  auto f = open_gguf(test::testdata("models/brown-f32.gguf"));
  gguf::writer w;
  w.copy_metadata(*f);
  for (const auto& t : f->tensors()) {
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    if (t.name == name) std::memcpy(data.data(), &v, sizeof v);
    EXPECT_TRUE(w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), data).is_ok());
  }
  const std::string path = test::scratch(file_name);
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

// What the output cannot hold is refused, not written as inf (a BF16 checkpoint's 1e6 in F16), and a
// tensor copied as it is gets the non-finite check of the converted ones (a NaN in a norm vector).
TEST(quantize, values_the_output_cannot_hold_and_nan_norms_are_refused) {
  const std::string big = brown_with_value("brown-big-value.gguf", "blk.0.ffn_up.weight", 1.0e6f);
  const std::string out = test::scratch("brown-big-value-out.gguf");
  auto r = quantize_model(big, out, opts(file_type::mostly_f16));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("tensor blk.0.ffn_up.weight: row 0 holds values beyond what F16 can store"), std::string::npos)
      << r.message();
  EXPECT_TRUE(quantize_model(big, out, opts(file_type::mostly_q8_0)).is_ok());  // Q8_0's scale holds 1e6 / 127
  EXPECT_TRUE(quantize_model(big, out, opts(file_type::mostly_bf16)).is_ok());
  const std::string nan_norm =
      brown_with_value("brown-nan-norm.gguf", "blk.1.ffn_norm.weight", std::numeric_limits<float>::quiet_NaN());
  r = quantize_model(nan_norm, out, opts(file_type::mostly_q8_0));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("tensor blk.1.ffn_norm.weight: row 0 holds a value that is not finite"), std::string::npos)
      << r.message();
}

// A run that fails (bad data, a full disk) must not cost the user what the output path held: a
// previous model, the symlink itself, or a device node behind a symlink.
TEST(quantize, an_unfinished_output_leaves_the_path_as_it_was) {
  namespace fs = std::filesystem;
  const fs::path dir = test::scratch("unfinished-output");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path keep = dir / "keep.gguf", link = dir / "link.gguf", null_link = dir / "null-link";
  { std::ofstream(keep) << "what was there"; }
  fs::create_symlink(keep, link);
  fs::create_symlink("/dev/null", null_link);
  auto kept = [&] {
    const auto bytes = test::read_file(keep.string());
    return std::string(bytes.begin(), bytes.end());
  };
  const std::vector<planned_tensor> plan = {{"t", {32}, dtype::f32}};
  const std::vector<uint8_t> data(32 * 4, 0);
  auto writer = [&](const fs::path& p) {
    auto w = gguf_stream_writer::create(p.string(), {}, plan);
    EXPECT_TRUE(w.is_ok()) << p << ": " << w.message();
    return w ? std::move(*w) : nullptr;
  };
  for (const fs::path& p : {keep, link, null_link}) {
    auto w = writer(p);
    ASSERT_TRUE(w);
    EXPECT_TRUE(w->write_next(data).is_ok());
    w.reset();  // destroyed before finish(), as when a later tensor fails
    EXPECT_EQ(kept(), "what was there") << p;
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_symlink(null_link));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 3) << "a temporary file was left behind";

  // Finished through the symlink: the symlink stays, its target holds the new file.
  auto w = writer(link);
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->write_next(data).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(gguf::file::open(keep.string()).is_ok());
  // Straight to a device.
  w = writer(null_link);
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->write_next(data).is_ok());
  EXPECT_TRUE(w->finish().is_ok());
  EXPECT_TRUE(fs::is_symlink(null_link));
}

TEST(quantize, cli_writes_the_file_and_reports_bad_types) {
  const std::string out = test::scratch("cli-brown-q8_0.gguf");
  auto r = run_cli("quantize -q " + quote(test::testdata("models/brown-f32.gguf")) + " " + quote(out) + " Q8_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(out), test::read_file(test::testdata("models/brown-q8_0.gguf")));
  r = run_cli("quantize " + quote(test::testdata("models/brown-f32.gguf")) + " " + quote(test::scratch("x.gguf")) + " Q9_9");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown type"), std::string::npos) << r.err;
}

// llama-quantize's command lines run as they are: IN [OUT] TYPE [NTHREADS] (no OUT: ggml-model-TYPE.gguf
// beside the input), --allow-requantize, and --leave-output-tensor, which keeps output.weight (alone)
// in its source type.
TEST(quantize, cli_takes_llama_quantize_command_lines) {
  const std::string src = test::testdata("models/llama-untied-F16.gguf"), out = test::scratch("cli-leave-output.gguf");
  auto r = run_cli("quantize -q --allow-requantize --leave-output-tensor " + quote(src) + " " + quote(out) + " Q4_K_M 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = open_gguf(out);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->find_tensor("output.weight")->type, open_gguf(src)->find_tensor("output.weight")->type);
  EXPECT_NE(f->find_tensor("blk.0.ffn_gate.weight")->type, open_gguf(src)->find_tensor("blk.0.ffn_gate.weight")->type);

  const std::string dir = test::scratch("quantize-default-name");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(src, dir + "/in.gguf", std::filesystem::copy_options::overwrite_existing);
  auto unnamed = run_cli("quantize -q " + quote(dir + "/in.gguf") + " Q8_0 1");
  ASSERT_EQ(unnamed.exit_code, 0) << unnamed.err;
  auto q8 = open_gguf(dir + "/ggml-model-Q8_0.gguf");
  ASSERT_TRUE(q8);
  EXPECT_EQ(q8->find_tensor("blk.0.ffn_gate.weight")->type, uint32_t(dtype::q8_0));

  auto both = run_cli("quantize -q " + quote(src) + " " + quote(test::scratch("x2.gguf")) + " Q4_K_M 2 -t 2");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("threads given twice"), std::string::npos) << both.err;
  auto extra = run_cli("quantize -q " + quote(src) + " " + quote(test::scratch("x3.gguf")) + " Q4_K_M 2 3");
  EXPECT_NE(extra.exit_code, 0);
  EXPECT_NE(extra.err.find("'3': expected INPUT [OUTPUT] TYPE [NTHREADS]"), std::string::npos) << extra.err;
}

}  // namespace
}  // namespace glia
