#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace glia::server {

std::string api_error::type() const {
  if (code == "model_not_found") return "invalid_request_error";  // OpenAI's 404 for an unknown model
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 503: return "server_busy";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string api_error::to_json() const {
  nlohmann::json e = {{"message", message}, {"type", type()}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return json_text(nlohmann::json{{"error", e}});  // the message may quote client bytes
}

}  // namespace glia::server
