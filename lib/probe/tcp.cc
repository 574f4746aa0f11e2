#include "probe/tcp.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "probe/platform.h"

namespace cp::probe {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr char kMagic[6] = {'C', 'P', 'T', 'C', 'P', '1'};
// Blocked send/recv calls return after this long (SO_SNDTIMEO/SO_RCVTIMEO) so loops can
// notice a cancel or a server stop without any extra syscall on the data path; seconds.
constexpr double kIoSlice = 0.2;
constexpr double kHeaderTimeout = 10;   // s for a connector to deliver its header
constexpr double kConnectTimeout = 10;  // s per address tried
constexpr double kIdleTimeout = 60;     // s without data before a receiver gives up
constexpr double kCloseWaitMin = 60;    // s a sender waits for the receiver's close, at least
constexpr uint32_t kMaxDurationMs = 3600u * 1000;
constexpr size_t kMaxRejections = 32;
constexpr size_t kMaxResults = 64;  // uncollected results kept

// CLOCK_MONOTONIC_COARSE: a vDSO read without the TSC, for deadline checks on the data path.
double coarse_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// What ends a transfer early: the caller's token (connector) or the server's stop flag.
struct Abort {
  const CancelToken* cancel = nullptr;
  const std::atomic<bool>* stop = nullptr;
  bool fired() const {
    return (cancel != nullptr && cancel->cancelled()) ||
           (stop != nullptr && stop->load(std::memory_order_relaxed));
  }
  void check() const {
    if (fired()) {
      throw Error(ErrorKind::kCancelled,
                  stop != nullptr ? "the TCP server was stopped" : "cancelled");
    }
  }
};

std::string endpoint_text(const tcp::endpoint& ep) {
  if (ep.address().is_v6()) return fmt::format("[{}]:{}", ep.address().to_string(), ep.port());
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

Error net_error(const std::string& what, int err) {
  std::string hint;
  switch (err) {
    case ECONNRESET:
    case EPIPE:
      hint = "the peer dropped the connection: see its log (cancelled, rejected header, stopped)";
      break;
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
      hint = "check the route and any firewall between the two hosts";
      break;
    default:
      hint = "check the network between the two hosts";
  }
  return Error(ErrorKind::kIo, fmt::format("{}: {}", what, errno_text(err)), hint);
}

bool transient(int err) { return err == EINTR || err == EAGAIN || err == EWOULDBLOCK; }

void set_io_timeouts(int fd) {
  timeval tv{0, static_cast<suseconds_t>(kIoSlice * 1e6)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// close() then sends RST, not FIN: the peer sees an error, never a short but clean sample.
void set_reset_on_close(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

struct Header {
  TcpMode mode = TcpMode::kSend;
  std::string token;
  uint32_t duration_ms = 0;
  uint32_t buffer = 0;
};

void put_u32(unsigned char* p, uint32_t v) {
  p[0] = static_cast<unsigned char>(v >> 24);
  p[1] = static_cast<unsigned char>(v >> 16);
  p[2] = static_cast<unsigned char>(v >> 8);
  p[3] = static_cast<unsigned char>(v);
}

uint32_t get_u32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

std::array<unsigned char, kTcpHeaderSize> encode_header(const Header& h) {
  std::array<unsigned char, kTcpHeaderSize> out{};
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  out[6] = h.mode == TcpMode::kSend ? 0 : 1;
  out[7] = static_cast<unsigned char>(h.token.size());
  std::memcpy(out.data() + 8, h.token.data(), h.token.size());
  put_u32(out.data() + 8 + kMaxTcpToken, h.duration_ms);
  put_u32(out.data() + 12 + kMaxTcpToken, h.buffer);
  return out;
}

// Empty when `p` holds a valid header (then stored in *h), else why not.
std::string decode_header(const unsigned char* p, Header* h) {
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) return "bad magic (not a chokepoint TCP probe)";
  if (p[6] > 1) return fmt::format("unknown mode {}", p[6]);
  const size_t token_len = p[7];
  if (token_len == 0 || token_len > kMaxTcpToken) {
    return fmt::format("token length {} outside 1..{}", token_len, kMaxTcpToken);
  }
  const uint32_t duration_ms = get_u32(p + 8 + kMaxTcpToken);
  const uint32_t buffer = get_u32(p + 12 + kMaxTcpToken);
  if (duration_ms == 0 || duration_ms > kMaxDurationMs) {
    return fmt::format("duration {} ms outside 1..{}", duration_ms, kMaxDurationMs);
  }
  if (buffer < kMinTcpBuffer || buffer > kMaxTcpBuffer) {
    return fmt::format("buffer {} bytes outside {}..{}", buffer, kMinTcpBuffer, kMaxTcpBuffer);
  }
  h->mode = p[6] == 0 ? TcpMode::kSend : TcpMode::kRecv;
  h->token.assign(reinterpret_cast<const char*>(p + 8), token_len);
  h->duration_ms = duration_ms;
  h->buffer = buffer;
  return {};
}

// A sample's payload buffer, allocated once; filled with non-repeating bytes so that
// compression somewhere on the path (a VPN, a WAN optimiser) cannot flatter the rate.
std::unique_ptr<unsigned char[]> make_buffer(size_t size) {
  std::unique_ptr<unsigned char[]> buf(new unsigned char[size]);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    buf[i] = static_cast<unsigned char>(x);
  }
  return buf;
}

void send_all(int fd, const unsigned char* p, size_t n, const Abort& abort, double timeout,
              const std::string& peer) {
  const double deadline = monotonic_seconds() + timeout;
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && !transient(errno)) throw net_error(fmt::format("sending to {}", peer), errno);
    abort.check();
    if (monotonic_seconds() > deadline) {
      throw Error(ErrorKind::kIo, fmt::format("{} accepted no data for {} s", peer, timeout),
                  "check the network between the two hosts");
    }
  }
}

// Reads exactly n bytes; returns fewer only at EOF. Throws on error or timeout.
size_t recv_exact(int fd, unsigned char* p, size_t n, const Abort& abort, double timeout,
                  const std::string& peer) {
  const double deadline = monotonic_seconds() + timeout;
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) break;
    if (!transient(errno)) throw net_error(fmt::format("receiving from {}", peer), errno);
    abort.check();
    if (monotonic_seconds() > deadline) {
      throw Error(ErrorKind::kIo,
                  fmt::format("{} sent {} of {} header bytes in {} s", peer, got, n, timeout),
                  "only chokepoint agents should connect to this port");
    }
  }
  return got;
}

