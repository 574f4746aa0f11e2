// DSI (Data Stream Interface): how AFP travels over TCP (port 548). Every
// message is a 16-byte header then a payload:
//
//   flags(1): 0 request, 1 reply     command(1): DSI command
//   request id(2)                    error code (replies) / data offset (DSIWrite)(4)
//   payload length(4)                reserved(4)
//
// A client opens a session (DSIOpenSession, learning the server request
// quantum: the largest request the server accepts), then sends AFP
// requests in DSICommand (or DSIWrite, with data after the AFP header) and
// matches replies to requests by id, so several may be in flight. Both
// sides send DSITickle when idle; the server sends DSIAttention (answered
// with an empty reply) and DSICloseSession. Internal to lib/transfer.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace cp::transfer::dsi {

enum Command : uint8_t {
  kCloseSession = 1,
  kCommand = 2,
  kGetStatus = 3,
  kOpenSession = 4,
  kTickle = 5,
  kWrite = 6,
  kAttention = 8,
};
// "DSICommand"; "DSI command 9" for an unknown one.
std::string command_name(uint8_t command);

constexpr uint8_t kRequest = 0x00;
constexpr uint8_t kReply = 0x01;
constexpr size_t kHeaderSize = 16;
constexpr uint16_t kDefaultPort = 548;
// netatalk's default server request quantum (1 MiB), used when a server
// announces none.
constexpr uint32_t kDefaultQuantum = 1u << 20;

struct Header {
  uint8_t flags = kRequest;
  uint8_t command = 0;
  uint16_t request_id = 0;
  uint32_t code = 0;    // replies: AFP result (int32); DSIWrite requests: AFP header length
  uint32_t length = 0;  // payload bytes
  uint32_t reserved = 0;

  bool is_reply() const { return flags == kReply; }
  int32_t error() const { return static_cast<int32_t>(code); }
};

std::string encode_header(const Header& h);
// Throws Error(kPeer) naming the problem: short input, flags other than
// request/reply, an unknown command, a payload longer than max_length.
Header decode_header(std::string_view bytes, uint32_t max_length);

struct Message {
  Header header;
  std::string payload;
};
// Header (with length set from the payload) then payload.
std::string encode_message(Header h, std::string_view payload);

// Splits a byte stream into messages (capture tests, peers, the fuzz target).
class StreamDecoder {
 public:
  explicit StreamDecoder(uint32_t max_length) : max_length_(max_length) {}
  void feed(std::string_view bytes);
  // The next whole message, or nullopt; throws Error(kPeer) on a bad header.
  std::optional<Message> next();
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  uint32_t max_length_;
  std::string buf_;
  size_t pos_ = 0;
};

// DSIOpenSession options (type(1), length(1), value).
constexpr uint8_t kOptServerQuantum = 0x00;
constexpr uint8_t kOptAttentionQuantum = 0x01;
constexpr uint8_t kOptReplayCache = 0x02;
struct SessionOptions {
  std::optional<uint32_t> server_quantum;
  std::optional<uint32_t> attention_quantum;
  std::optional<uint32_t> replay_cache;
};
std::string encode_options(const SessionOptions& o);
// Unknown option types are skipped; a truncated option or a known one with
// a length other than 4 throws Error(kPeer).
SessionOptions decode_options(std::string_view payload);

struct ConnectionConfig {
  double connect_timeout_s = 10;
  // Longest silence from the server while a reply is awaited (seconds).
  double reply_timeout_s = 120;
  // Largest payload accepted from the server (bytes).
  uint32_t max_reply = (16u << 20) + 4096;
};

// A client's DSI connection over a blocking-free socket. Thread-safe: one
// caller at a time (a mutex), plus keepalive() from an idle-time thread.
class Connection {
 public:
  // Connects to host:port (TCP_NODELAY). Throws Error(kRemote) naming
  // host:port when it cannot be resolved, refuses, or does not answer;
  // Error(kCancelled) when `cancel` fires first.
  static std::unique_ptr<Connection> connect(const std::string& host, uint16_t port,
                                             const CancelToken* cancel,
                                             ConnectionConfig config = {});
  // Takes ownership of a connected stream socket (tests use socketpairs);
  // `peer` names it in messages ("host:port").
  Connection(int fd, std::string peer, ConnectionConfig config);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& peer() const { return peer_; }
  // Blocking calls poll this token (null: none). The caller keeps it alive
  // while set; drivers set it only during connect, because a session
  // outlives the token its connect() was given.
  void set_cancel(const CancelToken* cancel);
  void set_reply_timeout(double seconds);

  // DSIGetStatus: the FPGetSrvrInfo block (servers close the connection after).
  std::string get_status();
  // DSIOpenSession announcing our attention quantum; returns the server's
  // options. Throws Error(kRemote) when the server refuses the session.
  SessionOptions open_session(uint32_t attention_quantum);

