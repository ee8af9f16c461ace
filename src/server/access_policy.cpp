#include "server/access_policy.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace dspark {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// "Example.com:8000" -> "example.com", "[::1]:80" -> "[::1]".
std::string host_name(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return lower(host.substr(0, close == std::string_view::npos ? host.size() : close + 1));
  }
  return lower(host.substr(0, host.find(':')));
}

// Runs over the whole key whatever the client sent, so the time taken reveals neither
// the key's content nor its length.
bool equal_constant_time(std::string_view given, std::string_view key) {
  size_t diff = given.size() ^ key.size();
  for (size_t i = 0; i < key.size(); ++i) {
    diff |= static_cast<unsigned char>(key[i]) ^ static_cast<unsigned char>(i < given.size() ? given[i] : 0);
  }
  return diff == 0;
}

bool is_json_content_type(std::string_view value) {
  const std::string media = lower(value.substr(0, value.find(';')));
  const size_t begin = media.find_first_not_of(" \t");
  const size_t end = media.find_last_not_of(" \t");
  return begin != std::string::npos && media.substr(begin, end - begin + 1) == "application/json";
}

}  // namespace

std::vector<std::string> default_allowed_hosts(const std::string& bind_host) {
  const std::string name = lower(bind_host);
  const bool loopback = name == "localhost" || name == "::1" || name == "[::1]" || name.rfind("127.", 0) == 0;
  if (!loopback) return {};
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "[::1]"};
  if (name.rfind("127.", 0) == 0 && name != "127.0.0.1") hosts.push_back(name);
  return hosts;
}

AccessPolicy::AccessPolicy(AccessPolicyOptions options) : options_(std::move(options)) {
  for (std::string& h : options_.allowed_hosts) h = host_name(h);
}

bool AccessPolicy::host_allowed(const std::string& host_header) const {
  if (options_.allowed_hosts.empty()) return true;
  const std::string name = host_name(host_header);
  return std::find(options_.allowed_hosts.begin(), options_.allowed_hosts.end(), name) != options_.allowed_hosts.end();
}

std::optional<ApiError> AccessPolicy::check(const httplib::Request& request, httplib::Response& response) const {
  // /health and /metrics stay open to probes and scrapers, which address the server by
  // whatever name or address they have.
  const bool api = request.path.rfind("/v1/", 0) == 0;
  if (api && !host_allowed(request.get_header_value("Host"))) {
    return ApiError(421, "this server does not answer to that Host name", "invalid_request_error", {},
                    "misdirected_request");
  }
  if (cors_enabled()) {
    response.set_header("Access-Control-Allow-Origin", options_.cors_origin);
    if (options_.cors_origin != "*") response.set_header("Vary", "Origin");
    if (request.method == "OPTIONS") {
      response.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      response.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      response.set_header("Access-Control-Max-Age", "600");
      return ApiError(204, {}, {});
    }
  }
  if (api && !options_.api_key.empty()) {
    const std::string auth = request.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    const bool ok = auth.size() > kBearer.size() && lower(auth.substr(0, kBearer.size())) == "bearer " &&
                    equal_constant_time(std::string_view(auth).substr(kBearer.size()), options_.api_key);
    if (!ok) {
      response.set_header("WWW-Authenticate", "Bearer");
      return ApiError(401, "missing or invalid API key (send 'Authorization: Bearer <key>')", "invalid_request_error",
                      {}, "invalid_api_key");
    }
  }
  if (request.method == "POST" && !is_json_content_type(request.get_header_value("Content-Type"))) {
    return ApiError(415, "the request body must be JSON, sent with 'Content-Type: application/json'",
                    "invalid_request_error", {}, "unsupported_media_type");
  }
  return std::nullopt;
}

}  // namespace dspark
