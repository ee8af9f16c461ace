// AccessPolicy: who may call the server, checked before a request is routed (and before
// its body is read), so that a refused request costs nothing:
//
//   Host       with allowed_hosts, a /v1/* request's Host header must name one of them
//              (421 otherwise): a DNS-rebinding page cannot reach the API under its own
//              name. `dspark serve` bound to a loopback address defaults to the loopback
//              names (default_allowed_hosts); bound elsewhere, to any name unless given.
//   CORS       no Access-Control-* headers unless cors_origin is set; then every response
//              carries it and OPTIONS preflights get 204 (browsers send no credentials on
//              a preflight, so it is answered before the key check).
//   API key    with api_key, every /v1/* request needs "Authorization: Bearer <key>" (401
//              otherwise); /health and /metrics stay open for probes and scrapers.
//   Body type  a POST body must be "Content-Type: application/json" (parameters such as
//              "; charset=utf-8" allowed; 415 otherwise): a cross-site form or text/plain
//              POST, which a browser sends without a preflight, cannot start a generation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <httplib.h>

#include "server/openai_protocol.h"

namespace dspark {

struct AccessPolicyOptions {
  std::string api_key;                     // empty = no key required
  std::vector<std::string> allowed_hosts;  // Host names accepted (port ignored); empty = any
  std::string cors_origin;                 // empty = no CORS; "*" or one origin
};

// The Host names a server bound to `bind_host` answers to when none are given: for a
// loopback address ("127.x.y.z", "::1", "localhost") the loopback names, so that a web
// page whose own name its DNS rebinds to 127.0.0.1 gets 421; for any other address none
// (an empty list: any name; the operator knows the names clients use).
std::vector<std::string> default_allowed_hosts(const std::string& bind_host);

class AccessPolicy {
 public:
  explicit AccessPolicy(AccessPolicyOptions options);

  // The error a request gets instead of being routed; nullopt when it may proceed.
  // Adds the CORS headers to `response` when enabled; answers a preflight itself
  // (returns a 204 "error" with no body).
  std::optional<ApiError> check(const httplib::Request& request, httplib::Response& response) const;
  bool cors_enabled() const { return !options_.cors_origin.empty(); }

 private:
  bool host_allowed(const std::string& host_header) const;

  AccessPolicyOptions options_;
};

}  // namespace dspark
