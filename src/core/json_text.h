// JSON text of a value whose strings may hold bytes that are not UTF-8 (file paths, GGUF names and
// metadata, user input). nlohmann's default dump() throws on such bytes, and an exception there
// takes down a whole run (a bench's results, a chat); these become U+FFFD instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace glia {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}
// The same for a value that keeps its members in insertion order (what a client wrote).
inline std::string ordered_json_text(const nlohmann::ordered_json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace glia
