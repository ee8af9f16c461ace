// AccessPolicy: who may call the server, checked before a request is routed (and before
// its body is read), so that a refused request costs nothing:
//
//   Host       with allowed_hosts, a /v1/* request's Host header must name one of them
//              (421 otherwise): a DNS-rebinding page cannot reach the API under its own
//              name. Meant for binding to a non-loopback address; applies whenever given.
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
