// Tokenizer throughput: MB/s of UTF-8 text encoded per tokenizer, single-threaded (Google Benchmark).
//
//   glia-bench-tokenizer                          # the pack's tokenizers on a generated 4 MiB text
//   glia-bench-tokenizer --text FILE              # your own text instead
//   glia-bench-tokenizer --tokenizer DIR|FILE.gguf [--tokenizer ...]
//   (Google Benchmark's own flags pass through, e.g. --benchmark_repetitions=3)
//
// The default text is English-like prose: whole-word pieces of Mistral's 32k vocabulary (the pack's
// llama2/ folder; BPE vocabularies list tokens in merge order, roughly by frequency) drawn by Zipf's
// law, with sentence capitalisation, punctuation, numbers and paragraph breaks, and one line in twenty
// from the pack's tokenizer test strings (accents, CJK, emoji, code, whitespace runs).
// Every word is drawn afresh, so a tokenizer that caches whole words is not flattered by repetition
// beyond what real text has.
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string testdata(const std::string& rel) { return std::string(GLIA_TESTDATA) + "/" + rel; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// words: English words in frequency order (most frequent first).
std::string english_like_text(const std::vector<std::string>& words, size_t bytes) {
  // Zipf's law: the word of rank r appears with frequency ~ 1 / (r + 10).
  std::vector<double> weights(words.size());
  for (size_t r = 0; r < words.size(); ++r) weights[r] = 1.0 / double(r + 10);
  std::vector<std::string> mixed;
  for (const auto& s : nlohmann::json::parse(read_all(testdata("tokenizers/strings.json")))) mixed.push_back(s);

  std::mt19937_64 rng(20261130);
  std::discrete_distribution<size_t> pick_word(weights.begin(), weights.end());
  std::uniform_int_distribution<int> percent(0, 99);
  std::string text;
  text.reserve(bytes + 256);
  while (text.size() < bytes) {
    if (percent(rng) < 5 && !mixed.empty()) {
      text += mixed[rng() % mixed.size()];
      text += '\n';
      continue;
    }
    const int n_sentences = 2 + percent(rng) % 5;
    for (int s = 0; s < n_sentences; ++s) {
      const int n_words = 4 + percent(rng) % 20;
      for (int w = 0; w < n_words; ++w) {
        std::string word = percent(rng) < 3 ? std::to_string(rng() % 100000) : words[pick_word(rng)];
        if (w == 0 && !word.empty() && word[0] >= 'a' && word[0] <= 'z') word[0] = char(word[0] - 'a' + 'A');
        text += word;
        if (w + 1 < n_words) text += percent(rng) < 6 ? ", " : " ";
      }
      const int end = percent(rng);
      text += end < 80 ? ". " : end < 90 ? "? " : end < 95 ? "! " : "; ";
    }
    text += "\n\n";
  }
  return text;
}

// The vocabulary's whole English words (" word" pieces of letters only), in id order.
std::vector<std::string> words_of(const glia::tokenizer& tok) {
  std::vector<std::string> words;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const std::string piece = tok.token_to_piece(id);
    if (piece.size() < 2 || piece[0] != ' ') continue;
    bool letters = true;
    for (size_t i = 1; i < piece.size() && letters; ++i) letters = (piece[i] | 0x20) >= 'a' && (piece[i] | 0x20) <= 'z';
    if (letters) words.push_back(piece.substr(1));
  }
  return words;
}

std::unique_ptr<glia::tokenizer> load(const std::string& path) {
  if (path.ends_with(".gguf")) {
    auto f = glia::gguf::file::open(path);
    if (!f) throw std::runtime_error(f.message());
    auto t = glia::tokenizer::from_gguf(**f);
    if (!t) throw std::runtime_error(path + ": " + t.message());
    return std::move(*t);
  }
  auto t = glia::tokenizer::from_hf(path);
  if (!t) throw std::runtime_error(t.message());
  return std::move(*t);
}

std::string label_of(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p.substr(p.find_last_of('/') + 1);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<std::string> sources;
  std::string text_file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--tokenizer" || a == "-m") && i + 1 < argc) {
      sources.push_back(argv[++i]);
    } else if (a == "--text" && i + 1 < argc) {
      text_file = argv[++i];
    } else {
      fmt::print(stderr, "usage: {} [--tokenizer DIR|FILE.gguf]... [--text FILE] [--benchmark_* flags]\n", argv[0]);
      return 2;
    }
  }
  if (sources.empty())
    for (const char* d : {"llama3", "qwen3", "llama2", "gemma3"}) sources.push_back(testdata(std::string("tokenizers/") + d));

  try {
    const std::string text = text_file.empty() ? english_like_text(words_of(*load(testdata("tokenizers/llama2"))), size_t(4) << 20)
                                               : read_all(text_file);
    fmt::print(stderr, "text: {:.2f} MiB ({})\n", double(text.size()) / (1 << 20), text_file.empty() ? "generated" : text_file);
    std::vector<std::shared_ptr<glia::tokenizer>> keep;
    for (const auto& src : sources) {
      std::shared_ptr<glia::tokenizer> tok = load(src);
      keep.push_back(tok);
      benchmark::RegisterBenchmark(("encode/" + label_of(src)).c_str(), [tok, &text](benchmark::State& st) {
        size_t n_tokens = 0;
        for (auto _ : st) {
          auto ids = tok->encode(text, false, false);
          n_tokens = ids.size();
          benchmark::DoNotOptimize(ids.data());
        }
        st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(text.size()));
        st.counters["tokens"] = double(n_tokens);
        st.counters["tokens_per_s"] = benchmark::Counter(double(n_tokens) * double(st.iterations()), benchmark::Counter::kIsRate);
      })->Unit(benchmark::kMillisecond)->MinTime(2.0);
    }
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
