// Drives the glia binary as a user would and checks what it prints and writes against the pack's
// goldens (llama.cpp's greedy continuations and logits).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "cli_runner.h"
#include "test_support.h"

namespace glia {
namespace {

using run_result = test::cli_result;
using test::quote;
using test::run_cli;

nlohmann::json manifest(const std::string& stem) {
  std::ifstream in(test::testdata("golden/" + stem + ".json"));
  return nlohmann::json::parse(in);
}

TEST(cli, run_greedy_prints_the_golden_continuation) {
  const auto m = manifest("brown-f32");
  for (const auto& item : m["greedy_continuations"]["items"]) {
    if (item["prompt_text"].is_null()) continue;
    const std::string prompt = item["prompt_text"];
    const std::string want = item["continuation_text"];
    run_result r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p " + quote(prompt) +
                           " -n 32 --temp 0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, want + "\n") << prompt;
    EXPECT_NE(r.err.find("generated: 32 tokens"), std::string::npos) << r.err;
  }
}

// Standard output on a full disk or closed: an error and a failing status, as for named output files
// (stdio reports it only at the final flush, after the command has returned 0).
TEST(cli, a_failed_write_to_stdout_fails_the_command) {
  struct stat full {};
  if (stat("/dev/full", &full) != 0 || !S_ISCHR(full.st_mode)) GTEST_SKIP() << "no /dev/full here";
  const std::string model = quote(test::testdata("models/brown-q8_0.gguf"));
  for (const std::string& cmd : {"tokenize -m " + model + " -p 'The jury said' > /dev/full", "run -m " + model + " -p 'It was' -n 8 > /dev/full",
                                 "bench -m " + model + " -p 4 -n 0 -r 1 -t 1 --bandwidth-mib 16 --json > /dev/full",
                                 // More than stdio's buffer at once: fmt reports it by throwing.
                                 "tokenize -m " + model + " -p \"$(printf 'the jury %.0s' $(seq 2000))\" > /dev/full",
                                 // And standard error full too: still a status, not an abort.
                                 "tokenize -m " + model + " -p 'The jury said' > /dev/full 2>&1"}) {
    run_result r = run_cli(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.err;
    if (cmd.ends_with("2>&1")) continue;
    EXPECT_NE(r.err.find("error: writing the standard output failed"), std::string::npos) << cmd << "\n" << r.err;
  }
  // `run` stops at the first failed write instead of generating to -n.
  run_result long_run = run_cli("run -m " + model + " -p 'It was' -n 200 -c 256 > /dev/full");
  EXPECT_EQ(long_run.exit_code, 1) << long_run.err;
  EXPECT_NE(long_run.err.find("generated: 1 tokens"), std::string::npos) << long_run.err;
  run_result closed = run_cli("tokenize -m " + model + " -p 'The jury said' 1</dev/null");  // read-only: EBADF
  EXPECT_EQ(closed.exit_code, 1) << closed.err;
  EXPECT_NE(closed.err.find("error: writing the standard output failed"), std::string::npos) << closed.err;
}

// --ignore-eos as llama.cpp's: the end-of-text token (2 here), even biased to the top, is never
// sampled, so the run generates -n tokens.
TEST(cli, run_ignore_eos_generates_n_tokens) {
  const std::string args = "run -m " + quote(test::testdata("models/brown-q8_0.gguf")) + " -p 'It was' -n 12 --temp 0 -l 2+100";
  run_result ends = run_cli(args);
  ASSERT_EQ(ends.exit_code, 0) << ends.err;
  EXPECT_NE(ends.err.find("generated: 0 tokens"), std::string::npos) << ends.err;
  run_result runs = run_cli(args + " --ignore-eos");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.err.find("generated: 12 tokens"), std::string::npos) << runs.err;
}

// Constrained output as llama.cpp's flags give it: the text printed is in the grammar or valid JSON
// under the schema (from the option or a file, llama.cpp's -jf too); what does not compile is refused
// at start with the option's name.
TEST(cli, run_constrained_by_grammar_or_json_schema) {
  const std::string base = "run -m " + quote(test::testdata("models/brown-q8_0.gguf")) + " -p 'The jury said' -n 100 --temp 0.8 -s 3";
  run_result words = run_cli(base + " --grammar " + quote(R"(root ::= " the " [a-z]{1,10} (" " [a-z]{1,10}){1,4} ".")"));
  ASSERT_EQ(words.exit_code, 0) << words.err;
  EXPECT_TRUE(std::regex_match(words.out, std::regex(" the [a-z]{1,10}( [a-z]{1,10}){1,4}\\.\n"))) << words.out;
  const std::string schema = R"({"type": "object", "properties": {"said": {"type": "string", "maxLength": 30}, "votes": {"type": "integer", "minimum": 0, "maximum": 12}}, "required": ["said", "votes"]})";
  const std::string schema_file = test::scratch("cli_schema.json");
  {
    std::ofstream f(schema_file);
    f << schema;
  }
  for (const std::string& opt : {"-j " + quote(schema), "--json-schema-file " + quote(schema_file), "-jf " + quote(schema_file)}) {
    run_result r = run_cli(base + " " + opt);
    ASSERT_EQ(r.exit_code, 0) << opt << "\n" << r.err;
    ASSERT_FALSE(r.out.empty());
    const auto j = nlohmann::json::parse(r.out.substr(0, r.out.size() - 1), nullptr, false);
    ASSERT_TRUE(j.is_object()) << opt << "\n" << r.out;
    EXPECT_TRUE(j["said"].is_string()) << r.out;
    ASSERT_TRUE(j["votes"].is_number_integer()) << r.out;
    EXPECT_LE(j["votes"].get<int>(), 12);
  }
  run_result bad = run_cli(base + " --grammar " + quote("root ::= word"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--grammar: grammar: rule 'word' is used (line 1) but never defined"), std::string::npos) << bad.err;
  run_result two = run_cli(base + " --grammar " + quote("root ::= \"a\"") + " -j '{}'");
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_NE(two.err.find("give one of them"), std::string::npos) << two.err;
  run_result unsupported = run_cli(base + " -j " + quote(R"({"type": "array", "uniqueItems": true})"));
  EXPECT_EQ(unsupported.exit_code, 1);
  EXPECT_NE(unsupported.err.find("uniqueItems"), std::string::npos) << unsupported.err;
  run_result missing = run_cli(base + " --grammar-file /nonexistent/g.gbnf");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--grammar-file: "), std::string::npos) << missing.err;
}

// glia grammar: the GBNF a schema becomes (which then parses), and a validator's verdicts.
TEST(cli, grammar_prints_and_checks) {
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})";
  run_result printed = run_cli("grammar -j " + quote(schema));
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_NE(printed.out.find("root ::= "), std::string::npos) << printed.out;
  const std::string gbnf_file = test::scratch("cli_schema.gbnf");
  {
    std::ofstream f(gbnf_file);
    f << printed.out;
  }
  for (const std::string& source : {"-j " + quote(schema), "--grammar-file " + quote(gbnf_file)}) {
    run_result ok = run_cli("grammar " + source + " --check " + quote(R"({"a": 12})"));
    EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
    EXPECT_EQ(ok.out, "the text is in the grammar (9 bytes)\n");
    run_result leaves = run_cli("grammar " + source + " --check " + quote("{\"a\": 1x}"));
    EXPECT_EQ(leaves.exit_code, 1);
    EXPECT_EQ(leaves.out, "the text leaves the grammar at byte 7 (line 1, column 8): 'x}'\n");
    run_result partial = run_cli("grammar " + source + " --check " + quote("{\"a\": 1"));
    EXPECT_EQ(partial.exit_code, 1);
    EXPECT_NE(partial.out.find("the text is incomplete"), std::string::npos) << partial.out;
  }
  run_result regex = run_cli("grammar --regex " + quote("[a-z]+@[a-z]+\\.com") + " --check " + quote("ab@cd.com"));
  EXPECT_EQ(regex.exit_code, 0) << regex.out << regex.err;
  run_result bad_utf8 = run_cli("grammar --grammar " + quote("root ::= [^x]*") + " --check \"$(printf 'ab\\303(')\"");
  EXPECT_EQ(bad_utf8.exit_code, 1);
  EXPECT_EQ(bad_utf8.out, "the text is not valid UTF-8 at byte 2 (line 1, column 3)\n");
  run_result none = run_cli("grammar --check x");
  EXPECT_NE(none.exit_code, 0);
  run_result broken = run_cli("grammar --grammar " + quote("root ::= (\"a\""));
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("expected ')' to close the group"), std::string::npos) << broken.err;
}

TEST(cli, run_same_seed_same_text) {
  const std::string args = "run -m " + quote(test::testdata("models/brown-q8_0.gguf")) + " -p 'It was' -n 24 --temp 0.9 -s 1234";
  run_result a = run_cli(args), b = run_cli(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_GT(a.out.size(), 10u);
}

// The seed printed for a random run gives that run back with -s (it can be any 64-bit value), and
// a seed out of range is refused rather than clamped.
TEST(cli, run_printed_seed_gives_the_run_back) {
  const std::string args = "run -m " + quote(test::testdata("models/brown-q8_0.gguf")) + " -p 'It was' -n 16 --temp 1.5";
  const std::regex seed_line(R"(seed: (\d+))");
  for (int i = 0; i < 4; ++i) {  // about half of all random seeds are >= 2^63
    run_result a = run_cli(args);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(a.err, m, seed_line)) << a.err;
    run_result b = run_cli(args + " -s " + m[1].str());
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(a.out, b.out) << "seed " << m[1];
  }
  run_result top = run_cli(args + " -s 18446744073709551615"), below = run_cli(args + " -s 9223372036854775807");
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_EQ(top.err.find("seed:"), std::string::npos) << top.err;
  EXPECT_NE(top.out, below.out);  // clamped to 2^63 - 1, both were the same run
  EXPECT_EQ(run_cli(args + " -s -1").exit_code, 0);
  // llama.cpp's LLAMA_DEFAULT_SEED means "random" there, and here.
  run_result llama_default = run_cli(args + " -s 4294967295");
  ASSERT_EQ(llama_default.exit_code, 0) << llama_default.err;
  EXPECT_NE(llama_default.err.find("seed:"), std::string::npos) << llama_default.err;
  for (const char* bad : {"18446744073709551616", "-2", "12abc"}) {
    run_result r = run_cli(args + " -s " + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--seed"), std::string::npos) << r.err;
  }
}

// What llama.cpp users type: -n -2 (until the context is full) runs; an empty --stop, which would
// stop nowhere, and a --dump-dir that cannot be a folder are refused before anything is generated.
TEST(cli, run_options_as_llama_cpp_users_type_them) {
  const std::string args = "run -m " + quote(test::testdata("models/brown-q8_0.gguf")) + " -p 'It was' -c 32";
  run_result full = run_cli(args + " -n -2 --ignore-eos");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_NE(full.err.find("context full"), std::string::npos) << full.err;
  run_result empty_stop = run_cli(args + " -n 4 --stop ''");
  EXPECT_NE(empty_stop.exit_code, 0);
  EXPECT_NE(empty_stop.err.find("must not be empty"), std::string::npos) << empty_stop.err;
  const std::string file = test::scratch("not_a_folder");
  test::write_text(file, "x");
  run_result bad_dir = run_cli(args + " -n 4 --dump-tensors logits --dump-dir " + quote(file));
  EXPECT_EQ(bad_dir.exit_code, 1);
  EXPECT_EQ(bad_dir.out, "");  // said before the run, not after it
  EXPECT_NE(bad_dir.err.find("--dump-dir"), std::string::npos) << bad_dir.err;
}

// glia embed: one unit vector per text; the first token's state (cls) is the same for texts that
// start with BOS (causal attention: it sees only itself), the mean and the last token's are not.
TEST(cli, embed_pools_and_normalizes) {
  const std::string args = "embed -m " + quote(test::testdata("models/brown-q8_0.gguf")) + " -p 'The jury said' -p 'It was' --json";
  auto vectors = [&](const std::string& extra) {
    run_result r = run_cli(args + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).get<std::vector<std::vector<double>>>();
  };
  auto norm = [](const std::vector<double>& v) {
    double n = 0;
    for (double x : v) n += x * x;
    return std::sqrt(n);
  };
  const auto last = vectors(" --pooling last"), mean = vectors(" --pooling mean"), cls = vectors(" --pooling cls");
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0].size(), 192u);
  for (const auto& v : {last[0], last[1], mean[0], cls[0]}) EXPECT_NEAR(norm(v), 1.0, 1e-5);
  EXPECT_NE(last[0], last[1]);
  EXPECT_NE(last[0], mean[0]);
  EXPECT_EQ(cls[0], cls[1]);
  EXPECT_GT(std::abs(norm(vectors(" --no-normalize")[0]) - 1.0), 1e-3);
  EXPECT_NE(run_cli("embed -m " + quote(test::testdata("models/brown-q8_0.gguf"))).exit_code, 0);  // no text
}