// Sends `buf` over and over for `seconds`, shuts down the write side, then waits for the
// receiver's close: it reads to EOF before closing, so the close marks full delivery.
TcpResult run_sender(int fd, const unsigned char* buf, size_t len, double seconds,
                     const Abort& abort, const ProgressFn& progress, const std::string& peer) {
  TcpResult r;
  r.sender = true;
  r.rtt_idle_us = os::read_tcp_info(fd).rtt_us;  // before any payload: the idle path
  uint64_t bytes = 0;
  const double start = monotonic_seconds();
  const double deadline = coarse_seconds() + seconds;
  double next_report = coarse_seconds() + kProgressInterval;
  for (;;) {
    ssize_t n = ::send(fd, buf, len, MSG_NOSIGNAL);
    if (n > 0) {
      bytes += static_cast<uint64_t>(n);
    } else if (n < 0 && !transient(errno)) {
      throw net_error(fmt::format("sending to {}", peer), errno);
    }
    if (abort.fired()) abort.check();
    const double now = coarse_seconds();
    if (now >= deadline) break;
    if (progress && now >= next_report) {
      next_report = now + kProgressInterval;
      progress(bytes, monotonic_seconds() - start);
    }
  }
  if (::shutdown(fd, SHUT_WR) != 0) throw net_error(fmt::format("finishing to {}", peer), errno);
  const double close_deadline = coarse_seconds() + std::max(kCloseWaitMin, 2 * seconds);
  unsigned char sink[512];
  for (;;) {
    ssize_t n = ::recv(fd, sink, sizeof sink, 0);
    if (n == 0) break;
    if (n < 0 && !transient(errno)) {
      throw net_error(fmt::format("waiting for {} to finish reading", peer), errno);
    }
    abort.check();
    if (coarse_seconds() > close_deadline) {
      throw Error(ErrorKind::kIo,
                  fmt::format("{} did not finish reading within {} s after the last send", peer,
                              std::max(kCloseWaitMin, 2 * seconds)),
                  "the path may be stalled; check the network between the two hosts");
    }
  }
  r.seconds = monotonic_seconds() - start;
  r.bytes = bytes;
  r.info = os::read_tcp_info(fd);
  return r;
}

