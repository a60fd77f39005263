// glia tokenize / glia detokenize: a model's tokenizer on its own, from a GGUF file or a Hugging Face
// tokenizer folder. An inspection tool, so it uses the tokenizer module directly.
#include <fmt/core.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "commands.h"
#include "model/model_file.h"
#include "token_ids.h"
#include "tokenizer/tokenizer.h"

namespace glia::cli {
namespace {

struct source_options {
  std::string model;
  std::string hf;
  CLI::Option* model_opt = nullptr;
  CLI::Option* hf_opt = nullptr;

  void add_to(CLI::App* cmd) {
    model_opt = cmd->add_option("-m,--model", model, "GGUF model file (its tokenizer.ggml.* metadata) or Hugging Face checkpoint folder")->check(CLI::ExistingPath);
    hf_opt = cmd->add_option("--tokenizer", hf, "Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json)")
                 ->check(CLI::ExistingPath);
    model_opt->excludes(hf_opt);
  }

  result<std::unique_ptr<tokenizer>> load() const {
    if (!hf.empty()) return tokenizer::from_hf(tokenizer_folder(hf));
    // Only the metadata is needed; mapping the file costs nothing for the tensors.
    auto f = open_model_metadata(model);
    if (!f) return f.take_error();
    auto t = tokenizer::from_gguf(**f);
    if (!t) return make_error("{}: {}", model, t.message());
    return t;
  }
};

}  // namespace

command_fn add_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  struct opts {
    source_options src;
    std::string prompt;
    std::string file;
    bool no_add_special = false;
    bool parse_special = false;
    bool ids_only = false;
  };
  auto o = std::make_shared<opts>();
  o->src.add_to(cmd);
  auto* prompt = cmd->add_option("-p,--prompt", o->prompt, "text to tokenize");
  auto* file = cmd->add_option("-f,--file", o->file, "tokenize the exact bytes of FILE")->check(CLI::ExistingFile);
  prompt->excludes(file);
  cmd->add_flag("--no-add-special", o->no_add_special, "do not add the tokenizer's BOS/EOS");
  cmd->add_flag("--parse-special", o->parse_special, "match special-token text such as <s> (else it is plain text)");
  cmd->add_flag("--ids-only", o->ids_only, "print only the ids, on one line separated by spaces");
  cmd->callback([o, prompt, file]() {
    if (o->src.model_opt->count() == 0 && o->src.hf_opt->count() == 0) throw CLI::RequiredError("-m or --tokenizer");
    if (prompt->count() == 0 && file->count() == 0) throw CLI::RequiredError("-p or -f");
  });

  return [o]() {
    auto t = o->src.load();
    if (!t) {
      fmt::print(stderr, "error: {}\n", t.message());
      return 1;
    }
    std::string text = o->prompt;
    if (!o->file.empty()) {
      std::ifstream in(o->file, std::ios::binary);
      if (!in) {
        fmt::print(stderr, "error: {}: cannot read\n", o->file);
        return 1;
      }
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const tokenizer& tok = **t;
    const auto ids = tok.encode(text, !o->no_add_special, o->parse_special);
    std::string out;
    if (o->ids_only) {
      for (size_t i = 0; i < ids.size(); ++i) out += fmt::format("{}{}", i ? " " : "", ids[i]);
      out += '\n';
    } else {
      // As llama-tokenize prints them: the id, then the token's piece (special tokens as their text).
      for (int32_t id : ids) out += fmt::format("{:6} -> '{}'\n", id, tok.token_to_piece(id, true));
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  };
}

command_fn add_detokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand("detokenize", "print the text of token ids");
  struct opts {
    source_options src;
    std::string ids;
    bool skip_special = false;
  };
  auto o = std::make_shared<opts>();
  o->src.add_to(cmd);
  cmd->add_option("--ids", o->ids, "token ids (1,15043,3186 or \"1 15043 3186\" or [1, 15043, 3186]), or @FILE holding them")->required();
  cmd->add_flag("--skip-special", o->skip_special, "leave out control tokens such as <s> (else they print as their text)");
  cmd->callback([o]() {
    if (o->src.model_opt->count() == 0 && o->src.hf_opt->count() == 0) throw CLI::RequiredError("-m or --tokenizer");
  });

  return [o]() {
    auto ids = read_token_ids(o->ids);
    if (!ids) {
      fmt::print(stderr, "error: {}\n", ids.message());
      return 1;
    }
    auto t = o->src.load();
    if (!t) {
      fmt::print(stderr, "error: {}\n", t.message());
      return 1;
    }
    const tokenizer& tok = **t;
    for (int32_t id : *ids) {
      if (id < 0 || id >= tok.n_vocab()) {
        fmt::print(stderr, "error: token id {} is outside the vocabulary (0..{})\n", id, tok.n_vocab() - 1);
        return 1;
      }
    }
    const std::string text = tok.decode(*ids, {.special = !o->skip_special});
    std::fwrite(text.data(), 1, text.size(), stdout);
    // Exactly the decoded text for pipes and files (so it can be compared byte for byte); a newline
    // only on a terminal, where the shell prompt would otherwise follow the text on the same line.
    if (::isatty(STDOUT_FILENO)) std::fputc('\n', stdout);
    return 0;
  };
}

}  // namespace glia::cli
