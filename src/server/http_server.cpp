#include "server/http_server.h"

#include <algorithm>
#include <ctime>
#include <thread>

#include <sys/socket.h>

#include <fmt/format.h>
#include <httplib.h>

#include "core/check.h"
#include "server/access_log.h"
#include "server/completion_handler.h"
#include "server/tokenize_handler.h"
#include "server/connection_manager.h"
#include "server/memory_release.h"

namespace dspark {
namespace {

std::string status_message(int status) {
  switch (status) {
    case 404: return "no such endpoint";
    case 405: return "method not allowed";
    case 413: return "the request body is too large";
    default: return fmt::format("HTTP error {}", status);
  }
}

// cpp-httplib 0.11 listens with a backlog of 5 connections: a burst of clients connecting
// at once overflows it, and the kernel retries the dropped connections only a second
// later. Listening again on the bound socket raises the backlog.
//
// httplib's accept loop hands each accepted socket to process_and_close_socket through its
// task queue; here that queue runs the call inline and the override gives the socket to
// the ConnectionManager, which parks it until a request head is complete and then serves
// it on a worker through process_request (connection_manager.h says why).
class ListenServer : public httplib::Server {
 public:
  void raise_backlog(int backlog) { ::listen(svr_sock_, backlog); }
  void set_connection_manager(ConnectionManager* manager) { manager_ = manager; }
  bool serve_request(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    manager_->adopt(sock);
    return true;
  }