// Reads to EOF; the clock runs from the first payload byte to EOF.
TcpResult run_receiver(int fd, unsigned char* buf, size_t len, const Abort& abort,
                       const ProgressFn& progress, const std::string& peer) {
  TcpResult r;
  r.rtt_idle_us = os::read_tcp_info(fd).rtt_us;  // before any payload: the idle path
  uint64_t bytes = 0;
  bool started = false;
  double first = 0;
  double last_data = coarse_seconds();
  double next_report = last_data + kProgressInterval;
  for (;;) {
    ssize_t n = ::recv(fd, buf, len, 0);
    if (n == 0) break;
    if (n > 0) {
      if (!started) {
        started = true;
        first = monotonic_seconds();
      }
      bytes += static_cast<uint64_t>(n);
    } else if (!transient(errno)) {
      throw net_error(fmt::format("receiving from {}", peer), errno);
    }
    if (abort.fired()) abort.check();
    const double now = coarse_seconds();
    if (n > 0) {
      last_data = now;
    } else if (now - last_data > kIdleTimeout) {
      throw Error(ErrorKind::kIo, fmt::format("no data from {} for {} s", peer, kIdleTimeout),
                  "the sender stalled or the path dropped; check the network between the hosts");
    }
    if (progress && started && now >= next_report) {
      next_report = now + kProgressInterval;
      progress(bytes, monotonic_seconds() - first);
    }
  }
  const double end = monotonic_seconds();
  r.bytes = bytes;
  r.seconds = started ? end - first : 0;
  r.info = os::read_tcp_info(fd);
  return r;
}

void check_params(const std::string& token, double seconds, uint32_t buffer) {
  if (token.empty() || token.size() > kMaxTcpToken) {
    throw Error(ErrorKind::kConfig,
                fmt::format("TCP sample token '{}' must be 1..{} bytes", token, kMaxTcpToken));
  }
  if (!std::isfinite(seconds) || seconds * 1000 < 1 || seconds * 1000 > kMaxDurationMs) {
    throw Error(ErrorKind::kConfig,
                fmt::format("TCP sample duration {} s is outside 0.001..{} s", seconds,
                            kMaxDurationMs / 1000),
                "use a duration such as 10s");
  }
  if (buffer < kMinTcpBuffer || buffer > kMaxTcpBuffer) {
    throw Error(
        ErrorKind::kConfig,
        fmt::format("TCP buffer {} bytes is outside {}..{}", buffer, kMinTcpBuffer, kMaxTcpBuffer),
        "use a buffer such as 128KiB");
  }
}

}  // namespace

struct TcpServer::State {
  struct Outcome {
    bool ok = false;
    TcpResult result;
    std::string error;
  };
  struct Conn {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  // Accepting runs on Asio (async_accept on the accept thread's io_context, which
  // the destructor stops); each connection is served on its own thread with
  // blocking send/recv, the cheapest data path.
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer backoff{io};
  uint16_t port = 0;
  std::atomic<bool> stop{false};
  std::thread accept_thread;
  std::list<std::unique_ptr<Conn>> conns;  // accept thread only, then the destructor

  mutable std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, Outcome> results;  // by token
  std::deque<std::string> result_order;    // oldest first, to bound `results`
  std::set<std::string> active;            // tokens being served
  bool any_token = true;                   // no token list was given
  std::set<std::string> expected;          // else the tokens not served yet
  std::deque<std::string> rejected;