  // Sends an AFP request in a DSICommand; returns its request id.
  uint16_t send_command(std::string_view afp);
  // Sends a DSIWrite: the AFP header (its length is the data offset), then data.
  uint16_t send_write(std::string_view afp_header, std::string_view data);
  // Blocks until the reply to `id` arrives (answering tickles and attentions
  // meanwhile). Throws Error(kRemote) when the server closes, goes silent for
  // reply_timeout_s, or announced a shutdown; Error(kCancelled) when cancelled.
  Message wait(uint16_t id);
  Message call(std::string_view afp) { return wait(send_command(afp)); }
  // As wait(), but the reply's payload lands in dst[0, cap): straight from
  // the socket when it arrives during this call (no copy, no allocation),
  // copied when it came earlier. Returns the reply's header (length = the
  // payload's bytes). A payload longer than cap throws Error(kPeer).
  Header wait_into(uint16_t id, char* dst, size_t cap);
  // The reply to `id` is no longer wanted: dropped when it arrives.
  void discard(uint16_t id);

  // Sends a DSITickle now.
  void tickle();
  // For an idle-time thread: returns at once when another call holds the
  // connection; else reads what the server sent (tickles, attentions,
  // replies) without blocking and sends a tickle when nothing was sent for
  // idle_s seconds. Errors are kept for the next call; never throws.
  void keepalive(double idle_s);
  // DSICloseSession then shuts the socket down. Best effort, never throws.
  void close_session() noexcept;

  bool broken() const;
  // Requests sent whose replies have not been taken or discarded.
  size_t pending() const;
  uint32_t max_reply() const { return config_.max_reply; }
  void set_max_reply(uint32_t bytes);

  struct Stats {
    uint64_t tickles_received = 0;
    uint64_t tickles_sent = 0;
    uint64_t attentions = 0;
  };
  Stats stats() const;

 private:
  uint16_t next_id();
  uint16_t send_request(uint8_t command, uint32_t code, std::string_view a, std::string_view b,
                        bool expect_reply);
  void send_frame(const Header& h, std::string_view a, std::string_view b);
  void send_owed();
  // Reads once without blocking; false when nothing was available.
  bool read_available();
  // After a recv() that returned n: true when it took bytes, false when none
  // are there yet; a closed or lost connection fails the connection
  // (mid_reply: inside a payload being read straight into its message).
  bool received(ssize_t n, bool mid_reply);
  void consume_staged();
  void dispatch(Message m);
  // A reply's request was awaiting one, of its command: no longer outstanding
  // (else the connection fails: the server broke the protocol).
  void settle_outstanding(const Header& h);
  // The message being received is complete: hand it on.
  void finish_current();
  // wait_into() is leaving: a payload still landing in its buffer moves to
  // cur_payload_.
  void detach_target();
  Message wait_locked(uint16_t id);
  // One round of waiting for request `id`'s reply, for wait_locked and
  // wait_into: owed frames sent, what the server sent read in, and, while
  // `arrived()` is false and no attention came, up to one poll slice. Throws
  // on a failure (unless `arrived()` came before it), cancellation, or
  // silence past reply_timeout_s.
  void wait_step(uint16_t id, const std::function<bool()>& arrived);
  [[noreturn]] void fail(Error e);
  void check_usable() const;

  int fd_ = -1;
  std::string peer_;
  const CancelToken* cancel_ = nullptr;
  ConnectionConfig config_;
  mutable std::mutex mu_;

  uint16_t last_id_ = 0;
  std::map<uint16_t, uint8_t> outstanding_;  // request id -> DSI command awaiting a reply
  std::map<uint16_t, Message> replies_;      // arrived, not yet taken
  std::set<uint16_t> discarded_;
  bool owe_tickle_ = false;
  std::deque<uint16_t> owed_attention_acks_;
  std::optional<Error> failure_;    // the connection is unusable: this says why
  std::optional<Error> attention_;  // a shutdown announced by the server
  double last_send_ = 0;            // monotonic seconds
  double last_recv_ = 0;
  Stats stats_;

  // Receive state: a staging buffer, and the message being assembled.
  std::vector<char> staging_;
  size_t staged_begin_ = 0, staged_end_ = 0;
  bool have_header_ = false;
  Header cur_;
  std::string cur_payload_;
  size_t cur_got_ = 0;
  // Where the current payload lands: cur_payload_, or wait_into()'s buffer.
  char* cur_dst_ = nullptr;
  bool cur_direct_ = false;
  // wait_into()'s reply: its id and buffer while it waits, then its header.
  struct Target {
    bool active = false, done = false;
    uint16_t id = 0;
    char* dst = nullptr;
    size_t cap = 0;
    Header header;
  } target_;
};

}  // namespace cp::transfer::dsi
