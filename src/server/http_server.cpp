// run_server: HTTP front (cpp-httplib), model loading, and the lifecycle: listen first so /health can
// answer 503 while the model loads; print the listening line once loaded; on SIGTERM/SIGINT refuse new
// generations, let the running ones finish (up to drain_seconds), then stop.
#include <fmt/core.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "server/connection.h"
#include "server/request_gate.h"
#include "server/model_name.h"
#include "server/server_state.h"

namespace glia::server {
namespace {

void count_status(server_state& st, int status) {
  if (status >= 500) st.stats.responses_5xx++;
  else if (status >= 400) st.stats.responses_4xx++;
}

status load(server_state& st) {
  const server_options& o = st.opts;
  session_options so_session = o.session;
  so_session.n_sequences = o.parallel;
  auto sess = session::create(so_session);
  if (!sess) return make_error("{}", sess.message());
  const session& s0 = **sess;
  if (const std::string w = s0.context_warning(); !w.empty()) fmt::print(stderr, "warning: {}\n", w);
  auto fmt_ = s0.chat_template(o.chat_template);
  if (!fmt_) return make_error("{}", fmt_.message());
  if (fmt_->fell_back) fmt::print(stderr, "warning: {}\n", fmt_->fallback_note);
  st.chat_fmt = served_template(*fmt_);
  auto tool_fmt = s0.chat_template(o.chat_template, true);
  st.tool_chat_fmt = served_template(tool_fmt ? *tool_fmt : *fmt_);
  st.template_kwargs = nlohmann::json::parse(o.chat_template_kwargs, nullptr, false);
  if (st.template_kwargs.is_discarded() || !st.template_kwargs.is_object())
    return make_error("--chat-template-kwargs must be a JSON object, such as '{{\"enable_thinking\": false}}'");
  sampler_params sp;
  status d = apply_gguf_sampling_defaults(sp, [&s0](std::string_view k) { return s0.metadata_number(k); });
  if (!d) fmt::print(stderr, "warning: {}\n", d.message());
  st.sampling_defaults = sp;
  st.model_name = served_model_name(o.session.model_path, s0.metadata_string("general.name").value_or(""));
  st.pooling = session::pooling_named(o.pooling);
  if (!st.pooling && !o.pooling.empty()) return make_error("--pooling must be mean, cls or last, got '{}'", o.pooling);
  st.model_loaded_at = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  scheduler_options so;
  so.max_queue = o.max_queue;
  // A prompt chunk is one segment of a batched forward, which holds at most the batch size (-b).
  so.prefill_chunk = std::min(o.prefill_chunk, std::max(1, o.session.n_ubatch));
  auto sched = scheduler::create(std::move(*sess), o.parallel, so, st.stats);
  if (!sched) return make_error("{}", sched.message());
  st.sched = std::move(*sched);
  return {};
}

}  // namespace

void add_route(httplib::Server& svr, server_state& st, const std::string& method, const std::string& path,
               httplib::Server::Handler handler) {
  st.endpoint_methods[path] = method;
  if (method == "GET") {
    svr.Get(path, std::move(handler));
    return;
  }
  // The body is read here rather than by the HTTP library, which caps form-encoded bodies (curl
  // -d's default content type) at 8 KiB whatever --max-body says; pre_route has checked the length.
  svr.Post(path, [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                                 const httplib::ContentReader& read) {
    httplib::Request with_body = req;
    const bool whole = read([&with_body](const char* data, size_t n) {
      with_body.body.append(data, n);
      return true;
    });
    // A body cut short (the client stopped sending, a timeout) is an error, never a request.
    if (!whole) return send_error_for(req, res, api_error{400, "the request body ended before its Content-Length"});
    handler(with_body, res);
    // A large body's JSON tree takes tens of times its bytes, in the arena of the thread that parsed
    // it, and glibc keeps an arena's peak for good: 8 such requests at once left 2.6 GB resident.
    // The tree is gone now: give the memory back (all arenas; a few ms, for bodies of a MiB and more).
    if (with_body.body.size() >= (size_t(1) << 20)) malloc_trim(0);
  });
}

int run_server(const server_options& opts) {
  // Signals go to the one thread that waits for them; a client that hangs up mid-write must not
  // kill the process with SIGPIPE.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  server_state st;
  st.opts = opts;
  httplib::Server svr;
  // Each waiting or generating request holds a handler thread, so there are enough for every slot and
  // queue place, plus room for health checks and metrics. An open connection holds a thread even
  // while idle (until the keep-alive timeout, 5 s), so that room is 32 threads, not a few: with 4, a
  // handful of idle keep-alive clients made /health wait seconds.
  const size_t n_threads = size_t(opts.parallel + opts.max_queue + 32);
  svr.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  // cpp-httplib's default socket options add SO_REUSEPORT, with which a second server on a port
  // already served binds without error and the kernel splits connections between the two (possibly
  // different models). SO_REUSEADDR alone still allows a restart while old connections linger.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  svr.set_payload_max_length(opts.max_body);
  svr.set_read_timeout(30, 0);
  svr.set_write_timeout(30, 0);
  svr.set_expect_100_continue_handler([&st](const httplib::Request& req, httplib::Response& res) { return expect_continue(st, req, res); });
  svr.set_pre_routing_handler([&st](const httplib::Request& req, httplib::Response& res) { return pre_route(st, req, res); });
  svr.set_error_handler([&st](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty()) {
      // No route: 404, or 405 naming the method for a known endpoint asked with another.
      if (res.status == 404) return send_unrouted(st, req, res);
      api_error e{res.status, fmt::format("HTTP error {}", res.status)};
      if (res.status == 413) e.message = fmt::format("the request body is larger than the limit of {} bytes", st.opts.max_body);
      send_error_for(req, res, e);
    }
  });
  svr.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error_for(req, res, api_error{500, what});
  });
  svr.set_logger([&st](const httplib::Request& req, const httplib::Response& res) {
    count_status(st, res.status);
    // Called once the response is written. cpp-httplib 0.11 ignores a response's Connection: close
    // (those of refusals answered before the body was read) and would read the body's bytes as the
    // next request: behind a proxy that framed the request otherwise, a smuggled one. Shutting the
    // reading down ends the connection instead (before the write, it would have stopped that too).
    if (res.get_header_value("Connection") == "close")
      if (const int fd = find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port); fd >= 0) shutdown(fd, SHUT_RD);
  });
  add_misc_routes(svr, st);
  add_generation_routes(svr, st);
  add_embedding_routes(svr, st);
  add_messages_routes(svr, st);
  add_responses_api_routes(svr, st);
  add_native_routes(svr, st);

  int port = opts.port;
  if (port == 0) {
    port = svr.bind_to_any_port(opts.host);
    if (port < 0) port = 0;
  } else if (!svr.bind_to_port(opts.host, port)) {
    port = 0;
  }
  if (port == 0) {
    fmt::print(stderr, "error: cannot listen on {}:{}\n", opts.host, opts.port);
    return 1;
  }
  raise_listen_backlog(port, 512);
  std::atomic<bool> listener_done{false};
  std::thread listener([&svr, &listener_done] {
    svr.listen_after_bind();
    listener_done = true;
  });

  std::atomic<bool> got_signal{false};
  std::thread signals([&, port] {
    int sig = 0;
    sigwait(&sigs, &sig);
    got_signal = true;
    st.draining = true;
    // Let running generations finish; streaming responses are cut if the listener stops first.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(st.opts.drain_seconds);
    while (st.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Past the deadline, what still runs or waits ends with a 503 (an error event for a stream), and
    // its response is let out before the listener stops.
    if (st.in_flight.load() > 0 && st.ready.load()) {
      // The engine may be in a forward pass (a prefill chunk of a large model takes seconds): its jobs
      // end after it; then their handlers get a moment to write the error.
      st.sched->abort_all(fmt::format("the server is shutting down (--drain-seconds {} passed)", st.opts.drain_seconds),
                          std::chrono::seconds(60));
      const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (st.in_flight.load() > 0 && std::chrono::steady_clock::now() < grace) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int i = 0; i < 1000 && !svr.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    svr.stop();
    // The library's stop waits for every connection's thread, and one may wait on a client: a body
    // trickling in (each byte restarts the 30 s read timeout), an idle keep-alive (5 s). After a
    // second for responses still being written, their sockets are shut, which ends those waits.
    const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!listener_done.load() && std::chrono::steady_clock::now() < settle) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!listener_done.load()) shut_down_connections(port);
  });

  int code = 0;
  // The listener and signal threads are running: an exception here must become an error, or their
  // destructors would end the process without a word.
  auto guarded_load = [&]() -> status {
    try {
      return load(st);
    } catch (const std::exception& e) {
      return make_error("{}", e.what());
    } catch (...) {
      return make_error("loading the model failed (an unknown exception)");
    }
  };
  if (status s = guarded_load(); !s) {
    fmt::print(stderr, "error: {}\n", s.message());
    code = 1;
    if (!got_signal) pthread_kill(signals.native_handle(), SIGTERM);
  } else {
    st.ready = true;
    const std::string shown_host = opts.host.find(':') != std::string::npos ? "[" + opts.host + "]" : opts.host;
    fmt::print(stderr, "glia serve: listening on http://{}:{}\n", shown_host, port);
    std::fflush(stderr);
  }
  signals.join();
  listener.join();
  if (st.sched) st.sched->shutdown();
  return code;
}

}  // namespace glia::server
