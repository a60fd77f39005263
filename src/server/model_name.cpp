#include "server/model_name.h"

#include <filesystem>

namespace glia::server {

std::string served_model_name(const std::string& model_path, const std::string& general_name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::path(model_path).lexically_normal();
  const bool folder = fs::is_directory(p, ec) || p.filename() == "config.json";
  if (folder && !general_name.empty()) return general_name;
  if (p.filename().empty()) p = p.parent_path();  // "dir/"
  if (p.filename() == "config.json") p = p.parent_path();
  const std::string name = fs::absolute(p, ec).lexically_normal().filename().string();
  return name.empty() ? model_path : name;
}

}  // namespace glia::server
