#include "transfer/testing/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "core/clock.h"
#include "core/error.h"

namespace cp::transfer::testing {

LoopbackServer::LoopbackServer(ServeFn serve, uint16_t port) : serve_(std::move(serve)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket() failed");
  if (port != 0) {
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  socklen_t len = sizeof a;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 8) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { run(); });
}

LoopbackServer::~LoopbackServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
}

void LoopbackServer::run() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    connections_.emplace_back([this, fd] {
      try {
        serve_(fd, stop_);
      } catch (...) {
        // A peer's own failure ends the connection; tests see it in its log.
      }
      ::close(fd);
      std::lock_guard<std::mutex> lock(mu_);
      ++served_;
      cv_.notify_all();
    });
  }
  for (auto& t : connections_) t.join();
}

bool LoopbackServer::wait_served(size_t n, double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return served_ >= n; });
}

ReadResult read_message(int fd, dsi::StreamDecoder& decoder, const std::atomic<bool>& stop,
                        dsi::Message* out, int idle_ms) {
  double last = monotonic_seconds();
  for (;;) {
    if (auto m = decoder.next()) {
      *out = std::move(*m);
      return ReadResult::kMessage;
    }
    if (stop) return ReadResult::kClosed;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, 50);
    if (n < 0 && errno != EINTR) return ReadResult::kClosed;
    if (n <= 0) {
      if (idle_ms >= 0 && (monotonic_seconds() - last) * 1000 >= idle_ms) return ReadResult::kIdle;
      continue;
    }
    char buf[65536];
    const ssize_t got = ::recv(fd, buf, sizeof buf, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return ReadResult::kClosed;
    last = monotonic_seconds();
    decoder.feed(std::string_view(buf, static_cast<size_t>(got)));
  }
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

uint16_t closed_loopback_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CP_CHECK(s >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  CP_CHECK(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  CP_CHECK(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(s);
  return ntohs(a.sin_port);
}

}  // namespace cp::transfer::testing
