#include "server/connection_manager.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "core/check.h"
#include "server/memory_release.h"

namespace dspark {

using Clock = std::chrono::steady_clock;

struct ConnectionManager::Connection {
  Connection(int fd_in, std::chrono::milliseconds io_timeout) : fd(fd_in), stream(fd_in, io_timeout) {}
  int fd;
  ConnectionStream stream;
  bool busy = false;        // a worker serves it (not in epoll)
  bool registered = false;  // added to epoll once
  Clock::time_point parked_at;
  Clock::time_point deadline;         // while parked: close when passed
  Clock::time_point request_started;  // first byte of the request being received
  int64_t requests = 0;
};

ConnectionManager::ConnectionManager(ConnectionOptions options, ServeFn serve)
    : options_(options), serve_(std::move(serve)) {
  DSPARK_CHECK(options_.num_workers >= 1, "HTTP workers must be >= 1, got {}", options_.num_workers);
  DSPARK_CHECK(options_.max_connections >= 1, "max connections must be >= 1, got {}", options_.max_connections);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  DSPARK_CHECK(epoll_fd_ >= 0 && wake_fd_ >= 0, "cannot create the connection poller");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  workers_ = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(options_.num_workers));
  poller_ = std::thread([this] { poll_loop(); });
}

ConnectionManager::~ConnectionManager() { stop(); }

int64_t ConnectionManager::num_open() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(connections_.size());
}

void ConnectionManager::adopt(int fd) {
  std::lock_guard lock(mu_);
  if (stopping_) {
    ::close(fd);
    return;
  }
  if (static_cast<int64_t>(connections_.size()) >= options_.max_connections) {
    auto oldest = connections_.end();
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (!it->second->busy && (oldest == connections_.end() || it->second->parked_at < oldest->second->parked_at)) {
        oldest = it;
      }
    }
    if (oldest == connections_.end()) {  // every connection is being served: refuse
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      return;
    }
    close_locked(oldest->first);
  }
  auto c = std::make_unique<Connection>(fd, options_.io_timeout);
  c->deadline = Clock::now() + options_.keep_alive_timeout;
  Connection* raw = c.get();
  connections_.emplace(fd, std::move(c));
  park(raw);
}

void ConnectionManager::park(Connection* c) {
  c->busy = false;
  c->parked_at = Clock::now();
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
  ev.data.fd = c->fd;
  ::epoll_ctl(epoll_fd_, c->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
  c->registered = true;
}

void ConnectionManager::close_locked(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (it->second->registered) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  connections_.erase(it);
}

void ConnectionManager::poll_loop() {
  std::vector<epoll_event> events(64);
  auto next_sweep = Clock::now();
  while (!stopping_) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 100);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd != wake_fd_) on_readable(events[i].data.fd);
    }
    if (Clock::now() >= next_sweep) {
      sweep_deadlines();
      next_sweep = Clock::now() + std::chrono::milliseconds(100);
    }
  }
}

void ConnectionManager::on_readable(int fd) {
  std::lock_guard lock(mu_);
  auto it = connections_.find(fd);
  if (it == connections_.end() || it->second->busy || stopping_) return;  // stale event
  Connection* c = it->second.get();
  const bool was_empty = c->stream.buffered() == 0;
  // Reads no more than a head can hold: a body is for the worker to read.
  if (c->stream.fill_nonblocking(options_.max_head_bytes + 1) == ConnectionStream::Fill::kClosed) {
    close_locked(fd);
    return;
  }
  if (was_empty && c->stream.buffered() > 0) {
    // A request has begun: from now its head and body have read_deadline to arrive.
    c->request_started = Clock::now();
    c->deadline = c->request_started + options_.read_deadline;
  }
  if (c->stream.has_complete_head()) {
    c->busy = true;
    workers_->enqueue([this, c] { serve(c); });
  } else if (c->stream.buffered() > options_.max_head_bytes) {
    close_locked(fd);
  } else {
    park(c);
  }
}

void ConnectionManager::serve(Connection* c) {
  set_current_connection(&c->stream);
  bool keep = true;
  while (true) {
    c->stream.set_read_deadline(c->request_started + options_.read_deadline);
    const bool close_connection = stopping_ || ++c->requests >= options_.max_requests_per_connection;
    bool closed = false;
    bool ok = false;
    try {
      ok = serve_(c->stream, close_connection, closed);
    } catch (...) {
      ok = false;
    }
    release_memory_after(c->stream.take_bytes_read());
    if (!ok || closed || close_connection || stopping_) {
      keep = false;
      break;
    }
    if (!c->stream.has_complete_head()) break;
    c->request_started = Clock::now();  // a pipelined request, already buffered
  }
  set_current_connection(nullptr);
  c->stream.set_read_deadline(Clock::time_point::max());
  std::lock_guard lock(mu_);
  if (!keep || stopping_) {
    close_locked(c->fd);
    return;
  }
  const auto now = Clock::now();
  if (c->stream.buffered() > 0) {  // part of the next request is here already
    c->request_started = now;
    c->deadline = now + options_.read_deadline;
  } else {
    c->deadline = now + options_.keep_alive_timeout;
  }
  park(c);
}

void ConnectionManager::sweep_deadlines() {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  std::vector<int> expired;
  for (const auto& [fd, c] : connections_) {
    if (!c->busy && now >= c->deadline) expired.push_back(fd);
  }
  for (int fd : expired) close_locked(fd);
}

void ConnectionManager::stop() {
  if (stopping_.exchange(true)) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(wake_fd_, &one, sizeof(one));
  if (poller_.joinable()) poller_.join();
  {
    std::lock_guard lock(mu_);
    std::vector<int> parked;
    for (const auto& [fd, c] : connections_) {
      if (!c->busy) parked.push_back(fd);
    }
    for (int fd : parked) close_locked(fd);
  }
  workers_->shutdown();  // each worker finishes its request and closes its connection
  {
    std::lock_guard lock(mu_);
    while (!connections_.empty()) close_locked(connections_.begin()->first);
  }
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

}  // namespace dspark
