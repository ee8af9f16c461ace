#include "server/http_server.h"

#include <algorithm>
#include <ctime>
#include <thread>

#include <sys/socket.h>

#include <fmt/format.h>
#include <httplib.h>

#include "core/check.h"
#include "server/completion_handler.h"

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
class ListenServer : public httplib::Server {
 public:
  void raise_backlog(int backlog) { ::listen(svr_sock_, backlog); }
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(EngineLoop& loop, ServerMetrics& metrics, ChatFormat chat_format, HttpServerOptions options)
      : loop_(loop),
        metrics_(metrics),
        options_(std::move(options)),
        completions_(loop, chat_format, options_.served_model_name, options_.heartbeat_seconds, tracker_),
        created_(static_cast<int64_t>(std::time(nullptr))) {
    const int64_t threads = options_.num_threads > 0
                                ? options_.num_threads
                                : std::min<int64_t>(loop.max_running() + loop.max_waiting() + 8, 1024);
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    server_.set_payload_max_length(options_.max_body_bytes);
    server_.set_keep_alive_max_count(1000);
    server_.set_keep_alive_timeout(5);
    server_.set_tcp_nodelay(true);
    routes();
  }

  int start() {
    DSPARK_CHECK(!thread_.joinable(), "the server is already running");
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
  }

  int port() const { return port_; }

 private:
  void routes() {
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      completions_.handle(req, res, Endpoint::kCompletions);
    });
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      completions_.handle(req, res, Endpoint::kChat);
    });
    server_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      const nlohmann::json model = {{"id", options_.served_model_name},
                                    {"object", "model"},
                                    {"created", created_},
                                    {"owned_by", "dspark"},
                                    {"max_model_len", loop_.model().max_model_len()}};
      res.set_content(dump_json({{"object", "list"}, {"data", nlohmann::json::array({model})}}), "application/json");
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
      std::string message = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        message = e.what();
      } catch (...) {
      }
      set_error(res, ApiError(500, message, "server_error"));
    });
  }

  EngineLoop& loop_;
  ServerMetrics& metrics_;
  const HttpServerOptions options_;
  ResponseTracker tracker_;
  CompletionHandler completions_;
  const int64_t created_;
  ListenServer server_;
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
