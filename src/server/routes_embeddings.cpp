// POST /v1/embeddings (OpenAI's): the model's final hidden states pooled per input, as llama-server
// (--embeddings) and vLLM serve them for embedding models built on decoders (Qwen3-Embedding).
#include <fmt/core.h>

#include <atomic>
#include <cmath>
#include <future>

#include "core/json_text.h"
#include "core/unit_length.h"
#include "server/connection.h"
#include "server/request.h"
#include "server/request_fields.h"
#include "server/responses.h"
#include "server/server_state.h"

namespace glia::server {
namespace {

using nlohmann::json;

constexpr size_t max_inputs = 2048;  // OpenAI's limit per request

// Hand-written: no library glia uses offers base64 (cpp-httplib's is internal), and OpenAI's SDKs
// ask for it by default (encoding_format "base64": the float32 values' little-endian bytes).
std::string base64_of(const std::vector<float>& v) {
  static constexpr char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* b = reinterpret_cast<const uint8_t*>(v.data());
  const size_t n = v.size() * sizeof(float);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t w = uint32_t(b[i]) << 16 | (i + 1 < n ? uint32_t(b[i + 1]) << 8 : 0) | (i + 2 < n ? uint32_t(b[i + 2]) : 0);
    out += digits[(w >> 18) & 63];
    out += digits[(w >> 12) & 63];
    out += i + 1 < n ? digits[(w >> 6) & 63] : '=';
    out += i + 2 < n ? digits[w & 63] : '=';
  }
  return out;
}

// The inputs as token ids: a string, a list of strings, a list of ids (one input), or a list of lists.
api_result<std::vector<std::vector<int32_t>>> read_inputs(const server_state& st, const json& input) {
  const session& s = st.sess();
  std::vector<std::vector<int32_t>> out;
  auto from_text = [&](const json& t) -> std::optional<api_error> {
    if (t.get_ref<const std::string&>().empty()) return bad_request("an input is an empty string", "input");
    // As llama-server reads them: the model's BOS/EOS added (embedding models end on their EOS),
    // special-token text as the token.
    auto ids = s.tokenize(t.get<std::string>(), true, true);
    if (!ids) return bad_request(ids.message(), "input");
    out.push_back(std::move(*ids));
    return std::nullopt;
  };
  auto from_ids = [&](const json& a) -> std::optional<api_error> {
    std::vector<int32_t> ids;
    for (const json& t : a) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= s.n_vocab())
        return bad_request(fmt::format("input token ids must be integers in 0..{}, got {}", s.n_vocab() - 1, t.dump()), "input");
      ids.push_back(int32_t(t.get<int64_t>()));
    }
    if (ids.empty()) return bad_request("an input is an empty list of token ids", "input");
    out.push_back(std::move(ids));
    return std::nullopt;
  };
  if (input.is_string()) {
    if (auto e = from_text(input)) return *e;
  } else if (input.is_array() && !input.empty()) {
    if (input.size() > max_inputs) return bad_request(fmt::format("'input' has {} items, at most {} are taken", input.size(), max_inputs), "input");
    if (input[0].is_number()) {
      if (auto e = from_ids(input)) return *e;
    } else {
      for (const json& item : input) {
        if (item.type() != input[0].type())
          return bad_request("'input' mixes strings with token id lists (a list holds one kind)", "input");
        std::optional<api_error> e;
        if (item.is_string()) e = from_text(item);
        else if (item.is_array()) e = from_ids(item);
        else e = bad_request(fmt::format("'input' items must be strings or lists of token ids, got {}", json_type_name(item)), "input");
        if (e) return *e;
      }
    }
  } else {
    return bad_request(fmt::format("'input' must be a string or a non-empty list, got {}", json_type_name(input)), "input");
  }
  for (const auto& ids : out)
    if (int64_t(ids.size()) > s.n_ctx())
      return bad_request(fmt::format("an input has {} tokens, but the context holds {}", ids.size(), s.n_ctx()), "input");
  return out;
}

