// glia quantize: convert a GGUF model's weights to another type with llama-quantize's mixes.
// An inspection/conversion tool, so it uses the model module directly.
#include <fmt/core.h>

#include <chrono>

#include "commands.h"
#include "interrupts.h"
#include "model/quantize.h"
#include "tokenizer/chat_template_export.h"
#include "tokenizer/vocab_export.h"

namespace glia::cli {
namespace {

struct positionals {
  std::string out, type;
  int n_threads = -1;  // -1: not given
};

bool is_decimal(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// llama-quantize's [OUT] TYPE [NTHREADS], read as it reads them: a first word that is a type (and
// is followed by a thread count or nothing) means the output was left out, and it is written beside
// the input as ggml-model-TYPE.gguf.
result<positionals> read_positionals(const std::string& in, const std::vector<std::string>& rest) {
  positionals p;
  size_t i = 0;
  const bool type_first = parse_file_type(rest[0]).has_value() && (rest.size() == 1 || (rest.size() == 2 && is_decimal(rest[1])));
  if (type_first) {
    const size_t slash = in.find_last_of('/');
    p.type = rest[0];
    p.out = (slash == std::string::npos ? std::string() : in.substr(0, slash + 1)) + "ggml-model-" +
            std::string(find_file_type(*parse_file_type(rest[0]))->name) + ".gguf";
    i = 1;
  } else {
    if (rest.size() < 2) return make_error("expected INPUT OUTPUT TYPE [NTHREADS]: '{}' is not a type", rest[0]);
    p.out = rest[0];
    p.type = rest[1];
    i = 2;
  }
  if (i < rest.size()) {
    if (!is_decimal(rest[i]) || rest[i].size() > 4 || std::stoi(rest[i]) > 1024)
      return make_error("'{}' is not a thread count (0..1024)", rest[i]);
    p.n_threads = std::stoi(rest[i]);
    ++i;
  }
  if (i < rest.size()) return make_error("'{}': expected INPUT [OUTPUT] TYPE [NTHREADS]", rest[i]);
  return p;
}

std::string type_list() {
  std::string s;
  for (const auto& f : all_file_types()) s += fmt::format("{}{}", s.empty() ? "" : " ", f.name);
  return s;
}

}  // namespace

command_fn add_quantize(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "convert a model's weights to another type (llama-quantize's mixes)");
  struct opts {
    std::string in, token_embd_type, output_type;
    std::vector<std::string> rest;  // [OUTPUT] TYPE [NTHREADS]
    bool pure = false;
    bool quiet = false;
    int n_threads = 0;
    bool allow_requantize = false, leave_output = false;
  };
  auto o = std::make_shared<opts>();
  cmd->add_option("input", o->in, "source GGUF (F32, F16, BF16 or quantized: requantized) or Hugging Face checkpoint folder (safetensors)")->required()->check(CLI::ExistingPath);
  cmd->add_option("output type nthreads", o->rest,
                  "[OUTPUT] TYPE [NTHREADS], as llama-quantize takes them. OUTPUT: the GGUF file to write (left out: "
                  "ggml-model-TYPE.gguf beside the input); TYPE: " + type_list() +
                      " (Q3_K, Q4_K, Q5_K mean the _M mixes), or its general.file_type number (15: Q4_K_M); NTHREADS: as -t")
      ->required()
      ->expected(1, 3)
      ->take_all();  // not the default "last wins": a fourth word would silently push out the first
  cmd->add_option("--token-embedding-type", o->token_embd_type, "type of token_embd.weight (e.g. q8_0)");
  cmd->add_option("--output-tensor-type", o->output_type, "type of output.weight (tied models: of token_embd.weight)");
  cmd->add_flag("--pure", o->pure, "no mix: every weight gets the base type (except the two options above)");
  cmd->add_option("-t,--threads", o->n_threads, "threads (0, the default: one per core)")->check(CLI::Range(0, 1024));
  // llama-quantize's options: --allow-requantize, --leave-output-tensor.
  cmd->add_flag("--allow-requantize", o->allow_requantize,
                "accepted for llama-quantize's command lines: glia requantizes a quantized source anyway (a second rounding "
                "loses more than quantizing from F16/BF16/F32 once)");
  cmd->add_flag("--leave-output-tensor", o->leave_output, "output.weight keeps its type (llama-quantize's option)")
      ->excludes(cmd->get_option("--output-tensor-type"));
  cmd->add_flag("-q,--quiet", o->quiet, "no per-tensor lines");

  return [o]() {
    quantize_options q;
    auto pos = read_positionals(o->in, o->rest);
    if (!pos) {
      fmt::print(stderr, "error: {}\n", pos.message());
      return 1;
    }
    auto ft = parse_file_type(pos->type);
    if (!ft) {
      fmt::print(stderr, "error: unknown type '{}' (known: {})\n", pos->type, type_list());
      return 1;
    }
    if (pos->n_threads >= 0 && o->n_threads > 0) {
      fmt::print(stderr, "error: threads given twice (-t {} and {} after the type)\n", o->n_threads, pos->n_threads);
      return 1;
    }
    q.mix.ftype = *ft;
    q.mix.pure = o->pure;
    q.mix.leave_output = o->leave_output;
    for (auto [text, dst] : {std::pair{&o->token_embd_type, &q.mix.token_embd_type}, std::pair{&o->output_type, &q.mix.output_type}}) {
      if (text->empty()) continue;
      auto t = parse_weight_type(*text);
      if (!t) {
        fmt::print(stderr, "error: unknown tensor type '{}'\n", *text);
        return 1;
      }
      *dst = *t;
    }
    q.n_threads = pos->n_threads >= 0 ? pos->n_threads : o->n_threads;
    if (!o->quiet) q.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    q.cancel = stop_on_interrupt();
    // A checkpoint folder's tokenizer.json also goes in as llama.cpp's tokenizer.ggml.* keys, so that
    // llama.cpp and ollama load the file too; glia reads the tokenizer.json either way.
    // A tokenizer that does not load at all is refused: the output would run nowhere.
    q.add_metadata = [in_path = o->in](const gguf::file& in, gguf::writer& keys) -> status {
      auto note = tok::write_ggml_tokenizer(in, keys);
      if (!note) return make_error("{}: {} (the output would load nowhere)", in_path, note.message());
      if (!note->empty())
        fmt::print(stderr, "note: no tokenizer.ggml.* keys for llama.cpp and ollama, which then cannot load the output: {}\n",
                   *note);
      if (status s = tok::write_ggml_chat_templates(in, keys); !s)
        fmt::print(stderr, "note: no tokenizer.chat_template for llama.cpp: {}\n", s.message());
      return {};
    };
    const auto t0 = std::chrono::steady_clock::now();
    auto r = quantize_model(o->in, pos->out, q);
    if (!r) {
      fmt::print(stderr, "error: {}\n", r.message());
      return 1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "quantized {} of {} tensors to {}: {:.2f} MiB -> {:.2f} MiB in {:.1f} s, wrote {}\n", r->n_quantized,
               r->n_tensors, find_file_type(*ft)->name, double(r->bytes_in) / (1 << 20), double(r->bytes_out) / (1 << 20), s,
               pos->out);
    return 0;
  };
}

}  // namespace glia::cli
