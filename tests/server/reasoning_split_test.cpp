// Reasoning apart from content: which templates think, where a reply's reasoning starts and ends,
// and that streaming in pieces of any size gives the same two parts as the whole reply.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <tuple>

#include "server/reasoning_split.h"
#include "test_support.h"

namespace glia::server {
namespace {

const reasoning_tags think = *reasoning_tags_of("<think></think>");
const reasoning_tags gemma = *reasoning_tags_of("<|channel>thought <channel|>");

TEST(ReasoningSplit, TemplatesThatThink) {
  // Read from the templates by hand: they write (or strip) <think>...</think> in assistant turns, or
  // Gemma 4's thought channel.
  const std::set<std::string> thinking = {"Qwen-QwQ-32B.jinja", "Qwen-Qwen3-0.6B.jinja", "tokenizer_config-qwen3.jinja",
                                          "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
                                          "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-ai-DeepSeek-V3.1.jinja"};
  const std::set<std::string> channel = {"google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it-interleaved.jinja"};
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::testdata("chat_templates/templates"))) {
    const std::string name = e.path().filename().string();
    const auto tags = reasoning_tags_of(test::read_text(e.path().string()));
    EXPECT_EQ(tags.has_value(), thinking.count(name) + channel.count(name) > 0) << name;
    if (tags) {
      EXPECT_EQ(tags->close, channel.count(name) ? "<channel|>" : "</think>") << name;
    }
    ++n;
  }
  EXPECT_GE(n, 20u);
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", think));  // QwQ's generation prompt
  EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>\n", think));         // the R1 distills'
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", think));  // Qwen3, thinking off
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n", think));
  EXPECT_FALSE(prompt_opens_reasoning("<|turn>model\n<|channel>thought\n<channel|>", gemma));  // Gemma 4, thinking off
  // A message being continued (a prefill) may have opened it.
  EXPECT_TRUE(leaves_reasoning_open("<think>\nLet me", think));
  EXPECT_TRUE(leaves_reasoning_open("<think>a</think>b<think>c", think));
  EXPECT_FALSE(leaves_reasoning_open("<think>a</think>Answer", think));
  EXPECT_FALSE(leaves_reasoning_open("Answer", think));
}

TEST(ReasoningSplit, WholeReplies) {
  struct expectation {
    const char* reply;
    bool inside;
    const char* reasoning;
    const char* content;
  };
  const expectation cases[] = {
      {"<think>\nAdd them.\n</think>\n\n4", false, "Add them.", "4"},
      {"  <think>a</think>b", false, "a", "b"},
      {"Add them.\n</think>\n\nThe answer is 4.", true, "Add them.", "The answer is 4."},
      {"<think>\n\n</think>\n\nHi", false, "", "Hi"},                    // an empty reasoning
      {"<think>\nstill thinking when max_tokens hit  ", false, "still thinking when max_tokens hit", ""},
      {"cut inside, no close", true, "cut inside, no close", ""},
      {"No reasoning here. <think>late</think>", false, "", "No reasoning here. <think>late</think>"},
      {"  <thin", false, "", "  <thin"},                                // a reply that only looked like it
      {"<think>a</think>b</think>c", false, "a", "b</think>c"},        // the first close ends it
      {"", true, "", ""},
      {"", false, "", ""},
  };
  // Continuing a prefill that opened it: every byte of the continuation counts, a leading space too.
  EXPECT_EQ(split_reasoning(" a minute", think, reasoning_start::mid_reasoning).reasoning, " a minute");
  EXPECT_EQ(split_reasoning(" a minute", think, reasoning_start::after_open_tag).reasoning, "a minute");
  // A prefill that ends with the close tag's start ("</think"): the continuation's first bytes may
  // end it; the prefill's bytes are never returned, whether they became the tag or not.
  const reply_parts closed = split_reasoning(">{\"a\": 1}", think, reasoning_start::mid_reasoning, "<think>\nthe jury</think");
  EXPECT_EQ(closed.reasoning, "");
  EXPECT_EQ(closed.content, "{\"a\": 1}");
  const reply_parts not_a_tag = split_reasoning("ing more</think>ok", think, reasoning_start::mid_reasoning, "<think>\nx </thin");
  EXPECT_EQ(not_a_tag.reasoning, "ing more");
  EXPECT_EQ(not_a_tag.content, "ok");
  EXPECT_EQ(split_reasoning("g", think, reasoning_start::mid_reasoning, "<think>x</thin").reasoning, "g");
  const reply_parts g = split_reasoning("<|channel>thought\nWeigh it.\n<channel|>Yes.", gemma, reasoning_start::outside);
  EXPECT_EQ(g.reasoning, "Weigh it.");
  EXPECT_EQ(g.content, "Yes.");
  for (const auto& c : cases) {
    const reply_parts p = split_reasoning(c.reply, think, c.inside ? reasoning_start::after_open_tag : reasoning_start::outside);
    EXPECT_EQ(p.reasoning, c.reasoning) << c.reply;
    EXPECT_EQ(p.content, c.content) << c.reply;
  }
}

TEST(ReasoningSplit, PiecesOfAnySizeGiveTheSameParts) {
  constexpr auto outside = reasoning_start::outside, after_tag = reasoning_start::after_open_tag, mid = reasoning_start::mid_reasoning;
  const std::tuple<std::string, reasoning_start, reasoning_tags, std::string> replies[] = {
      {"<think>\nLet me see: <thi </thin </ </think  not yet.\n</think>\n\nDone. </think> stays.", outside, think, ""},
      {"  \n <think> x </think>   \n y", outside, think, ""},
      {"Reasoning from the start\n\n</think>Answer", after_tag, think, ""},
      {" continued reasoning\n</think>Answer", mid, think, ""},
      {"k>\n\nAnswer", mid, think, "<think>so </thin"},
      {"ing on </thi", mid, think, "<think>so </th"},
      {"Plain answer with <think> inside", outside, think, ""},
      {"<think>never closed\n\n", outside, think, ""},
      {"日本語の推論</think>答え", after_tag, think, ""},
      {"<|channel>thought\n<|channel <channel| x\n<channel|>\nAnswer", outside, gemma, ""},
  };
  for (const auto& [reply, inside, tags, before] : replies) {
    const reply_parts whole = split_reasoning(reply, tags, inside, before);
    for (size_t piece = 1; piece <= 5; ++piece) {
      reasoning_splitter s(tags, inside, before);
      std::string reasoning, content;
      for (size_t i = 0; i < reply.size(); i += piece) {
        const reply_parts p = s.push(std::string_view(reply).substr(i, piece));
        reasoning += p.reasoning;
        content += p.content;
      }
      const reply_parts rest = s.finish();
      EXPECT_EQ(reasoning + rest.reasoning, whole.reasoning) << reply << " in pieces of " << piece;
      EXPECT_EQ(content + rest.content, whole.content) << reply << " in pieces of " << piece;
    }
  }
}

}  // namespace
}  // namespace glia::server
