#include "hostile_case.h"

#include <gtest/gtest.h>

#include "cli_runner.h"
#include "backend/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace glia::test {

void expect_cli_refuses(const hostile_case& c) {
  const std::string path = write_scratch(c.name, c.make());
  std::vector<std::string> args;
  switch (c.command) {
    case via::info: args = {"info", "-m", path}; break;
    case via::run: args = {"run", "-m", path, "-p", "ab", "-n", "2", "--temp", "0", "-c", "8"}; break;
    case via::logits: args = {"logits", "-m", path, "--ids", "1,7", "--out", path + ".logits"}; break;
  }
  const cli_result r = run_glia(args);
  EXPECT_EQ(r.signal, 0) << "glia was killed by signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << "stderr is not one line:\n" << r.err;
  EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(c.expect), std::string::npos) << "message: " << lines[0] << "\nexpected: " << c.expect;
}

void expect_library_refuses(const hostile_case& c) {
  const bytes b = c.make();
  auto f = gguf::file::from_memory(b);
  if (c.refused_by == layer::gguf) {
    ASSERT_FALSE(f.is_ok()) << "the GGUF reader accepted it";
    EXPECT_NE(f.message().find(c.expect), std::string::npos) << "message: " << f.message() << "\nexpected: " << c.expect;
    return;
  }
  ASSERT_TRUE(f.is_ok()) << f.message();
  if (c.refused_by == layer::tokenizer) {
    auto tok = tokenizer::from_gguf(**f);
    ASSERT_FALSE(tok.is_ok()) << "the tokenizer accepted it";
    EXPECT_NE(tok.message().find(c.expect), std::string::npos) << "message: " << tok.message() << "\nexpected: " << c.expect;
    return;
  }
  auto m = load_model(*f);
  if (c.refused_by == layer::forward) {
    ASSERT_TRUE(m.is_ok()) << m.message();
    auto be = make_ref_backend();
    auto cache = kv_cache::create((*m)->profile, 8, 8, dtype::f32, *be);
    ASSERT_TRUE(cache.is_ok()) << cache.message();
    forward_pass fwd(**m, *be);
    const int32_t ids[] = {1, 7};
    std::vector<float> logits;
    status s = fwd.run(*cache, ids, 0, true, logits);
    ASSERT_FALSE(s.is_ok()) << "the forward pass accepted it";
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << "message: " << s.message() << "\nexpected: " << c.expect;
    return;
  }
  ASSERT_FALSE(m.is_ok()) << "load_model accepted it";
  EXPECT_NE(m.message().find(c.expect), std::string::npos) << "message: " << m.message() << "\nexpected: " << c.expect;
}

}  // namespace glia::test