void embeddings(server_state& st, const httplib::Request& req, httplib::Response& res) {
  if (!st.ready.load() || st.draining.load()) {
    res.set_header("Retry-After", "1");
    return send_error(res, api_error{503, st.ready.load() ? "the server is shutting down" : "the model is still loading"});
  }
  auto body = parse_json_object(req.body);
  if (!body.ok()) return send_error(res, body.error());
  const json& obj = body.value();
  for (const auto& [k, v] : obj.items())
    if (k != "input" && k != "model" && k != "encoding_format" && k != "dimensions" && k != "user")
      return send_error(res, bad_request(fmt::format("unknown field '{}'", shown(k)), k));
  if (!obj.contains("input")) return send_error(res, bad_request("'input' is required", "input"));
  std::optional<std::string> model, format;
  if (auto e = read_string(obj, "model", model)) return send_error(res, *e);
  if (auto e = read_string(obj, "encoding_format", format)) return send_error(res, *e);
  if (format && *format != "float" && *format != "base64")
    return send_error(res, bad_request(fmt::format("'encoding_format' must be \"float\" or \"base64\", got \"{}\"", shown(*format)), "encoding_format"));
  const int n_embd = st.sess().n_embd();
  std::optional<int64_t> dims;
  if (auto e = read_int(obj, "dimensions", 1, n_embd, dims)) return send_error(res, *e);
  auto inputs = read_inputs(st, obj["input"]);
  if (!inputs.ok()) return send_error(res, inputs.error());
  int64_t n_tokens = 0;
  for (const auto& ids : inputs.value()) n_tokens += int64_t(ids.size());

  // On the engine thread, between generation steps (the forward pass is not shared across threads),
  // an input per task so that generation steps run between them.
  const in_flight_guard guard(st);
  const session::pooling how = st.pooling ? *st.pooling : st.sess().embedding_pooling();
  auto gone = std::make_shared<std::atomic<bool>>(false);  // the client left: what is left is skipped
  std::vector<std::future<result<std::vector<float>>>> answers;
  for (auto& ids : inputs.value()) {
    auto done = std::make_shared<std::promise<result<std::vector<float>>>>();
    answers.push_back(done->get_future());
    const auto submitted = st.sched->run_between_steps([done, gone, how, ids = std::move(ids)](session& s) {
      if (gone->load()) return done->set_value(error{"the client went away"});
      try {
        done->set_value(s.embed(ids, how, true));
      } catch (const std::exception& e) {  // memory for its cache, above all: the server goes on
        done->set_value(error{fmt::format("the embedding failed: {}", e.what())});
      }
    });
    if (submitted != submit_result::accepted) {
      gone->store(true);
      res.set_header("Retry-After", "1");
      return send_error(res, api_error{503, submitted == submit_result::queue_full ? "too many requests are waiting; retry later"
                                                                                    : "the server is shutting down"});
    }
  }
  const int client_fd = find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  std::vector<std::vector<float>> vectors;
  for (auto& answer : answers) {
    // The socket is looked at between answers too: short inputs take less than a poll's wait.
    if (peer_closed(client_fd)) gone->store(true);
    while (answer.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
      if (peer_closed(client_fd)) gone->store(true);
    auto v = answer.get();
    if (!v) {
      gone->store(true);
      return send_error(res, api_error{500, v.message()});
    }
    vectors.push_back(std::move(*v));
  }
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    std::vector<float>& v = vectors[i];
    if (dims && *dims < n_embd) {
      // Matryoshka truncation (what "dimensions" asks of models trained for it), at unit length again.
      v.resize(size_t(*dims));
      scale_to_unit_length(v);
    }
    json e = {{"object", "embedding"}, {"index", i}};
    if (format.value_or("float") == "base64") e["embedding"] = base64_of(v);
    else e["embedding"] = v;
    data.push_back(std::move(e));
  }
  res.set_content(json_text({{"object", "list"},
                             {"data", data},
                             {"model", model ? *model : st.model_name},
                             {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}}),
                  "application/json");
}

}  // namespace

void add_embedding_routes(httplib::Server& svr, server_state& st) {
  add_route(svr, st, "POST", "/v1/embeddings", [&st](const httplib::Request& req, httplib::Response& res) { embeddings(st, req, res); });
  add_route(svr, st, "POST", "/embeddings", [&st](const httplib::Request& req, httplib::Response& res) { embeddings(st, req, res); });
}

}  // namespace glia::server
