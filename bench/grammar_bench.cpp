// What a grammar costs per generated token, next to a decode step (tens of ms for a 1B model on 2
// cores): the token mask for a JSON grammar on real vocabularies (Llama 3's 128k tokens, Gemma 3's
// 262k, ...). `first_mask`: a state never seen (the trie walk); `apply_cached_mask`: a state met
// before (its memoised bits applied to the logits); `document_mask`: a JSON document replayed token
// by token (mask + accept per token, caches cold at the start), reported per token; `bounded_`: the
// same schema with maxLength on its strings (a new state per character), with every mask or with
// only the chosen token checked (what a greedy pick needs when its best token is allowed).
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sampler/grammar/constraint.h"
#include "sampler/grammar/token_matcher.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string testdata(const std::string& rel) { return std::string(GLIA_TESTDATA) + "/" + rel; }

// A JSON schema of the kind function calling and extraction use.
constexpr std::string_view schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0},
    "email": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                "required": ["street", "city"]}
  },
  "required": ["name", "age", "email", "tags", "address"]
})";

// The same with string lengths bounded: every position inside a string is a state of its own.
constexpr std::string_view bounded_schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 100},
    "age": {"type": "integer", "minimum": 0},
    "email": {"type": "string", "maxLength": 100},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 100}},
    "address": {"type": "object", "properties": {"street": {"type": "string", "maxLength": 100}, "city": {"type": "string", "maxLength": 100}},
                "required": ["street", "city"]}
  },
  "required": ["name", "age", "email", "tags", "address"]
})";

constexpr std::string_view document =
    R"({"name": "Margaret Hamilton", "age": 88, "email": "margaret@example.com", "tags": ["software engineering", )"
    R"("Apollo guidance computer", "MIT Instrumentation Laboratory", "résumé ünïcode — 数学"], "address": {"street": )"
    R"("1 Memorial Drive, Cambridge, Massachusetts", "city": "Boston"}})";

struct vocab_case {
  std::shared_ptr<const glia::grammar::token_vocab> vocab;
  std::vector<int32_t> doc_ids;
};

// The document as a model constrained by the grammar could spell it: at each step the longest
// allowed token that the rest of the text starts with (a tokenizer's own ids may start with a space
// that the grammar does not allow before the value).
std::vector<int32_t> spell(const glia::grammar::compiled_ptr& g, const std::shared_ptr<const glia::grammar::token_vocab>& v) {
  glia::grammar::token_matcher m(g, v);
  std::vector<int32_t> ids;
  std::string_view rest = document;
  while (!rest.empty()) {
    int32_t best = -1;
    for (int32_t id = 0; id < v->n_vocab(); ++id) {
      const std::string& p = v->piece(id);
      if (!p.empty() && rest.starts_with(p) && m.is_allowed(id) && (best < 0 || p.size() > v->piece(best).size())) best = id;
    }
    if (best < 0 || !m.accept(best)) throw std::runtime_error("the document leaves the grammar at: " + std::string(rest.substr(0, 20)));
    ids.push_back(best);
    rest.remove_prefix(v->piece(best).size());
  }
  return ids;
}

vocab_case load(const std::string& dir, const glia::grammar::compiled_ptr& g) {
  auto t = glia::tokenizer::from_hf(dir);
  if (!t) throw std::runtime_error(dir + ": " + t.message());
  const glia::tokenizer& tok = **t;
  std::vector<std::string> pieces(size_t(tok.n_vocab()));
  for (int32_t id = 0; id < tok.n_vocab(); ++id) pieces[size_t(id)] = tok.token_to_piece(id, false);
  vocab_case c;
  c.vocab = std::make_shared<const glia::grammar::token_vocab>(pieces, tok.vocab().eog_ids);
  c.doc_ids = spell(g, c.vocab);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  auto g = glia::grammar::from_json_schema_text(schema);
  auto bounded = glia::grammar::from_json_schema_text(bounded_schema);
  if (!g || !bounded) {
    fmt::print(stderr, "schema: {}\n", g ? bounded.message() : g.message());
    return 1;
  }
  std::vector<vocab_case> keep;
  keep.reserve(4);
  for (const char* name : {"llama2", "llama3", "qwen3", "gemma3"}) {
    keep.push_back(load(testdata(std::string("tokenizers/") + name), *g));
    const vocab_case* c = &keep.back();
    const glia::grammar::compiled_ptr gp = *g;
    fmt::print(stderr, "{}: {} tokens, the document in {} tokens\n", name, c->vocab->n_vocab(), c->doc_ids.size());
    // Just inside the first string value: the state whose mask allows nearly every token (the
    // largest walk), not yet masked (accept() masks the states it leaves, not the one it enters).
    auto into_string = [c, gp] {
      auto m = std::make_unique<glia::grammar::token_matcher>(gp, c->vocab);
      std::string text;
      for (size_t i = 0; i < c->doc_ids.size() && text.find(": \"") == std::string::npos; ++i) {
        if (!m->accept(c->doc_ids[i])) throw std::runtime_error("the document leaves the grammar");
        text += c->vocab->piece(c->doc_ids[i]);
      }
      return m;
    };
    benchmark::RegisterBenchmark((std::string("first_mask/") + name).c_str(), [into_string](benchmark::State& st) {
      for (auto _ : st) {
        st.PauseTiming();
        auto m = into_string();
        st.ResumeTiming();
        benchmark::DoNotOptimize(m->allowed().data());
      }
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("apply_cached_mask/") + name).c_str(), [into_string, c](benchmark::State& st) {
      auto m = into_string();
      m->allowed();
      std::vector<float> logits(size_t(c->vocab->n_vocab()), 1.0f);
      for (auto _ : st) {
        // What the sampler does with a state met before: the memoised bits over the logits.
        const std::vector<uint64_t>& bits = m->allowed();
        for (size_t id = 0; id < logits.size(); ++id)
          if (!glia::grammar::mask_has(bits, id)) logits[id] = -INFINITY;
        benchmark::DoNotOptimize(logits.data());
      }
    })->Unit(benchmark::kMicrosecond);
    // mask: every token's mask, as sampling at a temperature needs; checks: only the chosen token's
    // text, as a greedy pick whose best token the grammar allows needs.
    for (const auto& [label, grammar, full_mask] : {std::tuple{"document_mask_per_token/", gp, true},
                                                    std::tuple{"bounded_document_mask_per_token/", *bounded, true},
                                                    std::tuple{"bounded_document_checks_per_token/", *bounded, false}}) {
      benchmark::RegisterBenchmark((std::string(label) + name).c_str(), [c, grammar, full_mask](benchmark::State& st) {
        for (auto _ : st) {
          glia::grammar::token_matcher m(grammar, c->vocab);
          for (int32_t id : c->doc_ids) {
            if (full_mask) benchmark::DoNotOptimize(m.allowed().data());
            else benchmark::DoNotOptimize(m.token_allowed(id));
            if (!m.accept(id)) throw std::runtime_error("the document leaves the grammar");
          }
        }
        st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(c->doc_ids.size()));
      })->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
