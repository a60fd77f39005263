#include "runtime/tensor_dump.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace glia {

tensor_dumper::tensor_dumper(std::string pattern, std::string dir, int n_positions)
    : dir_(std::move(dir)), n_positions_(n_positions) {
  size_t start = 0;
  while (start <= pattern.size()) {
    size_t comma = pattern.find(',', start);
    if (comma == std::string::npos) comma = pattern.size();
    if (comma > start) patterns_.push_back(pattern.substr(start, comma - start));
    start = comma + 1;
  }
}

std::string tensor_dumper::full_name(const char* name, int layer) {
  return layer >= 0 ? fmt::format("blk.{}.{}", layer, name) : std::string(name);
}

bool tensor_dumper::matches(const std::string& name) const {
  for (const auto& p : patterns_)
    if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

tensor_tap tensor_dumper::tap() {
  return [this](const char* name, int layer, const float* data, int64_t n_rows, int64_t n_cols,
                std::span<const int32_t> positions) {
    const std::string full = full_name(name, layer);
    if (!matches(full)) {
      // The names of layer 0 and outside the layers, to show when nothing matched.
      if (layer <= 0 && seen_.size() < 64 && std::find(seen_.begin(), seen_.end(), full) == seen_.end())
        seen_.push_back(full);
      return;
    }
    auto [it, inserted] = tensors_.try_emplace(full);
    captured& c = it->second;
    if (inserted) {
      c.layer = layer;
      c.n_cols = n_cols;
      order_.push_back(full);
    }
    if (c.n_cols != n_cols) return;
    for (int64_t r = 0; r < n_rows && r < int64_t(positions.size()); ++r) {
      if (int(c.positions.size()) >= n_positions_) break;
      c.positions.push_back(positions[size_t(r)]);
      c.data.insert(c.data.end(), data + r * n_cols, data + (r + 1) * n_cols);
    }
  };
}

result<std::string> tensor_dumper::finish() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return make_error("--dump-dir {}: {}", dir_, ec.message());
  nlohmann::json index = nlohmann::json::array();
  std::string stats;
  for (const auto& name : order_) {
    const captured& c = tensors_[name];
    const std::string file = name + ".f32";
    std::ofstream out(dir_ + "/" + file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(c.data.data()), std::streamsize(c.data.size() * sizeof(float)));
    if (!out) return make_error("cannot write {}/{}", dir_, file);
    double sum_sq = 0.0;
    float abs_max = 0.0f;
    int64_t nan = 0, inf = 0;
    for (float v : c.data) {
      if (std::isnan(v)) ++nan;
      else if (std::isinf(v)) ++inf;
      else {
        abs_max = std::max(abs_max, std::fabs(v));
        sum_sq += double(v) * v;
      }
    }
    const double rms = c.data.empty() ? 0.0 : std::sqrt(sum_sq / double(c.data.size()));
    index.push_back({{"name", name}, {"layer", c.layer}, {"file", file}, {"dtype", "f32"},
                     {"shape", {int64_t(c.positions.size()), c.n_cols}}, {"positions", c.positions}});
    stats += fmt::format("{:<24} [{} x {}] absmax {:.6g} rms {:.6g} nan {} inf {}\n", name, c.positions.size(), c.n_cols,
                         abs_max, rms, nan, inf);
  }
  std::ofstream idx(dir_ + "/index.json");
  idx << json_text(index, 2) << "\n";
  if (!idx) return make_error("cannot write {}/index.json", dir_);
  if (order_.empty()) {
    std::string names;
    for (const auto& n : seen_) names += (names.empty() ? "" : ", ") + n;
    stats = fmt::format("no tensor name matched; this model's are {} (and blk.N.* for every layer N)\n",
                        names.empty() ? "(none: nothing was evaluated)" : names);
  }
  return stats;
}

}  // namespace glia
