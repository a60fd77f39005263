// Fixtures for reasoning replies on the Brown model (no reasoning model is small enough for the tests):
// chat templates that reason between <think> and </think>, and the model with those tags as tokens.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace glia::test {

// A template whose prompt opens the reasoning (as QwQ's and the R1 distills' do); it shows tools.
std::string opening_think_template();
// A template that leaves the reply outside the reasoning (Qwen3's, without enable_thinking false).
std::string plain_think_template();
// The Brown model with two of its rarest pieces made <think> and </think> control tokens (as a
// reasoning model's vocabulary has them), so that a logit bias can open and close the reasoning.
inline constexpr int32_t think_id = 1022, unthink_id = 1023;
std::string brown_with_think_tokens();
// The Brown model with the given pieces made control tokens of the given texts (written as `name` in
// the scratch folder).
std::string brown_with_control_tokens(const std::string& name, const std::vector<std::pair<int32_t, std::string>>& renamed);

}  // namespace glia::test
