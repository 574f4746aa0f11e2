// Test-only: a TCP server on 127.0.0.1 (ephemeral port) that serves each
// connection on a thread of its own, plus blocking DSI message I/O for the
// test peers built on it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "transfer/afp/dsi.h"

namespace cp::transfer::testing {

class LoopbackServer {
 public:
  // serve(fd, stop) handles one connection; the fd is closed after it returns.
  using ServeFn = std::function<void(int fd, const std::atomic<bool>& stop)>;
  // port 0: an ephemeral one; else that port (SO_REUSEADDR: a restarted
  // server takes it back while the old connections sit in TIME_WAIT).
  explicit LoopbackServer(ServeFn serve, uint16_t port = 0);
  ~LoopbackServer();  // stops accepting, ends and waits for the connections being served
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;
  uint16_t port() const { return port_; }
  // Waits until `n` connections have been served to their end (false after
  // timeout_s): tests look at a peer's record only once it has all of it.
  bool wait_served(size_t n, double timeout_s = 20);

 private:
  void run();
  ServeFn serve_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t served_ = 0;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> connections_;
};

// Reads the next whole DSI message into *out: kClosed at end of stream or
// when stop is set (checked every 50 ms); kIdle, with idle_ms >= 0, after
// idle_ms without a byte.
enum class ReadResult { kMessage, kIdle, kClosed };
ReadResult read_message(int fd, dsi::StreamDecoder& decoder, const std::atomic<bool>& stop,
                        dsi::Message* out, int idle_ms = -1);
// Writes all bytes; false when the peer went away.
bool write_all(int fd, std::string_view bytes);

// A port on 127.0.0.1 nothing listens on: one bound, noted and closed (a
// connection to it is refused unless another socket takes it meanwhile).
uint16_t closed_loopback_port();

}  // namespace cp::transfer::testing
