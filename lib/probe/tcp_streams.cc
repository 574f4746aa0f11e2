// Several TCP streams at once (tcp.h tcp_run_streams): one thread each.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "probe/tcp.h"

namespace cp::probe {

std::vector<TcpResult> tcp_run_streams(const std::string& host, uint16_t port,
                                       const std::vector<std::string>& tokens, TcpMode mode,
                                       double seconds, uint32_t buffer, const CancelToken& cancel,
                                       const ProgressFn& progress) {
  if (tokens.empty() || tokens.size() > static_cast<size_t>(kMaxTcpConnections)) {
    throw Error(ErrorKind::kConfig,
                fmt::format("TCP streams: {} asked for, 1 to {} allowed", tokens.size(),
                            kMaxTcpConnections),
                "set [tcp] streams to at most 16");
  }
  const size_t n = tokens.size();
  std::vector<TcpResult> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::atomic<uint64_t>> bytes(n);
  std::mutex progress_mu;
  // The streams' own token: the caller's cancel, or a stream that failed.
  CancelToken inner;
  std::atomic<size_t> running{n};
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        results[i] = tcp_run(host, port, tokens[i], mode, seconds, buffer, inner,
                             [&, i](uint64_t b, double t) {
                               bytes[i].store(b, std::memory_order_relaxed);
                               if (!progress) return;
                               uint64_t sum = 0;
                               for (const auto& x : bytes) sum += x.load(std::memory_order_relaxed);
                               std::lock_guard<std::mutex> lock(progress_mu);
                               progress(sum, t);
                             });
      } catch (...) {
        errors[i] = std::current_exception();
        inner.cancel();
      }
      running.fetch_sub(1);
    });
  }
  // Passes the caller's cancel on; every 20 ms is well under a sample's length.
  while (running.load() > 0) {
    if (cancel.cancelled()) inner.cancel();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::thread& t : threads) t.join();
  if (cancel.cancelled()) cancel.check();
  // The first stream that failed on its own (the others were then cancelled).
  std::exception_ptr first;
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::kCancelled) std::rethrow_exception(e);
      if (!first) first = e;
    } catch (...) {
      std::rethrow_exception(e);
    }
  }
  if (first) std::rethrow_exception(first);
  return results;
}

}  // namespace cp::probe
