// glia embed: a text's embedding (the final hidden states pooled, unit length), as llama.cpp's
// llama-embedding prints it; one line of numbers per text, or JSON.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common_options.h"
#include "load_session.h"

namespace glia::cli {

command_fn add_embed(CLI::App& app) {
  auto* cmd = app.add_subcommand("embed", "print the embeddings of texts (final hidden states pooled; unit length)");
  struct opts {
    session_options s;
    std::vector<std::string> prompts;
    std::string pooling;
    bool no_normalize = false;
    bool json = false;
  };
  auto o = std::make_shared<opts>();
  add_session_options(cmd, o->s);
  cmd->add_option("-p,--prompt", o->prompts, "a text to embed (repeatable: one embedding each)")->required()->check(non_empty_text);
  cmd->add_option("--pooling", o->pooling, "mean, cls (the first token's) or last (default: the model file's pooling_type, else last)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  cmd->add_flag("--no-normalize", o->no_normalize, "leave the pooled vector at its own length");
  cmd->add_flag("--json", o->json, "print a JSON array of the embeddings");

  return [o]() {
    auto s = open_session(o->s);
    if (!s) {
      fmt::print(stderr, "error: {}\n", s.message());
      return 1;
    }
    auto& sess = **s;
    const session::pooling how = session::pooling_named(o->pooling).value_or(sess.embedding_pooling());
    nlohmann::json all = nlohmann::json::array();
    for (const std::string& text : o->prompts) {
      // BOS/EOS as the model's tokenizer adds them (embedding models end on their EOS).
      auto ids = sess.tokenize(text, true, true);
      if (!ids) {
        fmt::print(stderr, "error: {}\n", ids.message());
        return 1;
      }
      auto v = sess.embed(*ids, how, !o->no_normalize);
      if (!v) {
        fmt::print(stderr, "error: {}\n", v.message());
        return 1;
      }
      if (o->json) all.push_back(*v);
      else fmt::print("{}\n", fmt::join(*v, " "));
    }
    if (o->json) fmt::print("{}\n", all.dump());
    return 0;
  };
}

}  // namespace glia::cli
