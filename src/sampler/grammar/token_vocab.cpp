#include "sampler/grammar/token_vocab.h"

#include <algorithm>
#include <deque>
#include <numeric>

namespace glia::grammar {

token_vocab::token_vocab(const std::vector<std::string>& pieces, std::vector<int32_t> eog)
    : pieces_(pieces), eog_(std::move(eog)), eog_flag_(pieces.size(), false) {
  for (int32_t id : eog_)
    if (id >= 0 && size_t(id) < eog_flag_.size()) eog_flag_[size_t(id)] = true;
  std::vector<int32_t> order;
  for (int32_t id = 0; id < int32_t(pieces_.size()); ++id)
    if (!pieces_[size_t(id)].empty() && !eog_flag_[size_t(id)]) order.push_back(id);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return pieces_[size_t(a)] != pieces_[size_t(b)] ? pieces_[size_t(a)] < pieces_[size_t(b)] : a < b;
  });
  ids_.reserve(order.size());
  // Breadth first, so that each node's children are contiguous: (node, range of `order`, depth).
  // In sorted order the tokens ending at a node come first in its range, then one run per next byte.
  struct pending {
    uint32_t node;
    size_t lo, hi, depth;
  };
  nodes_.push_back(node{});
  std::deque<pending> queue{{0, 0, order.size(), 0}};
  while (!queue.empty()) {
    const pending q = queue.front();
    queue.pop_front();
    size_t i = q.lo;
    nodes_[q.node].first_token = uint32_t(ids_.size());
    while (i < q.hi && pieces_[size_t(order[i])].size() == q.depth) ids_.push_back(order[i++]);
    nodes_[q.node].n_tokens = uint32_t(ids_.size()) - nodes_[q.node].first_token;
    nodes_[q.node].first_child = uint32_t(nodes_.size());
    while (i < q.hi) {
      const uint8_t b = uint8_t(pieces_[size_t(order[i])][q.depth]);
      size_t j = i;
      while (j < q.hi && uint8_t(pieces_[size_t(order[j])][q.depth]) == b) ++j;
      node child;
      child.byte = b;
      queue.push_back({uint32_t(nodes_.size()), i, j, q.depth + 1});
      nodes_.push_back(child);
      ++nodes_[q.node].n_children;
      i = j;
    }
  }
}

}  // namespace glia::grammar
