// ConnectionStream: one client connection as cpp-httplib reads and writes it, with what
// httplib 0.11's own socket stream lacks:
//
//   - a read buffer that lives as long as the connection, not one request: bytes of a
//     pipelined next request read together with this one are kept, not dropped;
//   - a deadline for reading a whole request (head and body): httplib's read timeout
//     applies per recv, so a client dripping one byte at a time was never cut off;
//   - peer_gone(): whether the client closed its side, so that a request whose client
//     left can be cancelled while no byte is being written to it.
//
// The socket is owned by the ConnectionManager; this type only reads and writes it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include <httplib.h>

namespace dspark {

class ConnectionStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  ConnectionStream(int fd, std::chrono::milliseconds io_timeout);

  // httplib::Stream
  bool is_readable() const override;
  bool is_writable() const override;  // also false once the peer is gone
  ssize_t read(char* ptr, size_t size) override;  // fails once the read deadline passed
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  enum class Fill { kData, kNothing, kClosed };
  // Reads what the socket has now, without blocking, into the buffer, until `limit`
  // bytes are buffered (the rest stays in the socket for read()).
  Fill fill_nonblocking(size_t limit);
  // Whether the buffer holds a whole request head (up to its blank line).
  bool has_complete_head() const;
  size_t buffered() const { return buffer_.size() - offset_; }

  void set_read_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // Bytes handed to httplib since the last call (the size of the request just served).
  uint64_t take_bytes_read();
  // The client closed the connection (or half-closed it: it will not read our answer
  // either way as far as HTTP/1.1 is concerned) or it failed.
  bool peer_gone() const;

 private:
  int fd_;
  std::chrono::milliseconds io_timeout_;  // per wait, as httplib's read/write timeouts
  Clock::time_point deadline_ = Clock::time_point::max();
  std::string buffer_;
  size_t offset_ = 0;
  uint64_t bytes_read_ = 0;
  std::string remote_ip_, local_ip_;
  int remote_port_ = 0, local_port_ = 0;
};

// The connection the calling HTTP worker is serving, while it serves a request on it
// (ConnectionManager sets it); nullptr elsewhere.
ConnectionStream* current_connection();
void set_current_connection(ConnectionStream* stream);
// For handlers: whether the client of the request this thread serves has gone away.
inline bool current_client_gone() {
  const ConnectionStream* c = current_connection();
  return c != nullptr && c->peer_gone();
}

}  // namespace dspark
