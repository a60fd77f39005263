#include "token_ids.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace glia::cli {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

result<std::vector<int32_t>> parse_token_ids(std::string_view text) {
  std::string_view s = trimmed(text);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = trimmed(s.substr(1, s.size() - 2));
  std::vector<int32_t> ids;
  while (!s.empty()) {
    size_t end = 0;
    while (end < s.size() && s[end] != ',' && !is_space(s[end])) ++end;
    const std::string_view item = s.substr(0, end);
    int32_t id = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty()) return make_error("--ids: an empty item after {} ids", ids.size());
    if (ec != std::errc{} || p != item.data() + item.size())
      return make_error("--ids: '{}' is not a token id", item.substr(0, 40));
    ids.push_back(id);
    s = trimmed(s.substr(end));
    if (!s.empty() && s.front() == ',') {
      s = trimmed(s.substr(1));
      if (s.empty()) return make_error("--ids: the list ends with a comma (after {} ids)", ids.size());
    }
  }
  if (ids.empty()) return make_error("--ids: no token ids given");
  return ids;
}

result<std::vector<int32_t>> read_token_ids(const std::string& arg) {
  if (!arg.starts_with('@')) return parse_token_ids(arg);
  const std::string path = arg.substr(1);
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (std::filesystem::is_directory(path, ec) || !in) return make_error("--ids {}: cannot read the file", arg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error("--ids {}: cannot read the file", arg);
  auto ids = parse_token_ids(text);
  if (!ids) return make_error("{} (in {})", ids.message(), path);
  return ids;
}

}  // namespace glia::cli
