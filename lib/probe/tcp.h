// RAM-to-RAM TCP between two agents (iperf-like): one side listens (TcpServer),
// the other connects (tcp_run) and either sends or receives for a duration.
//
// Stream: the connector first sends a fixed 80-byte header
//   "CPTCP1" | mode (1 byte: 0 = connector sends, 1 = connector receives) |
//   token length (1 byte, 1..64) | token (64 bytes, zero padded) |
//   duration ms (u32 big-endian) | buffer bytes (u32 big-endian)
// then payload flows one way. The sender stops after the duration and shuts down
// its write side; the receiver reads to EOF and closes; the sender's clock stops
// when it sees that close (all data delivered).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "probe/progress.h"

namespace cp::probe {

enum class TcpMode { kSend, kRecv };  // what the CONNECTING side does

// Default bytes per send()/recv() (as iperf3).
inline constexpr uint32_t kDefaultTcpBuffer = 128u << 10;
// Accepted buffer sizes, bytes.
inline constexpr uint32_t kMinTcpBuffer = 1u << 10;
inline constexpr uint32_t kMaxTcpBuffer = 16u << 20;
// Longest token (sample id), bytes.
inline constexpr size_t kMaxTcpToken = 64;
// Size of the stream header, bytes.
inline constexpr size_t kTcpHeaderSize = 80;
// Connections a TcpServer serves at once; more are dropped.
inline constexpr int kMaxTcpConnections = 16;

struct TcpInfoSummary {
  bool available = false;       // kernel tcp_info read ok
  uint64_t retransmits = 0;     // tcpi_total_retrans (segments)
  uint32_t rtt_us = 0;          // smoothed RTT, microseconds
  uint32_t rttvar_us = 0;       // RTT variance, microseconds
  uint32_t snd_cwnd = 0;        // congestion window, segments
  uint32_t snd_mss = 0;         // bytes
  uint32_t pmtu = 0;            // path MTU, bytes
  double busy_s = 0;            // tcpi_busy_time (us -> s)
  double rwnd_limited_s = 0;    // tcpi_rwnd_limited: time limited by the receive window
  double sndbuf_limited_s = 0;  // tcpi_sndbuf_limited: time limited by the send buffer
  uint64_t delivery_rate = 0;   // bytes/s
};

struct TcpResult {
  uint64_t bytes = 0;   // this side's payload bytes sent (sender) or received (receiver)
  double seconds = 0;   // sender: first write .. all data sent and peer closed;
                        // receiver: first byte .. EOF
  bool sender = false;  // this side sent the data
  TcpInfoSummary info;  // this side's socket at the end (meaningful on the sender)
  // This side's smoothed RTT before any payload moved (the handshake and header),
  // microseconds; 0 when unknown. Against info.rtt_us (under load) it shows a queue
  // building on the path.
  uint32_t rtt_idle_us = 0;
};

// Listening side: accepts connections on a background thread and serves each
// sample on its own thread (at most kMaxTcpConnections at once). If the connector
// sends, this side sinks to EOF; if the connector receives, this side sources for
// the duration, then shuts down its write side. A malformed header or a token not
// among `tokens` (a stranger on the port) drops that connection right after its
// header, before any payload, and keeps the reason (rejections()).
class TcpServer {
 public:
  // bind_address: an IP address ("" = 0.0.0.0); port 0: ephemeral. tokens: the
  // samples' tokens it serves, each once (a replay is dropped); empty: any. Throws Error(kConfig)
  // for a bad address or token, Error(kIo) when it cannot listen.
  explicit TcpServer(const std::string& bind_address, uint16_t port = 0,
                     const std::vector<std::string>& tokens = {});
  ~TcpServer();  // stops the threads, closes everything
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  uint16_t port() const;
  // Blocks until the sample `token` has finished on this side and returns (and
  // forgets) its result. Throws Error(kIo) when it failed on this side or did not
  // finish within timeout_s, Error(kCancelled) when `cancel` fires.
  TcpResult wait_result(const std::string& token, double timeout_s, const CancelToken& cancel);
  // Why recent connections were dropped ("127.0.0.1:40112: bad magic"), oldest first
  // (the last 32 kept).
  std::vector<std::string> rejections() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The address to listen on for a peer that connects to `peer_address`: that
// address when this host can bind it, else every address of its family
// ("0.0.0.0", or "::" for an IPv6 one): behind NAT, or for a host name, the
// peer's address is not one of ours.
std::string listen_address_for(const std::string& peer_address);

// Connecting side: connects to host:port, sends the header, then sends for
// `seconds` (kSend) or receives to EOF (kRecv). buffer: bytes per send/recv
// (kDefaultTcpBuffer is the usual choice). Throws Error(kConfig) for bad
// arguments, Error(kIo) when the connection fails, Error(kCancelled) on cancel
// (the connection is then reset so the peer records a failure too).
TcpResult tcp_run(const std::string& host, uint16_t port, const std::string& token, TcpMode mode,
                  double seconds, uint32_t buffer, const CancelToken& cancel,
                  const ProgressFn& progress);

// Several streams at once (a link faster than one stream, as iperf3 -P):
// one tcp_run per token to the same listener, each on its own thread. Their
// results in the tokens' order; `progress` gets their bytes summed. A stream
// that fails ends the others (reset, so the listener records failures too) and
// its error is thrown; `cancel` ends them all (Error(kCancelled)).
std::vector<TcpResult> tcp_run_streams(const std::string& host, uint16_t port,
                                       const std::vector<std::string>& tokens, TcpMode mode,
                                       double seconds, uint32_t buffer, const CancelToken& cancel,
                                       const ProgressFn& progress);

}  // namespace cp::probe
