// A rendered chat starts with BOS exactly once when the vocabulary adds one, whether the template
// writes bos_token (Llama 2's) or not (ChatML): llama.cpp strips a template's leading BOS text and
// tokenizes with the vocabulary's specials, so a model that expects BOS always gets one. A vocabulary
// that adds none (Qwen's) gets only what the template wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "glia/session.h"
#include "gguf/gguf.h"
#include "test_support.h"

namespace glia {
namespace {

std::unique_ptr<session> open_for_chat(const std::string& path) {
  session_options o;
  o.model_path = path;
  o.n_threads = 1;
  o.n_ctx = 256;
  auto s = session::create(o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? std::move(*s) : nullptr;
}

TEST(chat_tokens, bos_once_when_the_vocabulary_adds_it) {
  auto s = open_for_chat(test::testdata("models/brown-q8_0.gguf"));
  ASSERT_TRUE(s);
  const auto bos = s->added_bos();
  ASSERT_TRUE(bos.has_value());
  const std::string body = "<|im_start|>user\nThe jury<|im_end|>\n<|im_start|>assistant\n";
  const auto plain = s->tokenize(body, false, true);
  ASSERT_TRUE(plain.is_ok());
  ASSERT_NE(plain->front(), *bos);
  auto chat = s->tokenize_chat(body);  // ChatML writes no BOS
  ASSERT_TRUE(chat.is_ok());
  ASSERT_EQ(chat->size(), plain->size() + 1);
  EXPECT_EQ(chat->front(), *bos);
  EXPECT_EQ(std::vector<int32_t>(chat->begin() + 1, chat->end()), *plain);
  // A template that writes it (Llama 2's "<s>[INST] ...") gets no second one.
  auto written = s->tokenize_chat(s->token_text(*bos) + body);
  ASSERT_TRUE(written.is_ok());
  EXPECT_EQ(*written, *chat);
}

TEST(chat_tokens, nothing_added_when_the_vocabulary_adds_none) {
  // The Brown model with add_bos_token false, as Qwen's vocabularies have it.
  auto f = gguf::file::open(test::testdata("models/brown-q8_0.gguf"));
  ASSERT_TRUE(f) << f.message();
  gguf::writer w;
  w.copy_metadata(**f);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  ASSERT_TRUE(w.copy_tensors(**f));
  const std::string path = test::scratch("brown_no_bos.gguf");
  const std::string part = path + "." + std::to_string(::getpid());  // aside, then renamed: other processes may read it
  ASSERT_TRUE(w.write(part));
  std::filesystem::rename(part, path);
  auto s = open_for_chat(path);
  ASSERT_TRUE(s);
  ASSERT_FALSE(s->added_bos());
  const std::string body = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  auto chat = s->tokenize_chat(body);
  auto plain = s->tokenize(body, false, true);
  ASSERT_TRUE(chat.is_ok() && plain.is_ok());
  EXPECT_EQ(*chat, *plain);
}

}  // namespace
}  // namespace glia
