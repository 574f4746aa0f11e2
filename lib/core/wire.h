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
// 1 MiB: messages carry facts and results, never file data.
constexpr size_t kMaxFrame = 1u << 20;
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

// Incremental decoder: feed bytes as they arrive, take whole messages out.
// Throws Error(kPeer) naming the problem: oversize or empty frame, invalid
// JSON, not an object, missing or mistyped "v"/"type"/"id", version mismatch.
class Decoder {
 public:
  void feed(std::string_view bytes);
  std::optional<json::object> next();
  size_t buffered() const { return buf_.size() - pos_; }

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

}  // namespace cp::wire
