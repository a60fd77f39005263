// glia embed: a text's embedding (the final hidden states pooled, unit length), as llama.cpp's
// llama-embedding prints it; one line of numbers per text, or JSON.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common_options.h"
#include "core/read_file.h"
#include "escapes.h"
#include "load_session.h"

namespace glia::cli {

command_fn add_embed(CLI::App& app) {
  auto* cmd = app.add_subcommand("embed", "print the embeddings of texts (final hidden states pooled; unit length)");
  struct opts {
    session_options s;
    std::vector<std::string> prompts;
    std::string file;
    std::string separator = "\n";
    std::string pooling;
    bool no_normalize = false;
    bool json = false;
  };
  auto o = std::make_shared<opts>();
  add_session_options(cmd, o->s);
  auto* prompt = cmd->add_option("-p,--prompt", o->prompts,
                                 "texts to embed, one embedding each (backslash escapes read, as llama-embedding's -p; split at "
                                 "--embd-separator; repeatable)");
  cmd->add_option("-f,--file", o->file, "texts to embed from FILE, split at --embd-separator (one trailing newline dropped, as llama.cpp's -f)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--embd-separator", o->separator, "what separates the texts of a prompt or file (default: a newline; escapes read)");
  prompt->excludes("--file");
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
    std::vector<std::string> sources;
    for (const std::string& p : o->prompts) sources.push_back(process_escapes(p));
    if (!o->file.empty()) {
      auto text = read_whole_file(o->file);
      if (!text) {
        fmt::print(stderr, "error: {}\n", text.message());
        return 1;
      }
      if (text->ends_with('\n')) text->pop_back();
      sources.push_back(std::move(*text));
    }
    if (sources.empty()) {
      fmt::print(stderr, "error: give the texts to embed with -p TEXT or -f FILE\n");
      return 1;
    }
    // As llama-embedding: every piece between separators is a text, an empty one too (its BOS/EOS).
    const std::string sep = process_escapes(o->separator);
    if (sep.empty()) {
      fmt::print(stderr, "error: --embd-separator must not be empty\n");
      return 1;
    }
    std::vector<std::string> texts;
    for (const std::string& src : sources)
      for (size_t start = 0;;) {
        const size_t end = src.find(sep, start);
        texts.push_back(src.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) break;
        start = end + sep.size();
      }
    nlohmann::json all = nlohmann::json::array();
    for (const std::string& text : texts) {
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
