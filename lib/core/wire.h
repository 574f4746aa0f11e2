// The agent wire protocol (schemas/agent-protocol.md): after one strict
// sentinel line, length-prefixed JSON messages both ways over the agent's
// stdin/stdout (an SSH exec channel, or a pipe for local endpoints).
//
//   sentinel: "CHOKEPOINT-AGENT READY proto=<N> build=<hex id>\n"
//   frame:    4-byte big-endian length L (1 <= L <= kMaxFrame), then L bytes
//             of UTF-8 JSON: one object with at least
//             {"v": <proto>, "type": <string>, "id": <uint>}.
//
// Only .cc files include this header (it pulls in Boost.JSON).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cp::wire {

namespace json = boost::json;

constexpr int kProtocolVersion = 1;
// 1 MiB: messages carry facts and results, never file data. A frame header
// announcing more is the peer's error (Error(kPeer) naming both sizes).
constexpr size_t kMaxFrame = 1u << 20;
// The most bytes a Decoder holds, consumed frames excluded: one whole frame
// and one more feed of up to kMaxFrame. Past it, feed throws Error(kPeer):
// whatever the peer sends, a link's buffer costs at most this.
constexpr size_t kMaxBuffered = 4 + 2 * kMaxFrame;
constexpr std::string_view kSentinelPrefix = "CHOKEPOINT-AGENT READY ";

std::string sentinel_line(std::string_view build_id);

struct Sentinel {
  int proto = 0;
  std::string build_id;
};
// Parses a sentinel line (without '\n'); nullopt when `line` is not one
// (login banners and shell noise before it are skipped by the caller).
std::optional<Sentinel> parse_sentinel(std::string_view line);

// Frames `msg` after stamping "v"; throws Error(kPeer) when it would exceed kMaxFrame.
std::string encode(json::object msg);

// Incremental decoder: feed bytes as they arrive (at most kMaxFrame at a
// time), take whole messages out with next() until it returns nullopt.
// Throws Error(kPeer) naming the problem: oversize or empty frame, invalid
// JSON, not an object, missing or mistyped "v"/"type"/"id", version mismatch,
// over kMaxBuffered bytes held. Consumed frames are dropped at the next feed
// (by offset, also when a partial frame follows them), so a peer that always
// leaves a partial frame behind cannot grow it.
class Decoder {
 public:
  void feed(std::string_view bytes);
  std::optional<json::object> next();
  // Bytes not yet taken out as messages.
  size_t buffered() const { return buf_.size() - pos_; }
  // Bytes the buffer holds (consumed ones not yet dropped included), and its
  // allocation: both stay within kMaxBuffered.
  size_t held() const { return buf_.size(); }
  size_t capacity() const { return buf_.capacity(); }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

// The envelope of a message Decoder returned (it checked both fields).
struct Envelope {
  std::string type;
  uint64_t id = 0;
};
Envelope envelope(const json::object& msg);

// Field accessors for validated reads of peer messages: each throws
// Error(kPeer) "message '<type>': field '<name>' missing / must be a <kind>".
// The envelope and the tests use them; message bodies are read through the
// codecs of core/messages_json.h.
const json::value& field(const json::object& msg, std::string_view name);
std::string get_string(const json::object& msg, std::string_view name);
uint64_t get_u64(const json::object& msg, std::string_view name);
int64_t get_i64(const json::object& msg, std::string_view name);
double get_double(const json::object& msg, std::string_view name);
bool get_bool(const json::object& msg, std::string_view name);
const json::object& get_object(const json::object& msg, std::string_view name);
const json::array& get_array(const json::object& msg, std::string_view name);
// Optional variants: the fallback when absent, still an error when mistyped.
std::string opt_string(const json::object& msg, std::string_view name, std::string fallback = {});
uint64_t opt_u64(const json::object& msg, std::string_view name, uint64_t fallback);
double opt_double(const json::object& msg, std::string_view name, double fallback);
bool opt_bool(const json::object& msg, std::string_view name, bool fallback);

// Peer text made safe to print or store: control characters (C0, DEL) and
// bytes of invalid UTF-8 as \xNN, cut at `max_bytes` of input with
// "...(N bytes)" after it. For the agent's error texts, stderr, names.
constexpr size_t kMaxPrintedText = 2048;
std::string printable(std::string_view text, size_t max_bytes = kMaxPrintedText);

}  // namespace cp::wire