// As llama-embedding: a prompt's lines (--embd-separator) are texts apart, escapes read; -f reads them
// from a file (one trailing newline dropped); an empty text is its BOS.
TEST(cli, embed_splits_prompts_and_files) {
  const std::string model = "embed --json -m " + quote(test::testdata("models/brown-q8_0.gguf"));
  auto run = [&](const std::string& extra) {
    run_result r = run_cli(model + extra);
    EXPECT_EQ(r.exit_code, 0) << extra << ": " << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  };
  const nlohmann::json apart = run(" -p 'The jury said' -p 'It was'");
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_EQ(run(" -p 'The jury said\\nIt was'"), apart);
  EXPECT_EQ(run(" -p 'The jury said|It was' --embd-separator '|'"), apart);
  const std::string file = test::scratch("embed_texts.txt");
  test::write_text(file, "The jury said\nIt was\n");
  EXPECT_EQ(run(" -f " + quote(file)), apart);
  EXPECT_EQ(run(" -p ''").size(), 1u);
  EXPECT_NE(run_cli(model + " -p x -f " + quote(file)).exit_code, 0);  // one or the other
}

int prompt_tokens(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex(R"(prompt: (\d+) tokens)")) ? std::stoi(m[1]) : -1;
}

// As in llama-cli, special-token text in a prompt is the token (what `tokenize --parse-special`
// gives), unless --no-parse-special.
TEST(cli, run_reads_special_tokens_in_the_prompt) {
  const std::string model = quote(test::testdata("models/brown-f32.gguf"));
  const std::string text = quote("The jury said</s><s>The man");
  auto ids = [&](const std::string& flags) {
    run_result r = run_cli("tokenize -m " + model + " -p " + text + " --ids-only " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return int(std::count(r.out.begin(), r.out.end(), ' ')) + 1;
  };
  run_result special = run_cli("run -m " + model + " -p " + text + " -n 1 --temp 0");
  run_result plain = run_cli("run -m " + model + " -p " + text + " -n 1 --temp 0 --no-parse-special");
  ASSERT_EQ(special.exit_code, 0) << special.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(prompt_tokens(special.err), ids("--parse-special"));
  EXPECT_EQ(prompt_tokens(plain.err), ids(""));
  EXPECT_LT(prompt_tokens(special.err), prompt_tokens(plain.err));
}

// As llama.cpp: a context past the model's training context is allowed, with a warning.
TEST(cli, a_context_past_training_is_a_warning) {
  const std::string model = quote(test::testdata("models/stories260K.gguf"));  // trained with 128
  run_result r = run_cli("logits -m " + model + " --ids 1,2 -c 256 --out " + quote(test::scratch("ctx.f32")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: a context of 256 tokens is longer than the 128"), std::string::npos) << r.err;
  r = run_cli("logits -m " + model + " --ids 1,2 -c 128 --out " + quote(test::scratch("ctx.f32")));
  EXPECT_EQ(r.err.find("warning:"), std::string::npos) << r.err;
}

TEST(cli, run_says_when_the_context_cut_generation_short) {
  run_result r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p 'The jury said' -n 50 -c 16 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("context full: stopped after"), std::string::npos) << r.err;
  r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p 'The jury said' -n 4 -c 16 --temp 0");
  EXPECT_EQ(r.err.find("context full"), std::string::npos) << r.err;
}

// A chat template that does not parse, or a folder given as one, is refused when chat or serve
// starts (llama-server does the same), with one line and exit code 1; not on every request, and
// never as a crash.
TEST(cli, a_broken_chat_template_is_refused_at_start) {
  const std::string bad = test::scratch("broken.jinja");
  std::ofstream(bad) << "{% for m in messages %}{{ m.content }";
  const std::string model = test::testdata("models/brown-f32.gguf");
  for (const std::string& tmpl : {bad, test::scratch("")}) {
    const test::cli_result chat = test::run_glia({"chat", "-m", model, "--chat-template", tmpl}, std::string("hi\n"));
    EXPECT_EQ(chat.exit_code, 1) << chat.err;
    EXPECT_NE(chat.err.find("error: --chat-template '" + tmpl + "'"), std::string::npos) << chat.err;
    const test::cli_result serve = test::run_glia({"serve", "-m", model, "--port", "0", "--chat-template", tmpl});
    EXPECT_EQ(serve.exit_code, 1) << serve.err;
    EXPECT_NE(serve.err.find("error: --chat-template '" + tmpl + "'"), std::string::npos) << serve.err;
  }
}

TEST(cli, logits_match_the_golden_rows) {
  const auto m = manifest("qwen3-F16");
  const auto& prompt = m["prompts"][0];
  std::string ids;
  for (const auto& id : prompt["ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  const int64_t n_vocab = m["n_vocab"];
  auto golden = test::read_file(test::testdata(m["logits_file"]));
  for (const char* mode : {"", " --one-by-one"}) {
    const std::string out = test::scratch("cli_logits.f32");
    run_result r = run_cli("logits -m " + quote(test::testdata("models/qwen3-F16.gguf")) + " --ids " + ids +
                           " --kv-type f32 --out " + quote(out) + mode);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto ours = test::read_file(out);
    ASSERT_EQ(ours.size(), prompt["ids"].size() * size_t(n_vocab) * 4);
    const float* o = reinterpret_cast<const float*>(ours.data());
    const float* g = reinterpret_cast<const float*>(golden.data()) + prompt["row_offset"].get<int64_t>() * n_vocab;
    float max_abs = 0;
    for (size_t i = 0; i < prompt["ids"].size() * size_t(n_vocab); ++i) max_abs = std::max(max_abs, std::fabs(o[i] - g[i]));
    EXPECT_LE(max_abs, 0.03f) << mode;
  }
}

TEST(cli, logits_refuses_ids_outside_the_vocabulary) {
  run_result r = run_cli("logits -m " + quote(test::testdata("models/stories260K.gguf")) + " --ids 1,512 --out " +
                         quote(test::scratch("x.f32")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("token id 512"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("outside the vocabulary"), std::string::npos) << r.err;
}

// --backend cuda where no GPU (or no CUDA build) is: refused with the reason, nothing generated;
// the default (auto) falls back to the CPU.
TEST(cli, cuda_backend_without_a_device_is_refused_with_the_reason) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const std::string model = quote(test::testdata("models/brown-q8_0.gguf"));
  run_result r = run_cli("run -m " + model + " -p hello -n 4 --temp 0 --backend cuda");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("CUDA backend requested"), std::string::npos) << r.err;
  run_result fallback = run_cli("run -m " + model + " -p hello -n 4 --temp 0");
  EXPECT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_FALSE(fallback.out.empty());
}

TEST(cli, logits_refuses_more_ids_than_the_context) {
  run_result r = run_cli("logits -m " + quote(test::testdata("models/stories260K.gguf")) + " -c 4 --ids 1,2,3,4,5 --out " +
                         quote(test::scratch("x.f32")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("do not fit the context of 4"), std::string::npos) << r.err;
}

TEST(cli, logits_refuses_garbage_ids) {
  run_result r = run_cli("logits -m " + quote(test::testdata("models/stories260K.gguf")) + " --ids 1,x --out " +
                         quote(test::scratch("x.f32")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'x' is not a token id"), std::string::npos) << r.err;
}

// logits and detokenize read --ids alike: what `tokenize --ids-only` or llama-tokenize print pastes
// back ("1 2 3", "[1, 2, 3]"), and an empty or trailing item is refused by both.
TEST(cli, ids_are_read_alike_by_logits_and_detokenize) {
  const std::string model = quote(test::testdata("models/brown-f32.gguf"));
  const std::string out = quote(test::scratch("ids.f32"));
  for (const char* ids : {"5,6,7", "5 6 7", "[5, 6, 7]", " 5 ,6, 7 "}) {
    run_result l = run_cli("logits -m " + model + " --ids '" + ids + "' --out " + out);
    EXPECT_EQ(l.exit_code, 0) << ids << ": " << l.err;
    EXPECT_NE(l.err.find("wrote 3 x"), std::string::npos) << l.err;
    run_result d = run_cli("detokenize -m " + model + " --ids '" + ids + "'");
    EXPECT_EQ(d.exit_code, 0) << ids << ": " << d.err;
  }
  // From a file, for contexts longer than one command-line argument holds.
  const std::string file = test::scratch("ids.txt");
  std::ofstream(file) << "[5, 6,\n 7]\n";
  run_result from_file = run_cli("logits -m " + model + " --ids @" + quote(file) + " --out " + out);
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_NE(from_file.err.find("wrote 3 x"), std::string::npos) << from_file.err;
  run_result missing = run_cli("detokenize -m " + model + " --ids @" + quote(file + ".missing"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("cannot read the file"), std::string::npos) << missing.err;
  for (const char* bad : {"5,,6", "5,", "5;6", "99999999999"}) {
    for (const std::string& cmd : {"logits --out " + out, std::string("detokenize")}) {
      run_result r = run_cli(cmd + " -m " + model + " --ids '" + bad + "'");
      EXPECT_NE(r.exit_code, 0) << cmd << " " << bad;
      EXPECT_NE(r.err.find("--ids"), std::string::npos) << r.err;
    }
  }
}

TEST(cli, info_describes_the_model) {
  run_result r = run_cli("info -m " + quote(test::testdata("models/gemma3-F16.gguf")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("architecture:    gemma3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sliding attention (window 8)"), std::string::npos) << r.out;
  // Runs of layers that read alike share a line (the pack's gemma3: five sliding, then one full).
  EXPECT_NE(r.out.find("layers 0-4:      heads 4/2 kv"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layer 5:         heads 4/2 kv, head dim 32/32, full attention"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("F16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory:"), std::string::npos) << r.out;
}

// The file's general.name is shown with its control bytes escaped: a terminal's escape sequences in a
// downloaded model must not reach the terminal.
TEST(cli, info_escapes_the_models_name) {
  const std::string path = test::scratch("brown-escape-" + std::to_string(::getpid()) + ".gguf");
  auto f = gguf::file::open(test::testdata("models/brown-q8_0.gguf"));
  ASSERT_TRUE(f.is_ok());
  gguf::writer w;
  w.copy_metadata(**f);
  ASSERT_TRUE(w.copy_tensors(**f).is_ok());
  w.set_string("general.name", "brown\x1b[31mRED\x07");
  ASSERT_TRUE(w.write(path).is_ok());
  run_result r = run_cli("info -m " + quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("architecture:    llama (brown"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[31mRED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
}

TEST(cli, bad_model_file_is_a_clear_error) {
  const std::string bad = test::scratch("not_a_model.gguf");
  std::ofstream(bad) << "this is not a gguf file at all";
  run_result r = run_cli("run -m " + quote(bad) + " -p hi -n 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("magic"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

TEST(cli_diagnostics, stop_string_ends_generation_and_is_never_printed) {
  // The golden greedy continuation of "The jury said" is " the same time he was a few moment. Then
  // he was a few moment, ..."; "moment" first appears after "few ".
  const std::string model = quote(test::testdata("models/brown-f32.gguf"));
  run_result r = run_cli("run -m " + model + " -p 'The jury said' -n 32 --temp 0 --stop 'moment'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, " the same time he was a few \n");
  // A stop string that spans several tokens ("was a few") is held back until it is complete.
  r = run_cli("run -m " + model + " -p 'The jury said' -n 32 --temp 0 --stop 'was a few'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, " the same time he \n");
}

// -n -1 (llama.cpp's "no limit"): generation runs until the model ends its text or the context is
// full, past the default -n of 128.
TEST(cli, n_predict_minus_1_runs_until_the_context_is_full) {
  run_result r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p 'The jury said' -n -1 -c 200 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("context full: stopped after 195 generated tokens"), std::string::npos) << r.err;
  EXPECT_NE(run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p x -n -3").exit_code, 0);
}

TEST(cli_diagnostics, profile_percentages_sum_to_100_and_trace_is_chrome_json) {
  const std::string trace = test::scratch("trace_" + std::to_string(::getpid()) + ".json");
  const std::string prof = test::scratch("profile_" + std::to_string(::getpid()) + ".json");
  run_result r = run_cli("run -m " + quote(test::testdata("models/gemma2-F16.gguf")) + " -p 'Once upon a time' -n 8 --temp 0 --profile --trace " +
                         quote(trace) + " --profile-json " + quote(prof));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* op : {"attention", "qkv_proj", "ffn", "lm_head", "rope", "kv_append", "embedding", "post_norm"})
    EXPECT_NE(r.err.find(op), std::string::npos) << op << "\n" << r.err;
  auto p = nlohmann::json::parse(test::read_text(prof));
  double sum = 0, phase_sum[2] = {0, 0};
  for (const auto& op : p["ops"]) {
    sum += op["percent"].get<double>();
    // Each op's time is split between the phases, and each phase's column adds up to its forwards.
    const double pre = op["prefill_ms"].get<double>(), dec = op["decode_ms"].get<double>();
    EXPECT_NEAR(pre + dec, op["ms"].get<double>(), 1e-6 + 1e-9 * op["ms"].get<double>()) << op.dump();
    phase_sum[0] += pre;
    phase_sum[1] += dec;
  }
  EXPECT_NEAR(sum, 100.0, 0.01);
  EXPECT_NEAR(phase_sum[0], p["prefill"]["ms"].get<double>(), 1e-6 * p["total_ms"].get<double>());
  EXPECT_NEAR(phase_sum[1], p["decode"]["ms"].get<double>(), 1e-6 * p["total_ms"].get<double>());
  EXPECT_GT(phase_sum[1], 0.0);
  EXPECT_NE(r.err.find("decode us/tok"), std::string::npos) << r.err;
  EXPECT_EQ(p["decode"]["tokens"].get<int>(), 7);
  EXPECT_GT(p["prefill"]["tokens_per_second"].get<double>(), 0.0);
  auto t = nlohmann::json::parse(test::read_text(trace));
  ASSERT_TRUE(t["traceEvents"].is_array());
  ASSERT_FALSE(t["traceEvents"].empty());
  for (const auto& e : t["traceEvents"]) {
    EXPECT_EQ(e["ph"], "X");
    EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e["name"].is_string());
  }
}

// An output path that cannot be written is refused before the run, not after a long generation.
TEST(cli_diagnostics, unwritable_profile_paths_are_refused_up_front) {
  for (const char* flag : {"--profile-json", "--trace"}) {
    run_result r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p 'The jury' -n 4 " + flag + " " +
                           quote(test::scratch("no-such-folder/p.json")));
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("generated:"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(cli_diagnostics, dump_tensors_writes_raw_floats_and_an_index) {
  const std::string dir = test::scratch("dump_" + std::to_string(::getpid()));
  run_result r = run_cli("logits -m " + quote(test::testdata("models/qwen3-F16.gguf")) + " --ids 1,2,3,4,5,6 --kv-type f32 --out " +
                         quote(dir + ".f32") + " --dump-tensors 'blk.1.attn_norm,logits' --dump-dir " + quote(dir) + " --dump-positions 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto index = nlohmann::json::parse(test::read_text(dir + "/index.json"));
  ASSERT_EQ(index.size(), 2u) << index.dump();
  for (const auto& e : index) {
    const auto shape = e["shape"].get<std::vector<int64_t>>();
    EXPECT_EQ(shape[0], 4);
    EXPECT_EQ(test::read_file(dir + "/" + e["file"].get<std::string>()).size(), size_t(shape[0] * shape[1] * 4));
  }
  // The dumped logits are the first 4 rows of what `logits` wrote.
  auto all = test::read_file(dir + ".f32");
  auto dumped = test::read_file(dir + "/logits.f32");
  ASSERT_LE(dumped.size(), all.size());
  EXPECT_TRUE(std::equal(dumped.begin(), dumped.end(), all.begin()));
  EXPECT_NE(r.err.find("blk.1.attn_norm"), std::string::npos) << r.err;
  // A pattern that matches nothing (a wrong case, a typo) says so and lists the names there are.
  r = run_cli("logits -m " + quote(test::testdata("models/qwen3-F16.gguf")) + " --ids 1,2 --out " + quote(dir + ".f32") +
              " --dump-tensors 'BLK.0.*' --dump-dir " + quote(dir + "-none"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no tensor name matched; this model's are "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("blk.0.attn_norm"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("logits"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace glia

namespace glia {
namespace {

TEST(cli_loading, reports_how_the_model_was_loaded_and_resident_memory) {
  const std::string model = quote(test::testdata("models/brown-q8_0.gguf"));
  run_result mapped = run_cli("run -m " + model + " -p 'The jury' -n 2 --temp 0");
  ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
  EXPECT_NE(mapped.err.find("MiB, mapped)"), std::string::npos) << mapped.err;
  EXPECT_NE(mapped.err.find("resident memory"), std::string::npos) << mapped.err;
  run_result read = run_cli("run -m " + model + " -p 'The jury' -n 2 --temp 0 --no-mmap");
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_NE(read.err.find("read into memory"), std::string::npos) << read.err;
  EXPECT_EQ(mapped.out, read.out);  // same weights, same text
}

}  // namespace
}  // namespace glia
