// GBNF parsing and matching, and the token masks against a brute-force oracle (is_prefix on the text
// each token would make).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sampler/grammar/grammar.h"
#include "sampler/grammar/token_matcher.h"

namespace glia::grammar {
namespace {

std::shared_ptr<const compiled> gbnf(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << g.message();
  return g.is_ok() ? *g : nullptr;
}

// A JSON grammar in llama.cpp's style (as its users write them): whitespace between tokens, nested
// values through recursive rules.
constexpr std::string_view json_gbnf = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(GrammarParse, JsonGrammarMatchesJson) {
  auto g = gbnf(json_gbnf);
  ASSERT_TRUE(g);
  for (std::string_view ok : {R"({})", R"({"a": 1})", R"({"a": [1, 2.5e3, "x\n\u00e9"], "b": {"c": null}})",
                              "{\"k\":\n  true}", R"({"é": "ü"})"})
    EXPECT_TRUE(matches(*g, ok)) << ok;
  for (std::string_view bad : {R"({)", R"({"a" 1})", R"([1])", R"({"a": 01x})", "{\"a\":\"\x01\"}", R"({"a": tru})"})
    EXPECT_FALSE(matches(*g, bad)) << bad;
  EXPECT_TRUE(is_prefix(*g, R"({"a": [1, 2)"));
  EXPECT_FALSE(is_prefix(*g, R"({"a": ]")"));
}

TEST(GrammarParse, RepetitionCounts) {
  auto g = gbnf(R"(root ::= "ab"{2,3} [x]{0,2} "c"{2,} "d"? "e"+)");
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, "ababcce"));
  EXPECT_TRUE(matches(*g, "abababxxccccdeee"));
  EXPECT_FALSE(matches(*g, "abcce"));          // "ab" once
  EXPECT_FALSE(matches(*g, "abababab" "cce"));  // four times
  EXPECT_FALSE(matches(*g, "ababxxxcce"));      // x three times
  EXPECT_FALSE(matches(*g, "ababce"));          // c once
  EXPECT_FALSE(matches(*g, "ababcc"));          // no e
  auto exact = gbnf("root ::= [0-9]{3}");
  ASSERT_TRUE(exact);
  EXPECT_TRUE(matches(*exact, "123"));
  EXPECT_FALSE(matches(*exact, "12"));
  EXPECT_FALSE(matches(*exact, "1234"));
}

TEST(GrammarParse, ClassesEscapesAndAnyCharacter) {
  auto g = gbnf(R"(root ::= [^a-c\n] . "\x41\u00e9\U0001F600" [\-\]] [é-ü])");
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, "dzAé😀-ö"));
  EXPECT_TRUE(matches(*g, "\xF0\x9F\x98\x80\nAé😀]é"));  // '.' takes a newline
  EXPECT_FALSE(matches(*g, "bzAé😀-ö"));
  EXPECT_FALSE(matches(*g, "dzAé😀xö"));
  EXPECT_FALSE(matches(*g, "dzAé😀-a"));
  EXPECT_FALSE(matches(*g, "dzA\xC3"));  // a character cut short is not text
}

