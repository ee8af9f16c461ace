// ConnectionManager: owns the server's client connections between accept and close, so
// that HTTP worker threads only ever hold a connection that has a whole request head to
// serve.
//
// A connection waiting for its next request (keep-alive idle) or still receiving its
// request head is parked on one epoll thread, which reads what arrives; once a head is
// complete the connection goes to a worker, which serves requests on it for as long as
// complete heads are buffered (pipelining) and parks it again after. So slow or idle
// clients cost a file descriptor, not a worker: with 4 workers, 5 clients sending their
// headers a byte at a time no longer keep /health from answering. Limits:
//
//   keep_alive_timeout   a connection idle between requests is closed after it
//   read_deadline        a request's head and body must arrive within it, counted from
//                        its first byte (cpp-httplib's own read timeout applies per recv,
//                        which a client dripping a byte at a time never hits)
//   max_head_bytes       a larger request head closes the connection
//   max_connections      at the cap, the connection parked longest is closed to make
//                        room (a flood of idle sockets evicts itself, not active clients);
//                        when none is parked the new one is refused
//
// After each request the worker hands its size to release_memory_after
// (memory_release.h), which returns the memory of large ones to the system.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "server/connection_stream.h"

namespace dspark {

struct ConnectionOptions {
  int num_workers = 16;                                  // threads serving requests
  std::chrono::milliseconds keep_alive_timeout{5000};    // idle connection lifetime
  std::chrono::milliseconds read_deadline{30000};        // head + body of one request
  std::chrono::milliseconds io_timeout{5000};            // one read or write wait
  size_t max_head_bytes = 64u << 10;                     // request line + headers
  int64_t max_connections = 1000;                        // open at once
  int64_t max_requests_per_connection = 1000;            // then the connection is closed
};

class ConnectionManager {
 public:
  // Serves one request on the stream (httplib's Server::process_request); false or
  // connection_closed ends the connection.
  using ServeFn = std::function<bool(httplib::Stream& stream, bool close_connection, bool& connection_closed)>;

  ConnectionManager(ConnectionOptions options, ServeFn serve);
  ~ConnectionManager();  // stop()
  ConnectionManager(const ConnectionManager&) = delete;
  ConnectionManager& operator=(const ConnectionManager&) = delete;

  // Takes ownership of an accepted socket (any thread).
  void adopt(int fd);
  // Closes parked connections, lets workers finish the request they serve (then closes
  // their connections) and joins every thread. Idempotent.
  void stop();

  int64_t num_open() const;

 private:
  struct Connection;

  void poll_loop();
  void on_readable(int fd);
  void serve(Connection* c);
  void park(Connection* c);  // with mu_ held
  void close_locked(int fd);
  void sweep_deadlines();

  const ConnectionOptions options_;
  const ServeFn serve_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that interrupts epoll_wait on stop
  mutable std::mutex mu_;
  std::map<int, std::unique_ptr<Connection>> connections_;  // by fd
  std::atomic<bool> stopping_{false};
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::thread poller_;
};

}  // namespace dspark
