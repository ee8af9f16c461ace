// HttpServer: the OpenAI-compatible HTTP front of an EngineLoop (cpp-httplib).
//
//   POST /v1/completions        prompt -> text (streaming SSE or one JSON body)
//   POST /v1/chat/completions   messages -> assistant reply (prompt built by ChatFormat)
//   GET  /v1/models             the one served model
//   POST /tokenize, /detokenize prompt or messages -> token ids, and back (vLLM's)
//   GET  /v1/models/{id}        that model (404 for any other id)
//   GET  /health                200 while serving, 503 while shutting down
//   GET  /metrics               Prometheus text (ServerMetrics)
//
// Each HTTP worker thread parses and tokenizes its request, submits it to the loop and
// then only reads the request's RequestStream. Streaming responses are Server-Sent Events:
// "data: {chunk}\n\n" per piece of new text, the last chunk carrying finish_reason, a
// usage chunk when stream_options.include_usage, then "data: [DONE]\n\n"; an idle stream
// sends an SSE comment (": keep-alive") every heartbeat_seconds. A client that goes away
// (its connection closed, seen while streaming or while a whole response is awaited) has
// its request cancelled, which frees its KV blocks. Connections are managed by
// ConnectionManager: idle or slow clients hold no worker thread, requests must arrive
// within request_read_timeout_seconds, pipelined requests are served in order.
//
// Status codes: 400 invalid request (OpenAI error body naming the field), 401 missing API
// key, 404 unknown model or path, 413 body too large, 415 body not JSON, 421 Host not
// allowed (access_policy.h), 429 queue full, 500 engine failure, 503 shutting down; for an
// engine error the status comes from its ErrorKind (ApiError::from_error). Every request
// gets one access-log line when its response is over (access_log.h).
// Defaults where OpenAI leaves them to the server: max_tokens 16 for completions and the
// rest of the context for chat; a max_tokens beyond the context ends with "length" at the
// context limit; an absent seed is drawn at random per request.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "engine/engine_loop.h"
#include "server/access_policy.h"
#include "server/chat_format.h"
#include "server/server_metrics.h"

namespace dspark {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                    // 0 = any free port (see HttpServer::port())
  std::string served_model_name = "model";  // the only accepted "model" value
  int num_threads = 0;                // HTTP workers; 0 = max_running + max_waiting + 8 (<= 1024)
  size_t max_body_bytes = 16u << 20;  // larger request bodies get 413
  double heartbeat_seconds = 2.0;     // SSE comment interval on an idle stream
  AccessPolicyOptions access;         // API key, allowed Host names, CORS origin
  int64_t max_connections = 1000;     // open client connections (connection_manager.h)
  double request_read_timeout_seconds = 30;  // a request's head and body arrive within this
  double keep_alive_seconds = 5;      // an idle keep-alive connection is closed after this
  bool tune_allocator = true;         // at start(), process-wide: return large request memory (memory_release.h)
};

class HttpServer {
 public:
  // loop and metrics must outlive the server; metrics should be the one the loop's
  // on_finished feeds.
  HttpServer(EngineLoop& loop, ServerMetrics& metrics, ChatFormat chat_format, HttpServerOptions options);
  ~HttpServer();  // shutdown(0) if still serving
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds (throws Error when the address is unavailable) and serves on a background
  // thread. Returns the bound port.
  int start();
  // Graceful stop: new requests get 503, in-flight ones get up to `grace` to finish, then
  // the rest are cancelled (streams end with finish_reason "cancelled"), responses are
  // flushed, the engine loop is stopped and the listening socket closed.
  void shutdown(std::chrono::milliseconds grace);

  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dspark
