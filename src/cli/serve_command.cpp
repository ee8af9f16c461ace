// dspark serve: the OpenAI-compatible HTTP server (server/http_server.h) over one engine
// thread with continuous batching and, with --speculator, speculative decoding inside the
// batch. SIGINT/SIGTERM shut it down gracefully: new requests get 503, in-flight ones get
// --shutdown-timeout seconds to finish, the rest are cancelled.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <pthread.h>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/check.h"
#include "core/log.h"
#include "core/threads.h"
#include "engine/engine_loop.h"
#include "kernels/isa.h"
#include "server/http_server.h"
#include "server/server_metrics.h"

namespace dspark::cli {
namespace {

struct ServeArgs {
  ModelArgs model;
  SpeculatorOptions speculator;
  std::string host = "127.0.0.1";
  int port = 8000;
  int64_t max_running = 16;
  int64_t max_waiting = 64;
  std::string served_model_name;
  double shutdown_timeout_s = 30;
  int http_threads = 0;
  std::string chat_template;  // a Jinja file overriding the model's own template
  AccessPolicyOptions access;
  std::string log_level = "info";
  double read_timeout_s = 30;        // HttpServerOptions::request_read_timeout_seconds
  double keep_alive_timeout_s = 5;   // HttpServerOptions::keep_alive_seconds
  int64_t max_connections = 1000;    // HttpServerOptions::max_connections
};

std::string default_model_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  const std::string name = p.filename().string();
  return name.empty() || name == "." ? "model" : name;
}

void run_serve(ServeArgs& args) {
  set_log_level(parse_log_level(args.log_level));
  DSPARK_CHECK(args.max_running >= 1, "--max-running must be >= 1, got {}", args.max_running);
  DSPARK_CHECK(args.max_waiting >= 0, "--max-waiting must be >= 0, got {}", args.max_waiting);
  DSPARK_CHECK(args.port >= 0 && args.port <= 65535, "--port must be in [0, 65535], got {}", args.port);
  // Signals are taken by sigwait below: block them before any thread exists, so that
  // every thread inherits the mask and none is interrupted.
  // A parent may have left them ignored (background jobs of a non-interactive shell),
  // which would discard them before sigwait could take them.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a vanished client must fail a write, not kill the server

  Assembly loaded = assemble(args.model, args.speculator, args.max_running);
  const std::string speculator = loaded.proposer ? fmt::format("{} (K={})", args.speculator.speculator,
                                                               loaded.proposer->num_speculative_tokens())
                                                 : std::string("none");

  ServerMetrics metrics({std::string(isa_name(active_isa())), loaded.target->matmul_kernel(),
                         args.model.quantization != "none" ? args.model.quantization : args.model.dtype});
  EngineLoopOptions loop_options;
  loop_options.max_waiting = args.max_waiting;
  loop_options.on_finished = [&metrics](const FinishedRequest& r) { metrics.observe(r); };
  EngineLoop loop(*loaded.target, *loaded.tokenizer, loaded.engine, std::move(loaded.proposer), loop_options);

  HttpServerOptions server_options;
  server_options.host = args.host;
  server_options.port = args.port;
  server_options.served_model_name =
      args.served_model_name.empty() ? default_model_name(args.model.model_dir) : args.served_model_name;
  server_options.num_threads = args.http_threads;
  server_options.access = args.access;
  server_options.request_read_timeout_seconds = args.read_timeout_s;
  server_options.keep_alive_seconds = args.keep_alive_timeout_s;
  server_options.max_connections = args.max_connections;
  if (server_options.access.allowed_hosts.empty()) {
    server_options.access.allowed_hosts = default_allowed_hosts(args.host);
    if (server_options.access.allowed_hosts.empty()) {
      logger().warn("bound to {}: Host names are not checked; give --allowed-hosts with the names clients use",
                    args.host);
    }
  }
  const ChatFormat chat_format = args.chat_template.empty()
                                     ? ChatFormat::from_model_dir(args.model.model_dir)
                                     : ChatFormat::from_template_file(args.chat_template, args.model.model_dir);
  HttpServer server(loop, metrics, chat_format, server_options);
  const int port = server.start();

  const ModelConfig& config = loaded.target->config();
  const EngineStats stats = loop.stats().engine;
  std::fprintf(stderr,
               "[dspark] serving '%s' on http://%s:%d | model %s (%s, %lld layers, hidden %lld, vocab %lld, context "
               "%lld) | dtype %s, kv %s, threads %d | max running %lld, max batch tokens %lld, max waiting %lld | KV "
               "cache %lld blocks | speculator %s | chat format %s\n",
               server_options.served_model_name.c_str(), args.host.c_str(), port, args.model.model_dir.c_str(),
               config.model_type_name.c_str(), static_cast<long long>(config.num_hidden_layers),
               static_cast<long long>(config.hidden_size), static_cast<long long>(config.vocab_size),
               static_cast<long long>(loaded.target->max_model_len()), args.model.dtype.c_str(),
               args.model.kv_dtype.c_str(), num_threads(), static_cast<long long>(args.max_running),
               static_cast<long long>(args.model.max_batch_tokens), static_cast<long long>(args.max_waiting),
               static_cast<long long>(stats.kv_blocks_total), speculator.c_str(),
               std::string(chat_format.name()).c_str());

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(stderr, "[dspark] %s: shutting down (finishing in-flight requests for up to %.0f s)\n",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM", args.shutdown_timeout_s);
  server.shutdown(std::chrono::milliseconds(static_cast<int64_t>(args.shutdown_timeout_s * 1e3)));
  const EngineLoopStats final_stats = loop.stats();
  int64_t finished = 0;
  for (int64_t n : final_stats.finished) finished += n;
  std::fprintf(stderr, "[dspark] stopped after %lld requests (%lld cancelled, %lld rejected)\n",
               static_cast<long long>(finished),
               static_cast<long long>(final_stats.finished[static_cast<size_t>(FinishReason::kCancelled)]),
               static_cast<long long>(final_stats.num_rejected));
}

}  // namespace

void register_serve(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server with continuous batching");
  add_model_options(cmd, args->model);
  add_speculator_options(cmd, args->speculator);
  cmd->add_option("--host", args->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", args->port, "Port to listen on (0 = any free port)")->capture_default_str();
  cmd->add_option("--max-running", args->max_running, "Requests decoding at once (holding KV blocks)")
      ->capture_default_str();
  cmd->add_option("--max-waiting", args->max_waiting, "Requests queued beyond the running ones; more get 429")
      ->capture_default_str();
  cmd->add_option("--served-model-name", args->served_model_name,
                  "Model name clients must use (default: the model directory's name)");
  cmd->add_option("--shutdown-timeout", args->shutdown_timeout_s,
                  "Seconds in-flight requests get to finish on SIGINT/SIGTERM")
      ->capture_default_str();
  cmd->add_option("--http-threads", args->http_threads, "HTTP worker threads (0 = max running + max waiting + 8)")
      ->capture_default_str();
  cmd->add_option("--chat-template", args->chat_template,
                  "Jinja chat template file overriding the model's own (tokenizer_config.json / chat_template.jinja)");
  cmd->add_option("--api-key", args->access.api_key,
                  "Require 'Authorization: Bearer KEY' on every /v1/* request (/health and /metrics stay open)")
      ->envname("DSPARK_API_KEY");
  cmd->add_option("--allowed-hosts", args->access.allowed_hosts,
                  "Comma-separated Host names the /v1 API answers to (others get 421). Default: on a loopback "
                  "address localhost, 127.0.0.1 and [::1]; on any other address any name")
      ->delimiter(',');
  cmd->add_option("--read-timeout", args->read_timeout_s,
                  "Seconds within which a request's head and body must arrive (slow clients are closed)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--keep-alive-timeout", args->keep_alive_timeout_s,
                  "Seconds an idle keep-alive connection stays open")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-connections", args->max_connections,
                  "Open client connections at most; at the cap the one parked (idle) longest is closed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cors-origin", args->access.cors_origin,
                  "Send CORS headers for this origin ('*' = any) and answer preflights; default no CORS");
  cmd->add_option("--log-level", args->log_level,
                  "Log level: trace, debug, info (one access line per request), warn (only 429s and errors), "
                  "error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  cmd->callback([args] { run_serve(*args); });
}

}  // namespace dspark::cli
