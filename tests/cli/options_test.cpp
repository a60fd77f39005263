// How the command line is read, as a llama.cpp user types it: numbers in decimal (zero-padded
// ones too), an option given twice takes its last value, llama.cpp's multi-letter flags are
// translated only where an option goes (never in the value of -p or --stop).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "cli_runner.h"
#include "test_support.h"

namespace glia {
namespace {

using test::quote;
using test::run_cli;

std::string brown() { return quote(test::testdata("models/brown-q8_0.gguf")); }

int generated(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex(R"(generated: (\d+) tokens)")) ? std::stoi(m[1]) : -1;
}

std::string ids(const std::string& prompt) {
  auto r = run_cli("tokenize -m " + brown() + " --ids-only -p " + quote(prompt));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(cli_options, integers_are_decimal) {
  const std::string run = "run -m " + brown() + " -p 'The jury' --temp 0 -n ";
  auto padded = run_cli(run + "010");
  ASSERT_EQ(padded.exit_code, 0) << padded.err;
  EXPECT_EQ(generated(padded.err), 10);  // not octal 8
  auto eight = run_cli(run + "08");
  ASSERT_EQ(eight.exit_code, 0) << eight.err;
  EXPECT_EQ(generated(eight.err), 8);
  EXPECT_EQ(generated(run_cli(run + "+3").err), 3);
  for (const char* bad : {"0x10", "''", "1e2", "-", "12abc"}) {
    auto r = run_cli(run + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--n-predict"), std::string::npos) << bad << ": " << r.err;
    if (std::string(bad) == "0x10") EXPECT_NE(r.err.find("'0x10' is not a decimal integer"), std::string::npos) << r.err;
  }
  // An unsigned option refuses a sign (strtoull would wrap -1 around), a real one a hex float.
  auto body = run_cli("serve -m " + brown() + " --max-body -1");
  EXPECT_NE(body.exit_code, 0);
  EXPECT_NE(body.err.find("'-1' is not a decimal count"), std::string::npos) << body.err;
  auto hex_temp = run_cli("run -m " + brown() + " -p x -n 1 --temp 0x1p-1");
  EXPECT_NE(hex_temp.exit_code, 0);
  EXPECT_NE(hex_temp.err.find("'0x1p-1' is not a decimal number"), std::string::npos) << hex_temp.err;
}

// An empty value (an unset shell variable) is refused rather than read as 0 (greedy, top-p 0).
TEST(cli_options, an_empty_number_is_refused) {
  for (const char* opt : {"--temp", "--top-p", "--top-k", "-c"}) {
    auto r = run_cli("run -m " + brown() + " -p x -n 2 " + opt + " ''");
    EXPECT_NE(r.exit_code, 0) << opt;
    EXPECT_NE(r.err.find("a number is required"), std::string::npos) << opt << ": " << r.err;
  }
}

TEST(cli_options, the_last_of_a_repeated_option_wins) {
  auto r = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n 30 -n 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(generated(r.err), 3);
  // Options that collect keep every value: both biases apply (llama.cpp adds them; a ban stays).
  auto banned = run_cli("run -m " + brown() + " -p 'It was' --temp 0 -n 4 -l 2+100 -l 2-inf");
  ASSERT_EQ(banned.exit_code, 0) << banned.err;
  EXPECT_EQ(generated(banned.err), 4);
  auto summed = run_cli("run -m " + brown() + " -p 'It was' --temp 0 -n 4 -l 2+60 -l 2+60");
  ASSERT_EQ(summed.exit_code, 0) << summed.err;
  EXPECT_EQ(generated(summed.err), 0);  // +120 on the end-of-text token: it ends at once
}

// Forward chunks of a 7-token prompt through the Brown model's 6 layers, from --profile's ffn calls.
int ffn_calls(const std::string& chunk_flags) {
  auto r = run_cli("run -m " + brown() + " -p 'The jury said the' -n 1 --profile " + chunk_flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  return std::regex_search(r.err, m, std::regex(R"(\nffn +[0-9.]+ +[0-9.]+% +(\d+))")) ? std::stoi(m[1]) : -1;
}

// -b is glia's chunk; llama.cpp's -b (logical batch) with -ub (the chunk) chunks by the smaller, in
// either order, as llama.cpp clamps n_ubatch to n_batch.
TEST(cli_options, batch_and_ubatch_chunk_by_the_smaller) {
  EXPECT_EQ(ffn_calls(""), 6);  // one chunk
  EXPECT_EQ(ffn_calls("-b 1"), 42);
  EXPECT_EQ(ffn_calls("-ub 5"), 12);
  EXPECT_EQ(ffn_calls("-ub 5 -b 2048"), 12);
  EXPECT_EQ(ffn_calls("-b 2048 -ub 5"), 12);
  EXPECT_EQ(ffn_calls("-b 3 -b 6"), 12);  // the last -b
}

// "-md" as the text of -p is text; in an option's place it is --model-draft, and -ngl is refused
// with what to do instead, in its long forms too.
TEST(cli_options, llama_cpp_flags_only_where_an_option_goes) {
  EXPECT_NE(ids("-md"), ids("--model-draft"));
  EXPECT_NE(ids("-sys"), ids("--system"));
  auto fa = run_cli("tokenize -m " + brown() + " --ids-only -p -fa");
  EXPECT_EQ(fa.exit_code, 0) << fa.err;
  auto stop = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n 3 --stop -ngl");
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  for (const char* flag : {"-ngl 99", "--n-gpu-layers 99", "--n-gpu-layers=99", "--flash-attn", "-ctk q8_0"}) {
    auto r = run_cli("run -m " + brown() + " -p x " + flag);
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_NE(r.err.find("is llama.cpp's option, not glia's"), std::string::npos) << flag << ": " << r.err;
  }
  // llama-bench's -ub, which bench spells --ub: translated to a name bench knows.
  auto ub = run_cli("bench -m " + brown() + " -ub 4 -p 8 -n 0 -r 1 -t 1 --bandwidth-mib 16 --json");
  EXPECT_EQ(ub.exit_code, 0) << ub.err;
  EXPECT_NE(ub.out.find("\"n_ubatch\": 4"), std::string::npos) << ub.out;
}

// What glia always does (-no-cnv, -cb) is dropped; llama.cpp's multi-letter flags glia has no option
// for are refused by their own name (CLI11 would have read "-nkvo" as -n with "kvo" and blamed -n),
// an unknown one too; a value attached to a one-letter option ("-n3") still reaches it. llama-bench's
// -pg is bench's --pg.
TEST(cli_options, llama_cpp_multi_letter_flags_are_named) {
  auto plain = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n 3");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const char* dropped : {"-no-cnv", "-cb", "--no-conversation"}) {
    auto r = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n 3 " + std::string(dropped));
    EXPECT_EQ(r.exit_code, 0) << dropped << ": " << r.err;
    EXPECT_EQ(r.out, plain.out) << dropped;
  }
  auto attached = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n3");
  EXPECT_EQ(attached.out, plain.out) << attached.err;
  for (const char* flag : {"-nkvo", "-mmp 0", "-ts 1", "-st", "-lv 3", "-cram 0", "-nocb"}) {
    auto r = run_cli("run -m " + brown() + " -p x " + std::string(flag));
    EXPECT_EQ(r.exit_code, 1) << flag;
    const std::string name = std::string(flag).substr(0, std::string(flag).find(' '));
    EXPECT_NE(r.err.find("error: " + name + " is llama.cpp's option, not glia's"), std::string::npos) << flag << ": " << r.err;
  }
  auto unknown = run_cli("run -m " + brown() + " -p x -xyzq");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown option -xyzq"), std::string::npos) << unknown.err;
  auto pg = run_cli("bench -m " + brown() + " -pg 8,2 -p 0 -n 0 -r 1 -t 1 --bandwidth-mib 16 --json");
  EXPECT_EQ(pg.exit_code, 0) << pg.err;
  EXPECT_NE(pg.out.find("\"n_prompt\": 8"), std::string::npos) << pg.out;
}

// Habits of llama.cpp users: a negative temperature is greedy; +inf as a logit bias is refused by
// name; `logits --out -` writes to stdout, and a folder as --out says why it fails; `template
// --template` takes a built-in name as chat's --chat-template does; chat skips lines of blanks and
// answers /help itself.
TEST(cli_options, llama_cpp_habits) {
  const std::string run = "run -m " + brown() + " -p 'The jury' -n 6 --temp ";
  auto greedy = run_cli(run + "0");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  auto negative = run_cli(run + "-1");
  EXPECT_EQ(negative.exit_code, 0) << negative.err;
  EXPECT_EQ(negative.out, greedy.out);
  auto inf = run_cli("run -m " + brown() + " -p x -n 1 -l 2+inf --ignore-eos");
  EXPECT_EQ(inf.exit_code, 1);
  EXPECT_NE(inf.err.find("+inf is not allowed"), std::string::npos) << inf.err;

  const std::string file = test::scratch("habits_logits.f32");
  auto to_file = run_cli("logits -m " + brown() + " --ids 1,2,3 --out " + quote(file));
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  auto to_stdout = run_cli("logits -m " + brown() + " --ids 1,2,3 --out -");
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out, test::read_text(file));
  EXPECT_EQ(to_stdout.out.size(), 3u * 1024u * 4u);
  auto folder = run_cli("logits -m " + brown() + " --ids 1 --out " + quote(test::scratch("")));
  EXPECT_EQ(folder.exit_code, 1);
  EXPECT_NE(folder.err.find("Is a directory"), std::string::npos) << folder.err;

  const std::string msgs = test::scratch("habits_messages.json");
  test::write_text(msgs, R"([{"role":"user","content":"hi"}])");
  auto chatml = run_cli("template -m " + brown() + " --template chatml --add-generation-prompt --messages " + quote(msgs));
  EXPECT_EQ(chatml.exit_code, 0) << chatml.err;
  EXPECT_EQ(chatml.out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(run_cli("template -m " + brown() + " --template no-such --messages " + quote(msgs)).exit_code, 0);

  auto chat = test::run_glia({"chat", "-m", test::testdata("models/brown-q8_0.gguf"), "-n", "2", "--temp", "0", "--verbose"}, std::string("  \n/help\nThe jury\n"));
  EXPECT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_NE(chat.err.find("commands: /clear"), std::string::npos) << chat.err;
  EXPECT_NE(chat.err.find("[turn 1:"), std::string::npos) << chat.err;
  EXPECT_EQ(chat.err.find("[turn 2:"), std::string::npos) << chat.err;  // the blank line and /help were no turns
}

// llama.cpp's other spellings: -r/--reverse-prompt for --stop, --predict, --draft-n.
TEST(cli_options, llama_cpp_long_spellings) {
  auto r = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 --predict 30 -r ' of'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto stop = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n 30 --stop ' of'");
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(r.out, stop.out);
  EXPECT_EQ(generated(r.err), generated(stop.err));
  EXPECT_LT(generated(r.err), 30);
}

// In a chat every answer would run to a full context without its end-of-turn token: -n is required.
TEST(cli_options, chat_ignore_eos_needs_a_length) {
  auto r = run_cli("chat -m " + brown() + " --ignore-eos < /dev/null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--ignore-eos in a chat needs -n N"), std::string::npos) << r.err;
  auto with_n = run_cli("chat -m " + brown() + " --ignore-eos -n 3 < /dev/null");
  EXPECT_EQ(with_n.exit_code, 0) << with_n.err;
}

int prompt_token_count(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex(R"(prompt: (\d+) tokens)")) ? std::stoi(m[1]) : -1;
}

int id_count(const std::string& ids) { return int(std::count(ids.begin(), ids.end(), ' ')) + 1; }

// As llama.cpp's -e (on by default): \n in -p is a newline, --no-escape keeps it as typed.
TEST(cli_options, prompt_escapes_as_llama_cpp) {
  const std::string run = "run -m " + brown() + " -n 0 -p 'The jury\\nsaid \\x41'";
  auto escaped = run_cli(run);
  ASSERT_EQ(escaped.exit_code, 0) << escaped.err;
  EXPECT_EQ(prompt_token_count(escaped.err), id_count(ids("The jury\nsaid A")));
  auto literal = run_cli(run + " --no-escape");
  ASSERT_EQ(literal.exit_code, 0) << literal.err;
  EXPECT_EQ(prompt_token_count(literal.err), id_count(ids("The jury\\nsaid \\x41")));
  EXPECT_NE(prompt_token_count(escaped.err), prompt_token_count(literal.err));
  // What is not an escape stays as typed: an unknown letter, \x without two hex digits, a last backslash.
  for (const std::string typed : {"The \\q jury", "The jury \\x4", "The \\xZZ jury", "The jury\\"}) {
    auto r = run_cli("run -m " + brown() + " -n 0 -p " + quote(typed));
    ASSERT_EQ(r.exit_code, 0) << typed << ": " << r.err;
    EXPECT_EQ(prompt_token_count(r.err), id_count(ids(typed))) << typed;
  }
  // --stop too: "\x2c" is a comma.
  const std::string gen = "run -m " + brown() + " -p 'The jury said' --temp 0 -n 40 --stop ";
  auto hex_stop = run_cli(gen + "'\\x2c'"), comma_stop = run_cli(gen + "','");
  ASSERT_EQ(hex_stop.exit_code, 0) << hex_stop.err;
  EXPECT_EQ(hex_stop.out, comma_stop.out);
  EXPECT_EQ(hex_stop.out.find(','), std::string::npos) << hex_stop.out;
}

// XTC draws at random even with --temp 0: the seed it drew is printed so that the run can be repeated.
TEST(cli_options, the_seed_is_printed_when_xtc_draws) {
  auto r = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n 4 --xtc-probability 0.5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("seed: "), std::string::npos) << r.err;
  auto greedy = run_cli("run -m " + brown() + " -p 'The jury' --temp 0 -n 4");
  EXPECT_EQ(greedy.err.find("seed: "), std::string::npos) << greedy.err;
}

}  // namespace
}  // namespace glia
