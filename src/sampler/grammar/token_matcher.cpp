#include "sampler/grammar/token_matcher.h"

namespace glia::grammar {
namespace {

// Memo sizes past which the caches restart (a long generation through a grammar with counters, such
// as a maxLength, keeps meeting new states; nesting makes each state's stacks deeper).
constexpr size_t max_states = 200'000;
constexpr size_t max_state_positions = size_t(16) << 20;  // 64 MiB of stack positions
constexpr size_t max_masks = 64;

uint64_t mask_key(uint32_t state, const utf8_partial& p) {
  return (uint64_t(state) << 32) | (uint64_t(p.value) << 8) | (uint64_t(p.have) << 4) | p.need;
}

}  // namespace

size_t token_matcher::hash_of(const stack_set& s) {
  uint64_t h = 1469598103934665603ull;
  for (const stack& st : s) {
    for (uint32_t p : st) h = (h ^ p) * 1099511628211ull;
    h = (h ^ 0xFFFFFFFFull) * 1099511628211ull;  // stack boundary
  }
  return size_t(h);
}

token_matcher::token_matcher(std::shared_ptr<const compiled> g, std::shared_ptr<const token_vocab> v)
    : g_(std::move(g)), vocab_(std::move(v)) {
  intern({});  // state 0: dead
  reset();
}

// The memo stays: it holds the same grammar's states, which a new generation (the next chat turn)
// meets again.
void token_matcher::reset() {
  // parse_gbnf checked that the start is within the matcher's bounds.
  state_ = intern(initial_stacks(*g_).value_or(stack_set{}));
  partial_ = {};
  current_mask_ = nullptr;
}

uint32_t token_matcher::intern(stack_set s) {
  const size_t h = hash_of(s);
  for (auto [it, end] = ids_.equal_range(h); it != end; ++it)
    if (states_[it->second] == s) return it->second;
  const uint32_t id = uint32_t(states_.size());
  ids_.emplace(h, id);
  for (const stack& st : s) state_positions_ += st.size() + 1;
  states_.push_back(std::move(s));
  return id;
}

uint32_t token_matcher::step(uint32_t state, uint32_t cp) {
  if (state == dead) return dead;
  const uint64_t key = (uint64_t(state) << 21) | cp;
  auto it = steps_.find(key);
  if (it != steps_.end()) return it->second;
  std::optional<stack_set> after = advance(*g_, states_[state], cp);
  // Past the matcher's bounds: the character is not allowed (the grammar is too ambiguous or nests
  // too deep there).
  const uint32_t next = after ? intern(std::move(*after)) : dead;
  steps_.emplace(key, next);
  return next;
}

bool token_matcher::partial_viable(uint32_t state, const utf8_partial& p) const {
  if (p.empty()) return state != dead;
  const auto [lo, hi] = utf8_partial_range(p);
  for (const stack& st : states_[state])
    if (!st.empty() && range_may_match(g_->elements[st.back()], lo, hi)) return true;
  return false;
}

bool token_matcher::complete() const { return partial_.empty() && is_complete(states_[state_]); }

bool token_matcher::finished() const {
  for (const stack& st : states_[state_])
    if (!st.empty()) return false;
  return true;
}

void token_matcher::trim_caches() {
  const bool states_full = states_.size() > max_states || state_positions_ > max_state_positions;
  if (!states_full && masks_.size() < max_masks) return;
  if (states_full) {
    stack_set cur = states_[state_];
    states_.clear();
    ids_.clear();
    state_positions_ = 0;
    steps_.clear();
    intern({});
    state_ = intern(std::move(cur));
  }
  masks_.clear();
  current_mask_ = nullptr;
}

const std::vector<uint64_t>& token_matcher::allowed() {
  if (current_mask_) return *current_mask_;
  trim_caches();
  const uint64_t key = mask_key(state_, partial_);
  auto it = masks_.find(key);
  if (it == masks_.end()) {
    std::vector<uint64_t> bits((size_t(vocab_->n_vocab()) + 63) / 64, 0);
    compute_mask(bits);
    it = masks_.emplace(key, std::move(bits)).first;
  }
  current_mask_ = &it->second;
  return *current_mask_;
}

// Depth-first over the vocabulary trie from the current state: a subtree is entered only while the
// bytes so far keep some stack alive, so rejected prefixes cost one step however many tokens share them.
void token_matcher::compute_mask(std::vector<uint64_t>& bits) {
  auto set = [&](int32_t id) { bits[size_t(id) / 64] |= uint64_t(1) << (id % 64); };
  if (complete())
    for (int32_t id : vocab_->eog()) set(id);
  if (state_ == dead) return;
  const auto nodes = vocab_->nodes();
  const auto ids = vocab_->token_ids();
  struct frame {
    uint32_t node, state;
    utf8_partial partial;
  };
  std::vector<frame> todo{{0, state_, partial_}};
  while (!todo.empty()) {
    const frame f = todo.back();
    todo.pop_back();
    const token_vocab::node& n = nodes[f.node];
    for (uint32_t t = 0; t < n.n_tokens; ++t) set(ids[n.first_token + t]);
    for (uint32_t c = 0; c < n.n_children; ++c) {
      const uint32_t child = n.first_child + c;
      utf8_partial p = f.partial;
      uint32_t cp = 0;
      switch (feed_utf8(p, nodes[child].byte, cp)) {
        case utf8_step::invalid:
          break;
        case utf8_step::done:
          if (const uint32_t s = step(f.state, cp); s != dead) todo.push_back({child, s, {}});
          break;
        case utf8_step::more:
          if (partial_viable(f.state, p)) todo.push_back({child, f.state, p});
          break;
      }
    }
  }
}

void token_matcher::go_to(const position& p) {
  state_ = intern(p.stacks);
  partial_ = p.partial;
  current_mask_ = nullptr;
}

bool token_matcher::token_allowed(int32_t id) {
  if (current_mask_) return is_allowed(id);
  if (id < 0 || id >= vocab_->n_vocab()) return false;
  if (vocab_->is_eog(id)) return complete();
  const std::string& piece = vocab_->piece(id);
  if (piece.empty()) return false;
  uint32_t state = state_;
  utf8_partial p = partial_;
  for (char c : piece) {
    uint32_t cp = 0;
    const utf8_step st = feed_utf8(p, uint8_t(c), cp);
    if (st == utf8_step::invalid) return false;
    if (st == utf8_step::done && (state = step(state, cp)) == dead) return false;
  }
  return partial_viable(state, p);
}

bool token_matcher::accept(int32_t id) {
  if (!token_allowed(id)) return false;
  if (vocab_->is_eog(id)) return true;  // the text is complete; nothing to follow
  return accept_text(vocab_->piece(id));
}

bool token_matcher::accept_text(std::string_view text) {
  uint32_t state = state_;
  utf8_partial p = partial_;
  for (char c : text) {
    uint32_t cp = 0;
    const utf8_step st = feed_utf8(p, uint8_t(c), cp);
    if (st == utf8_step::invalid) return false;
    if (st == utf8_step::done) state = step(state, cp);
  }
  if (state == dead) return false;
  state_ = state;
  partial_ = p;
  current_mask_ = nullptr;
  return true;
}

}  // namespace glia::grammar