  void reject(std::string why) {
    std::lock_guard lock(mu);
    rejected.push_back(std::move(why));
    while (rejected.size() > kMaxRejections) rejected.pop_front();
  }

  void record(const std::string& token, Outcome outcome) {
    std::lock_guard lock(mu);
    results[token] = std::move(outcome);
    result_order.push_back(token);
    while (result_order.size() > kMaxResults) {
      results.erase(result_order.front());
      result_order.pop_front();
    }
    active.erase(token);
    cv.notify_all();
  }

  // Joins finished connection threads (all of them when `all`, after stop is set).
  void reap(bool all) {
    for (auto it = conns.begin(); it != conns.end();) {
      if (all || (*it)->done.load()) {
        if ((*it)->thread.joinable()) (*it)->thread.join();
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Accepts the next connection; each handler queues the one after it.
  void accept_next() {
    acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket sock) {
      if (stop.load() || ec == asio::error::operation_aborted) return;
      reap(false);
      if (ec) {
        if (ec == asio::error::would_block || ec == asio::error::try_again ||
            ec == asio::error::connection_aborted || ec == asio::error::interrupted) {
          accept_next();
          return;
        }
        // Out of descriptors and the like: keep the reason and back off instead of spinning.
        reject(fmt::format("accept failed: {}", ec.message()));
        backoff.expires_after(std::chrono::milliseconds(100));
        backoff.async_wait([this](const boost::system::error_code& e) {
          if (!e && !stop.load()) accept_next();
        });
        return;
      }
      if (conns.size() >= static_cast<size_t>(kMaxTcpConnections)) {
        reject(fmt::format("{}: too many connections", peer_text(sock)));
      } else {
        auto conn = std::make_unique<Conn>();
        Conn* c = conn.get();
        try {
          c->thread =
              std::thread([this, c, s = std::move(sock)]() mutable { serve(std::move(s), c); });
          conns.push_back(std::move(conn));
        } catch (const std::exception& e) {
          reject(fmt::format("cannot start a connection thread: {}", e.what()));
        }
      }
      accept_next();
    });
  }

  static std::string peer_text(const tcp::socket& sock) {
    boost::system::error_code ec;
    tcp::endpoint ep = sock.remote_endpoint(ec);
    return ec ? std::string("unknown peer") : endpoint_text(ep);
  }

  void serve(tcp::socket sock, Conn* self) {
    const std::string peer = peer_text(sock);
    const int fd = sock.native_handle();
    set_io_timeouts(fd);
    const Abort abort{nullptr, &stop};
    std::string token;
    bool registered = false;
    try {
      unsigned char raw[kTcpHeaderSize];
      const size_t got = recv_exact(fd, raw, sizeof raw, abort, kHeaderTimeout, peer);
      Header h;
      std::string why;
      if (got < sizeof raw) {
        why = fmt::format("closed after {} of {} header bytes", got, sizeof raw);
      } else {
        why = decode_header(raw, &h);
      }
      if (why.empty()) {
        std::lock_guard lock(mu);
        if (!any_token && expected.erase(h.token) == 0) {
          why = "a token this listener does not serve";  // not echoed: a stranger's bytes
        } else if (active.count(h.token) != 0 || results.count(h.token) != 0) {
          why = fmt::format("duplicate token '{}'", h.token);
        } else {
          active.insert(h.token);
          token = h.token;
          registered = true;
        }
      }
      if (!why.empty()) {
        // A reset, not a clean close: a connector waiting for data must not see an empty sample.
        set_reset_on_close(fd);
        reject(fmt::format("{}: {}", peer, why));
      } else {
        auto buf = make_buffer(h.buffer);
        TcpResult r =
            h.mode == TcpMode::kSend
                ? run_receiver(fd, buf.get(), h.buffer, abort, nullptr, peer)
                : run_sender(fd, buf.get(), h.buffer, h.duration_ms / 1000.0, abort, nullptr, peer);
        // Recorded before the close: a connector that waits for the close finds it here.
        record(token, Outcome{true, r, {}});
      }
    } catch (const std::exception& e) {
      set_reset_on_close(fd);
      if (registered) {
        record(token, Outcome{false, {}, e.what()});
      } else {
        reject(fmt::format("{}: {}", peer, e.what()));
      }
    }
    boost::system::error_code ec;
    sock.close(ec);
    self->done.store(true);
  }
};

TcpServer::TcpServer(const std::string& bind_address, uint16_t port,
                     const std::vector<std::string>& tokens)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  for (const std::string& t : tokens) {
    if (t.empty() || t.size() > kMaxTcpToken) {
      throw Error(ErrorKind::kConfig, fmt::format("TCP sample token of {} bytes is outside 1..{}",
                                                  t.size(), kMaxTcpToken));
    }
    s.expected.insert(t);
    s.any_token = false;
  }
  boost::system::error_code ec;
  const std::string address = bind_address.empty() ? "0.0.0.0" : bind_address;
  asio::ip::address addr = asio::ip::make_address(address, ec);
  if (ec) {
    throw Error(ErrorKind::kConfig,
                fmt::format("TCP listen address '{}' is not an IP address", bind_address),
                "use an address such as 0.0.0.0, 127.0.0.1 or ::");
  }
  const tcp::endpoint ep(addr, port);
  auto fail = [&](const char* what) {
    return Error(
        ErrorKind::kIo, fmt::format("cannot {} TCP {}: {}", what, endpoint_text(ep), ec.message()),
        ec == asio::error::address_in_use ? "choose another port, or stop the program using it"
                                          : "check that the address belongs to this host");
  };
  s.acceptor.open(ep.protocol(), ec);
  if (ec) throw fail("open");
  s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  s.acceptor.bind(ep, ec);
  if (ec) throw fail("bind");
  s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw fail("listen on");
  s.port = s.acceptor.local_endpoint(ec).port();
  if (ec) throw fail("configure");
  s.accept_next();
  s.accept_thread = std::thread([&s] { s.io.run(); });
}

TcpServer::~TcpServer() {
  State& s = *state_;
  s.stop.store(true);
  s.io.stop();  // ends the pending accept; its handler never runs
  if (s.accept_thread.joinable()) s.accept_thread.join();
  // Connection threads notice `stop` within kIoSlice and reset their connections.
  s.reap(true);
  boost::system::error_code ec;
  s.acceptor.close(ec);
}

uint16_t TcpServer::port() const { return state_->port; }

std::string listen_address_for(const std::string& peer_address) {
  boost::system::error_code ec;
  const asio::ip::address addr = asio::ip::make_address(peer_address, ec);
  const bool v6 = ec ? peer_address.find(':') != std::string::npos : addr.is_v6();
  const std::string any = v6 ? "::" : "0.0.0.0";
  if (ec || addr.is_unspecified()) return any;
  asio::io_context io;
  tcp::acceptor probe(io);
  probe.open(addr.is_v6() ? tcp::v6() : tcp::v4(), ec);
  if (!ec) probe.bind(tcp::endpoint(addr, 0), ec);
  return ec ? any : addr.to_string();
}

TcpResult TcpServer::wait_result(const std::string& token, double timeout_s,
                                 const CancelToken& cancel) {
  State& s = *state_;
  const double deadline = monotonic_seconds() + timeout_s;
  std::unique_lock lock(s.mu);
  for (;;) {
    auto it = s.results.find(token);
    if (it != s.results.end()) {
      State::Outcome outcome = std::move(it->second);
      s.results.erase(it);
      s.result_order.erase(std::find(s.result_order.begin(), s.result_order.end(), token));
      if (!outcome.ok) {
        throw Error(ErrorKind::kIo,
                    fmt::format("TCP sample '{}' failed on this side: {}", token, outcome.error),
                    "see the other side's error; the connection broke or was cancelled");
      }
      return outcome.result;
    }
    cancel.check();
    const double left = deadline - monotonic_seconds();
    if (left <= 0) {
      const bool running = s.active.count(token) != 0;
      throw Error(
          ErrorKind::kIo,
          fmt::format("TCP sample '{}' did not finish on this side within {} s", token, timeout_s),
          running ? "the transfer is still running: allow a longer timeout"
                  : fmt::format("no connection for it arrived on port {}: check that the "
                                "peer can reach this host (address, firewall)",
                                s.port));
    }
    // Short waits so a cancel is noticed promptly; seconds -> ms.
    s.cv.wait_for(lock,
                  std::chrono::milliseconds(static_cast<int64_t>(std::min(left, 0.05) * 1000) + 1));
  }
}

std::vector<std::string> TcpServer::rejections() const {
  std::lock_guard lock(state_->mu);
  return {state_->rejected.begin(), state_->rejected.end()};
}

namespace {

// Asio's asynchronous connect, run in short slices, so neither an unreachable
// host (minutes of SYN retries) nor a cancel is missed. False with *err set
// when this address failed.
bool connect_with_timeout(asio::io_context& io, tcp::socket& sock, const tcp::endpoint& ep,
                          const CancelToken& cancel, int* err) {
  boost::system::error_code result = asio::error::would_block;
  io.restart();
  sock.async_connect(ep, [&](const boost::system::error_code& ec) { result = ec; });
  const double deadline = monotonic_seconds() + kConnectTimeout;
  boost::system::error_code ignored;
  while (result == asio::error::would_block) {
    io.run_for(std::chrono::milliseconds(100));
    if (result != asio::error::would_block) break;
    if (cancel.cancelled() || monotonic_seconds() > deadline) {
      sock.close(ignored);  // completes the connect with operation_aborted
      io.run();
      cancel.check();
      *err = ETIMEDOUT;
      return false;
    }
  }
  if (result) {
    *err = result.value();
    sock.close(ignored);
    return false;
  }
  // The transfer uses blocking send/recv on the descriptor: undo the
  // O_NONBLOCK Asio set for the asynchronous connect.
  sock.native_non_blocking(false, ignored);
  return true;
}

}  // namespace

TcpResult tcp_run(const std::string& host, uint16_t port, const std::string& token, TcpMode mode,
                  double seconds, uint32_t buffer, const CancelToken& cancel,
                  const ProgressFn& progress) {
  check_params(token, seconds, buffer);
  cancel.check();
  asio::io_context io;
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) {
    throw Error(ErrorKind::kIo, fmt::format("cannot resolve '{}': {}", host, ec.message()),
                "check the host name, or use an IP address");
  }
  tcp::socket sock(io);
  std::string peer;
  int err = ECONNREFUSED;
  for (const auto& entry : endpoints) {
    if (connect_with_timeout(io, sock, entry.endpoint(), cancel, &err)) {
      peer = endpoint_text(entry.endpoint());
      break;
    }
  }
  if (!sock.is_open()) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot connect to {} port {}: {}", host, port, errno_text(err)),
                fmt::format("check that the agent on {} listens on port {} and that no firewall "
                            "blocks it",
                            host, port));
  }
  const int fd = sock.native_handle();
  set_io_timeouts(fd);
  const Abort abort{&cancel, nullptr};
  try {
    Header h;
    h.mode = mode;
    h.token = token;
    h.duration_ms = static_cast<uint32_t>(std::llround(seconds * 1000));
    h.buffer = buffer;
    const auto raw = encode_header(h);
    send_all(fd, raw.data(), raw.size(), abort, kHeaderTimeout, peer);
    auto buf = make_buffer(buffer);
    TcpResult r = mode == TcpMode::kSend
                      ? run_sender(fd, buf.get(), buffer, seconds, abort, progress, peer)
                      : run_receiver(fd, buf.get(), buffer, abort, progress, peer);
    // A serving peer always sends something; nothing at all means it refused the sample.
    if (mode == TcpMode::kRecv && r.bytes == 0) {
      throw Error(ErrorKind::kIo, fmt::format("{} closed without sending any data", peer),
                  "the peer refused the sample: see its log (duplicate token, stopping)");
    }
    sock.close(ec);
    return r;
  } catch (...) {
    set_reset_on_close(fd);
    sock.close(ec);
    throw;
  }
}

}  // namespace cp::probe
