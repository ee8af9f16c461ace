#include "server/connection_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace dspark {
namespace {

thread_local ConnectionStream* g_current = nullptr;

constexpr size_t kReadChunk = 16384;

// Waits for `events` on fd for up to timeout; the poll revents (0 on timeout).
short wait_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(timeout.count(), 0)));
  } while (r < 0 && errno == EINTR);
  return r > 0 ? p.revents : 0;
}

void address_of(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

}  // namespace

ConnectionStream* current_connection() { return g_current; }
void set_current_connection(ConnectionStream* stream) { g_current = stream; }

ConnectionStream::ConnectionStream(int fd, std::chrono::milliseconds io_timeout) : fd_(fd), io_timeout_(io_timeout) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, remote_ip_, remote_port_);
  len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, local_ip_, local_port_);
}

bool ConnectionStream::is_readable() const {
  return buffered() > 0 || (wait_for(fd_, POLLIN, io_timeout_) & (POLLIN | POLLHUP | POLLERR)) != 0;
}

bool ConnectionStream::is_writable() const {
  return !peer_gone() && (wait_for(fd_, POLLOUT, io_timeout_) & POLLOUT) != 0;
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (buffered() == 0) {
    const auto now = Clock::now();
    if (now >= deadline_) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now) +
                      std::chrono::milliseconds(1);
    if (wait_for(fd_, POLLIN, std::min(io_timeout_, left)) == 0) return -1;
    buffer_.clear();
    offset_ = 0;
    buffer_.resize(std::max(kReadChunk, size));
    ssize_t n;
    do {
      n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
    } while (n < 0 && errno == EINTR);
    buffer_.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (n <= 0) return n;
  }
  const size_t n = std::min(size, buffered());
  std::memcpy(ptr, buffer_.data() + offset_, n);
  offset_ += n;
  bytes_read_ += n;
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  }
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if ((wait_for(fd_, POLLOUT, io_timeout_) & POLLOUT) == 0) return -1;
  ssize_t n;
  do {
    n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = remote_ip_;
  port = remote_port_;
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = local_ip_;
  port = local_port_;
}

ConnectionStream::Fill ConnectionStream::fill_nonblocking(size_t limit) {
  bool got = false;
  char chunk[kReadChunk];
  while (buffered() < limit) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      if (offset_ > 0 && offset_ == buffer_.size()) {
        buffer_.clear();
        offset_ = 0;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
      got = true;
      if (static_cast<size_t>(n) < sizeof(chunk)) return Fill::kData;
      continue;
    }
    if (n == 0) return Fill::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return got ? Fill::kData : Fill::kNothing;
    return Fill::kClosed;
  }
  return Fill::kData;
}

bool ConnectionStream::has_complete_head() const {
  const std::string_view data = std::string_view(buffer_).substr(offset_);
  return data.find("\n\r\n") != std::string_view::npos || data.find("\n\n") != std::string_view::npos;
}

uint64_t ConnectionStream::take_bytes_read() { return std::exchange(bytes_read_, 0); }

bool ConnectionStream::peer_gone() const {
  const short revents = wait_for(fd_, POLLIN | POLLRDHUP, std::chrono::milliseconds(0));
  return (revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace dspark