  ConnectionManager* manager_ = nullptr;
};

class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(EngineLoop& loop, ServerMetrics& metrics, ChatFormat chat_format, HttpServerOptions options)
      : loop_(loop),
        metrics_(metrics),
        options_(std::move(options)),
        access_(options_.access),
        chat_format_(chat_format),
        completions_(loop, chat_format, options_.served_model_name, options_.heartbeat_seconds, tracker_),
        created_(static_cast<int64_t>(std::time(nullptr))) {
    const int64_t threads = options_.num_threads > 0
                                ? options_.num_threads
                                : std::min<int64_t>(loop.max_running() + loop.max_waiting() + 8, 1024);
    ConnectionOptions co;
    co.num_workers = static_cast<int>(threads);
    co.max_connections = options_.max_connections;
    co.read_deadline = std::chrono::milliseconds(static_cast<int64_t>(options_.request_read_timeout_seconds * 1e3));
    co.keep_alive_timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.keep_alive_seconds * 1e3));
    connections_ = std::make_unique<ConnectionManager>(
        co, [this](httplib::Stream& stream, bool close_connection, bool& connection_closed) {
          AccessLogScope access;  // one request: its access line is written when this ends
          return server_.serve_request(stream, close_connection, connection_closed);
        });
    server_.set_connection_manager(connections_.get());
    server_.new_task_queue = [] { return new InlineQueue(); };
    server_.set_payload_max_length(options_.max_body_bytes);
    server_.set_tcp_nodelay(true);
    routes();
  }

  int start() {
    DSPARK_CHECK(!thread_.joinable(), "the server is already running");
    if (options_.tune_allocator) tune_allocator_for_serving();
    if (options_.port == 0) {
      port_ = server_.bind_to_any_port(options_.host);
      DSPARK_CHECK(port_ > 0, "cannot bind to {} (any port)", options_.host);
    } else {
      DSPARK_CHECK(server_.bind_to_port(options_.host, options_.port), "cannot bind to {}:{} (in use?)", options_.host,
                   options_.port);
      port_ = options_.port;
    }
    server_.raise_backlog(SOMAXCONN);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    return port_;
  }

  void shutdown(std::chrono::milliseconds grace) {
    if (stopped_) return;
    stopped_ = true;
    tracker_.set_shutting_down();
    loop_.stop_accepting();
    loop_.drain(grace);
    loop_.stop();  // cancels what is left; every stream now has its final update
    // Give responses time to deliver their final chunks before sockets close.
    tracker_.wait_idle(std::chrono::milliseconds(5000));
    server_.stop();
    if (thread_.joinable()) thread_.join();
    connections_->stop();
  }

  int port() const { return port_; }

 private:
  nlohmann::json model_object() const {
    return {{"id", options_.served_model_name},
            {"object", "model"},
            {"created", created_},
            {"owned_by", "dspark"},
            {"max_model_len", loop_.model().max_model_len()}};
  }

  void routes() {
    // Called once the response is written (a stream's last event included); the line
    // itself is written when the request's AccessLogScope ends.
    server_.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      if (AccessRecord* r = current_access_record()) {
        r->method = req.method.empty() ? "-" : req.method;  // empty: an unparsable request line
        r->path = req.path.empty() ? "-" : req.path;
        r->status = res.status;
      }
    });
    // Refused requests (Host, API key, body type; access_policy.h) never reach a route,
    // nor have their body read.
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (AccessRecord* r = current_access_record()) {  // known even if no response gets written
        r->method = req.method;
        r->path = req.path;
      }
      const std::optional<ApiError> refusal = access_.check(req, res);
      if (!refusal) return httplib::Server::HandlerResponse::Unhandled;
      if (refusal->status() == 204) res.status = 204;  // a CORS preflight, answered
      else set_error(res, *refusal);
      return httplib::Server::HandlerResponse::Handled;
    });
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      completions_.handle(req, res, Endpoint::kCompletions);
    });
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      completions_.handle(req, res, Endpoint::kChat);
    });
    server_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump_json({{"object", "list"}, {"data", nlohmann::json::array({model_object()})}}),
                      "application/json");
    });
    // Model ids may contain '/' ("org/name"), so the rest of the path is the id.
    server_.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.matches[1] != options_.served_model_name) {
        set_error(res, ApiError::model_not_found(req.matches[1].str(), options_.served_model_name));
        return;
      }
      res.set_content(dump_json(model_object()), "application/json");
    });
    server_.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      respond_json(res, [&] { return tokenize(req.body, tokenize_context()); });
    });
    server_.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      respond_json(res, [&] { return detokenize(req.body, tokenize_context()); });
    });
    server_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (tracker_.shutting_down()) {
        set_error(res, ApiError(503, "the server is shutting down", "server_error", {}, "shutting_down"));
        return;
      }
      res.set_content("{}", "application/json");
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_.render(loop_.stats()), "text/plain; version=0.0.4; charset=utf-8");
    });
    // Unrouted paths, wrong methods, oversized bodies: OpenAI-shaped errors as well.
    server_.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      set_error(res, ApiError(res.status, status_message(res.status),
                              res.status >= 500 ? "server_error" : "invalid_request_error"));
      return httplib::Server::HandlerResponse::Handled;
    }));
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      ApiError error(500, "internal error", "server_error");
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const nlohmann::json::exception&) {
        // The library's text names its internals, not the client's mistake.
      } catch (const Error& e) {
        error = ApiError::from_error(e);
      } catch (const std::exception& e) {
        error = ApiError(500, e.what(), "server_error");
      } catch (...) {
      }
      set_error(res, error);
    });
  }

  TokenizeContext tokenize_context() const {
    return {loop_.tokenizer(), chat_format_, options_.served_model_name, loop_.model().max_model_len(),
            loop_.model().config().vocab_size};
  }

  // A JSON body from `make`, or the ApiError it throws.
  template <typename Make>
  static void respond_json(httplib::Response& res, Make make) {
    try {
      res.set_content(dump_json(make()), "application/json");
    } catch (const ApiError& e) {
      set_error(res, e);
    }
  }

  EngineLoop& loop_;
  ServerMetrics& metrics_;
  const HttpServerOptions options_;
  const AccessPolicy access_;
  const ChatFormat chat_format_;
  ResponseTracker tracker_;
  CompletionHandler completions_;
  const int64_t created_;
  ListenServer server_;
  std::unique_ptr<ConnectionManager> connections_;  // after server_: stopped and destroyed first
  std::thread thread_;
  int port_ = 0;
  bool stopped_ = false;
};

HttpServer::HttpServer(EngineLoop& loop, ServerMetrics& metrics, ChatFormat chat_format, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(loop, metrics, chat_format, std::move(options))) {}

HttpServer::~HttpServer() { impl_->shutdown(std::chrono::milliseconds(0)); }

int HttpServer::start() { return impl_->start(); }

void HttpServer::shutdown(std::chrono::milliseconds grace) { impl_->shutdown(grace); }

int HttpServer::port() const { return impl_->port(); }

}  // namespace dspark
