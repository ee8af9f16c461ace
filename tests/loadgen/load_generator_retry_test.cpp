// Issue #17: `dspark bench` failed about a third of its requests against llama.cpp's server,
// which closes a keep-alive connection right after each stream without saying so. Here a
// raw loopback server answers the first request of every connection (advertising
// keep-alive) and closes the connection, unanswered, when a second request arrives on it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "loadgen/load_generator.h"

namespace dspark {
namespace {

class ClosingServer {
 public:
  ClosingServer() {
    std::signal(SIGPIPE, SIG_IGN);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 64), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ClosingServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
    for (auto& t : connections_) t.join();
  }
  int port() const { return port_; }
  int64_t answered() const { return answered_; }
  int64_t dropped() const { return dropped_; }

 private:
  void serve() {
    while (!stop_) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      connections_.emplace_back([this, fd] { handle(fd); });
    }
  }
  // Reads one request (headers and Content-Length body); false at end of stream.
  static bool read_request(int fd) {
    std::string data;
    char buf[4096];
    size_t header_end = std::string::npos;
    size_t need = 0;
    while (true) {
      if (header_end == std::string::npos && (header_end = data.find("\r\n\r\n")) != std::string::npos) {
        const size_t cl = data.find("Content-Length: ");
        need = header_end + 4 + (cl == std::string::npos ? 0 : std::stoul(data.substr(cl + 16)));
      }
      if (header_end != std::string::npos && data.size() >= need) return true;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      data.append(buf, static_cast<size_t>(n));
    }
  }
  void handle(int fd) {
    if (read_request(fd)) {
      const std::string body =
          "data: {\"choices\":[{\"index\":0,\"text\":\"hi\",\"finish_reason\":null}]}\n\n"
          "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n"
          "data: [DONE]\n\n";
      const std::string response = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\n"
                                   "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      ++answered_;  // before the send: the client may finish and look as soon as it arrives
      ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
      // The next request on this connection is never answered.
      if (read_request(fd)) ++dropped_;
    }
    ::close(fd);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> answered_{0}, dropped_{0};
  std::thread thread_;
  std::vector<std::thread> connections_;  // touched by the accept thread only, joined after it
};

TEST(LoadGenerator, RetriesOnceWhenAReusedConnectionWasClosed) {
  ClosingServer server;
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server.port());
  o.model = "m";
  o.max_tokens = 4;
  o.timeout_s = 10;
  LoadGenerator gen(o, {"a prompt"});
  const LevelResult r = gen.run_closed_loop(/*concurrency=*/1, /*num_requests=*/6);
  EXPECT_EQ(r.num_requests, 6);
  EXPECT_EQ(r.num_failed, 0) << r.first_error;
  EXPECT_EQ(server.answered(), 6 + 2);  // + the two /metrics scrapes
  EXPECT_GE(server.dropped(), 5);       // every reuse was refused, and retried
}

}  // namespace
}  // namespace dspark
