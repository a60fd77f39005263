#include "http_helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

namespace glia::test {

namespace {
http_reply from(const httplib::Result& r) {
  http_reply h;
  if (!r) return h;
  h.status = r->status;
  h.body = r->body;
  h.headers = r->headers;
  return h;
}
httplib::Headers auth(const std::string& key) {
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  return h;
}
}  // namespace

http_reply get(const server_process& s, const std::string& path, const std::string& api_key) {
  auto c = s.client();
  return from(c.Get(path.c_str(), auth(api_key)));
}

http_reply post(const server_process& s, const std::string& path, const std::string& body, const std::string& api_key) {
  return post_with_headers(s, path, body, auth(api_key));
}

http_reply post_with_headers(const server_process& s, const std::string& path, const std::string& body, const httplib::Headers& headers) {
  auto c = s.client();
  return from(c.Post(path.c_str(), headers, body, "application/json"));
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    else if (!ev.empty()) out.push_back("<malformed>" + ev);
    pos = end + 2;
  }
  return out;
}

stream_result parse_stream(const std::string& body, bool chat) {
  stream_result r;
  std::string id;
  for (const auto& p : sse_payloads(body)) {
    if (r.done) r.well_formed = false;  // nothing may follow [DONE]
    if (p == "[DONE]") {
      r.done = true;
      continue;
    }
    auto j = nlohmann::json::parse(p, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("choices")) {
      r.well_formed = false;
      continue;
    }
    if (id.empty()) id = j.value("id", "");
    if (j.value("id", "") != id) r.well_formed = false;
    if (j.contains("usage") && !j["usage"].is_null()) r.usage = j["usage"];
    for (const auto& c : j["choices"]) {
      if (chat) {
        if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
          r.text += c["delta"]["content"].get<std::string>();
      } else if (c.contains("text")) {
        r.text += c["text"].get<std::string>();
      }
      if (c.contains("finish_reason") && c["finish_reason"].is_string()) r.finish_reason = c["finish_reason"];
    }
    r.chunks.push_back(std::move(j));
  }
  return r;
}
// A connected socket with `request` sent; -1 on failure.
int send_raw(const server_process& s, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(s.port()));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  (void)!write(fd, request.data(), request.size());
  return fd;
}

std::string post_request(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}


std::string read_raw_reply(int fd, int timeout_ms) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const size_t head_end = got.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const size_t cl = got.find("Content-Length: ");
      if (cl != std::string::npos && cl < head_end &&
          got.size() >= head_end + 4 + std::stoul(got.substr(cl + 16, got.find("\r\n", cl) - cl - 16)))
        break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  close(fd);
  return got;
}

std::string complete_greedy(const server_process& s, const std::string& prompt, int max_tokens) {
  nlohmann::json req = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  auto r = post(s, "/v1/completions", req);
  auto j = r.json();
  if (r.status != 200 || j.is_discarded()) return "<error " + std::to_string(r.status) + ": " + r.body + ">";
  return j["choices"][0]["text"].get<std::string>();
}

}  // namespace glia::test