TEST(GrammarParse, RulesSpanLinesOnlyInsideGroupsAndAfterBars) {
  auto g = gbnf("# comment\nroot ::= (\n  \"a\" # x\n  | \"b\"\n) tail |\n  \"c\"\ntail ::= \"t\"\r\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, "at"));
  EXPECT_TRUE(matches(*g, "bt"));
  EXPECT_TRUE(matches(*g, "c"));
  EXPECT_FALSE(matches(*g, "a"));
  // A sequence does not continue on the next line outside a group.
  EXPECT_FALSE(parse_gbnf("root ::= \"a\"\n  \"b\"\n").is_ok());
}

TEST(GrammarParse, MalformedGrammarsAreRefusedWithTheirPlace) {
  struct bad_case {
    std::string text, message;
  };
  const std::vector<bad_case> cases = {
      {"", "the grammar is empty"},
      {"  # only a comment\n", "the grammar is empty"},
      {"root = \"a\"", "expected '::=' after the rule name 'root'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2 column 10: rule 'root' is defined twice"},
      {"root ::= item", "rule 'item' is used (line 1) but never defined"},
      {"start ::= \"a\"", "no rule named 'root'"},
      {"root ::= \"abc", "unterminated string literal"},
      {"root ::= [abc", "unterminated character class"},
      {"root ::= \"\\q\"", "unknown escape '\\q'"},
      {"root ::= [z-a]", "character range 7A-61 runs backwards"},
      {"root ::= \"\\uD800\"", "U+D800 is not a character"},
      {"root ::= \"\\x4\"", "expected 2 hex digits"},
      {"root ::= * \"a\"", "'*' has nothing before it to repeat"},
      {"root ::= []", "the character class [] matches nothing"},
      {"root ::= [^\\x00-\\U0010FFFF]", "rule 'root' has a character class that matches no character"},
      {"root ::= [^\\x00-\\uD7FF\\uE000-\\U0010FFFF]", "rule 'root' has a character class that matches no character"},
      {"root ::= \"a\" x\nx ::= [^\\x00-\\x7F\\x80-\\U0010FFFF] | \"b\"", "rule 'x' has a character class that matches no character"},
      {"root ::= root", "rule 'root' can never finish matching"},
      {"root ::= a | b\na ::= b\nb ::= a", "can never finish matching"},
      {"root ::= \"a\" x\nx ::= \"b\" x", "rule 'x' can never finish matching"},
      {"root ::= \"a\" (\"b\" | y)\ny ::= \"c\" y", "rule 'y' can never finish matching"},
      {"root ::= <think> \"a\"", "token references (<...>, <[id]>) are not supported"},
      {"root ::= x\nx ::= x \"+\" \"1\" | \"1\"", "rule 'x' is left-recursive"},
      {"root ::= \"a\"{3,2}", "the maximum is below the minimum"},
      {"root ::= \"a\"{1000000}", "a repetition count past 100000"},
      {"root ::= \"a\"{5", "expected '}' to close the repetition count"},
      {"root ::= (\"a\"", "expected ')' to close the group"},
      {"root ::= \"a\" )", "expected the end of the line after rule 'root'"},
      {"root ::= root \"a\" | \"b\"", "rule 'root' is left-recursive"},
      {"root ::= opt root \"x\" | \"y\"\nopt ::= \"o\"?", "is left-recursive"},
      {"root ::= a\na ::= b \"x\"\nb ::= a | \"y\"", "is left-recursive"},
      {"root ::= \"\xC3(\"", "invalid UTF-8"},
      {"root ::= (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
       "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\"a\"",
       "groups nested more than 200 deep"},
      {"root ::= (\"abcdefghij\"{100000}){1000}", "more than 1000000 elements"},
  };
  for (const auto& c : cases) {
    auto g = parse_gbnf(c.text);
    ASSERT_FALSE(g.is_ok()) << c.text;
    EXPECT_NE(g.message().find(c.message), std::string::npos) << c.text << " -> " << g.message();
  }
}

// A character begun but not finished may still become only what its first bytes allow: a lead byte
// E0 or F0 alone is U+0800.. or U+10000.. (shorter forms are overlong), never ASCII.
TEST(GrammarParse, PrefixesEndingInsideACharacter) {
  auto ascii = gbnf(R"(root ::= "[" [ -~]*)");
  ASSERT_TRUE(ascii);
  for (std::string_view lead : {"\xC2", "\xE0", "\xE0\xA0", "\xF0", "\xF0\x90", "\xF4"}) EXPECT_FALSE(is_prefix(*ascii, std::string("[") + std::string(lead))) << lead;
  auto wide = gbnf(R"(root ::= "[" [\u0800-\u0FFF] | "{" [\U00010000-\U00010FFF] | "<" [\u0080-\u00BF])");
  ASSERT_TRUE(wide);
  EXPECT_TRUE(is_prefix(*wide, "[\xE0"));
  EXPECT_FALSE(is_prefix(*wide, "[\xE1"));
  EXPECT_TRUE(is_prefix(*wide, "{\xF0"));
  EXPECT_TRUE(is_prefix(*wide, "{\xF0\x90"));
  EXPECT_FALSE(is_prefix(*wide, "{\xF0\x91"));
  EXPECT_TRUE(is_prefix(*wide, "<\xC2"));
  EXPECT_FALSE(is_prefix(*wide, "<\xC3"));
  EXPECT_FALSE(is_prefix(*wide, "[\xC0"));  // never a lead byte
  // F4 goes no further than U+10FFFF; ED alone cannot reach past U+D7FF (surrogates follow).
  auto last = gbnf(R"(root ::= [^\x00-\U0010FFFE])");  // U+10FFFF alone: F4 8F BF BF
  ASSERT_TRUE(last);
  EXPECT_TRUE(is_prefix(*last, "\xF4\x8F\xBF"));
  EXPECT_FALSE(is_prefix(*last, "\xF4\x90"));
  EXPECT_FALSE(is_prefix(*last, "\xF4\x8F\xBE"));
  auto private_use = gbnf(R"(root ::= [\uE000-\uE0FF] | [\uD7F0-\uD7F1] "!")");
  ASSERT_TRUE(private_use);
  EXPECT_TRUE(is_prefix(*private_use, "\xED"));
  auto only_private = gbnf(R"(root ::= [\uE000-\uE0FF])");
  ASSERT_TRUE(only_private);
  EXPECT_FALSE(is_prefix(*only_private, "\xED"));
}

// What llama.cpp reads and a first version refused or mishandled: stacked repetitions, loops
// through rules that match nothing, a literal over two lines, a byte order mark.
TEST(GrammarParse, LlamaCppCorners) {
  auto six = gbnf(R"(root ::= "a"{2}{3} "b"?? "c"**)");
  ASSERT_TRUE(six);
  EXPECT_TRUE(matches(*six, "aaaaaa"));
  EXPECT_TRUE(matches(*six, "aaaaaabccc"));
  EXPECT_FALSE(matches(*six, "aaaa"));
  auto loops = gbnf("root ::= (\"a\"?)* \"!\" (ws)* \"\"* \"x\"\nws ::= \" \"?");
  ASSERT_TRUE(loops);
  EXPECT_TRUE(matches(*loops, "!x"));
  EXPECT_TRUE(matches(*loops, "aaa!   x"));
  auto two_lines = gbnf("root ::= \"a\nb\"");
  ASSERT_TRUE(two_lines);
  EXPECT_TRUE(matches(*two_lines, "a\nb"));
  auto bom = gbnf("\xEF\xBB\xBFroot ::= \"a\"");
  ASSERT_TRUE(bom);
  EXPECT_TRUE(matches(*bom, "a"));
}

// Grammars that once crashed or hung the matcher: chains of rules that match nothing (recursion
// 10^5 deep), ambiguity that doubles per rule, many stacks that are the same.
TEST(GrammarParse, HostileShapesAreBoundedOrRefused) {
  auto empties = gbnf("root ::= \"\"{0,100000} (\"\"){0,100000} \"x\"");
  ASSERT_TRUE(empties);
  EXPECT_TRUE(matches(*empties, "x"));
  std::string chain = "root ::= r0 \"b\"\n";
  for (int i = 0; i < 100000; ++i) chain += fmt::format("r{} ::= r{}\n", i, i + 1);
  chain += "r100000 ::= \"\"\n";
  auto chained = gbnf(chain);
  ASSERT_TRUE(chained);
  EXPECT_TRUE(matches(*chained, "b"));
  std::string doubling = "root ::= r0\n";
  for (int i = 0; i < 4100; ++i) doubling += fmt::format("r{} ::= r{} \"x\" | r{} \"y\"\n", i, i + 1, i + 1);
  doubling += "r4100 ::= \"z\"\n";
  auto refused = parse_gbnf(doubling);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("past the matcher's bounds"), std::string::npos) << refused.message();
  // Many alternatives under a deep chain: refused by the positions copied, before they are copied.
  std::string heavy = "root ::= r0\n";
  for (int i = 0; i < 1000; ++i) heavy += fmt::format("r{} ::= r{} \"b\"\n", i, i + 1);
  heavy += "r1000 ::= ";
  for (int i = 0; i < 60000; ++i) heavy += fmt::format("{}\"a{}\"", i ? " | " : "", i);
  auto too_heavy = parse_gbnf(heavy + "\n");
  ASSERT_FALSE(too_heavy.is_ok());
  EXPECT_NE(too_heavy.message().find("past the matcher's bounds"), std::string::npos) << too_heavy.message();
  std::string same = "root ::= ";
  for (int i = 0; i < 13; ++i) same += "(\"a\"*)? ";
  auto dup = gbnf(same + "\"x\" | \"y\"");
  ASSERT_TRUE(dup);
  EXPECT_TRUE(matches(*dup, "y"));
  EXPECT_TRUE(matches(*dup, "aaax"));
  auto optional_run = gbnf(R"(root ::= ("a"?){0,5000} "x")");
  ASSERT_TRUE(optional_run);
  EXPECT_TRUE(matches(*optional_run, "x"));
  EXPECT_TRUE(matches(*optional_run, "aaaax"));
  std::string choices = "root ::= ";
  for (int i = 0; i < 9000; ++i) choices += fmt::format("\"a{}\" | ", i);
  auto many = gbnf(choices + "\"zzz\"");
  ASSERT_TRUE(many);
  EXPECT_TRUE(matches(*many, "zzz"));
  EXPECT_TRUE(matches(*many, "a8999"));
}

TEST(GrammarParse, RightRecursionAndLongRepetitionsStayShallow) {
  auto g = gbnf("root ::= item* \"!\"\nitem ::= [a-z] | \"-\" item");
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, std::string(100000, 'a') + "!"));
  auto nested = gbnf("root ::= \"(\" root \")\" | \"x\"");
  ASSERT_TRUE(nested);
  EXPECT_TRUE(matches(*nested, std::string(1000, '(') + "x" + std::string(1000, ')')));
  EXPECT_FALSE(matches(*nested, std::string(1000, '(') + "x" + std::string(999, ')')));
}

// Tokens of a made-up vocabulary, including pieces that split a character (byte fallback) and ones
// that are empty (control tokens).
std::vector<std::string> test_pieces() {
  return {"",  "{", "}", "\"", "a", "b", "ab", "\"a", "a\"", ":", " ", ", ", "\"}", "1", "12", "-", "é",
          "\xC3", "\xA9", "\xC3\xA9\"", "\xE2\x82", "\xAC", "€", "\n", "true", "tr", "ue", "null", "[", "]", "é\xC3", "\xFF",
          "\xE0", "\xF0", "\xF0\x9F", "\x98\x80", "\xC2", "\xA0", ""};
}

// Every token's verdict equals is_prefix on the text it would make (and end-of-generation equals a
// whole match), along random walks through the grammar.
void check_masks_against_oracle(const std::shared_ptr<const compiled>& g, uint32_t seed) {
  const auto pieces = test_pieces();
  const int32_t eog = int32_t(pieces.size()) - 1;
  auto vocab = std::make_shared<token_vocab>(pieces, std::vector<int32_t>{eog});
  token_matcher m(g, vocab);
  std::mt19937 rng(seed);
  std::string text;
  for (int step = 0; step < 40; ++step) {
    std::vector<int32_t> ok;
    for (int32_t id = 0; id < int32_t(pieces.size()); ++id) {
      bool expect = false;
      if (id == eog) expect = matches(*g, text);
      else if (!pieces[size_t(id)].empty()) expect = is_prefix(*g, text + pieces[size_t(id)]);
      ASSERT_EQ(m.is_allowed(id), expect) << "after '" << text << "' token " << id << " '" << pieces[size_t(id)] << "'";
      if (expect) ok.push_back(id);
    }
    if (ok.empty()) break;
    const int32_t pick = ok[rng() % ok.size()];
    if (pick == eog) break;
    ASSERT_TRUE(m.accept(pick));
    text += pieces[size_t(pick)];
  }
}

TEST(GrammarTokens, MasksEqualTheBruteForceOracle) {
  auto g = gbnf(json_gbnf);
  ASSERT_TRUE(g);
  for (uint32_t seed = 0; seed < 30; ++seed) check_masks_against_oracle(g, seed);
  auto words = gbnf("root ::= (\"ab\" | \"é€\" | [0-9]{1,3} | \"true\")+ (\"\\n\")?");
  ASSERT_TRUE(words);
  for (uint32_t seed = 0; seed < 30; ++seed) check_masks_against_oracle(words, seed);
}

TEST(GrammarTokens, RefusesTokensOutsideAndEndsOnlyWhenComplete) {
  auto g = gbnf(R"(root ::= "ab" "1"?)");
  ASSERT_TRUE(g);
  const auto pieces = test_pieces();
  const int32_t eog = int32_t(pieces.size()) - 1;
  token_matcher m(g, std::make_shared<token_vocab>(pieces, std::vector<int32_t>{eog}));
  EXPECT_FALSE(m.is_allowed(eog));
  EXPECT_FALSE(m.is_allowed(0));  // a control token: never text
  EXPECT_FALSE(m.accept(5));      // "b"
  EXPECT_TRUE(m.accept(4));       // "a"
  EXPECT_TRUE(m.accept(5));       // "b"
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.finished());
  EXPECT_TRUE(m.is_allowed(eog));
  EXPECT_TRUE(m.accept(13));      // "1"
  EXPECT_TRUE(m.finished());
  EXPECT_FALSE(m.is_allowed(14));
  m.reset();
  EXPECT_TRUE(m.is_allowed(6));   // "ab" again after a reset
}

}  // namespace
}  // namespace glia::grammar
