#include "core/wire.h"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

#include "core/error.h"
#include "core/json_util.h"

namespace cp::wire {

std::string sentinel_line(std::string_view build_id) {
  return fmt::format("{}proto={} build={}\n", kSentinelPrefix, kProtocolVersion, build_id);
}

std::optional<Sentinel> parse_sentinel(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.substr(0, kSentinelPrefix.size()) != kSentinelPrefix) return std::nullopt;
  line.remove_prefix(kSentinelPrefix.size());
  Sentinel s;
  bool have_proto = false, have_build = false;
  while (!line.empty()) {
    size_t sp = line.find(' ');
    std::string_view tok = line.substr(0, sp);
    line = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
    if (tok.substr(0, 6) == "proto=") {
      try {
        s.proto = std::stoi(std::string(tok.substr(6)));
        have_proto = true;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    } else if (tok.substr(0, 6) == "build=") {
      s.build_id = std::string(tok.substr(6));
      have_build = !s.build_id.empty();
    }
  }
  if (!have_proto || !have_build) return std::nullopt;
  return s;
}

namespace {
// The length of the valid UTF-8 sequence at s[i] (1-4), or 0 when invalid.
size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (c < 0x80) return 1;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}
}  // namespace

std::string printable(std::string_view text, size_t max_bytes) {
  const std::string_view head = text.substr(0, max_bytes);
  std::string out;
  out.reserve(head.size());
  for (size_t i = 0; i < head.size();) {
    const auto c = static_cast<unsigned char>(head[i]);
    const size_t n = utf8_length(head, i);
    if (c < 0x20 || c == 0x7f || n == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(head.substr(i, n));
      i += n;
    }
  }
  if (text.size() > max_bytes) out += fmt::format("...({} bytes)", text.size());
  return out;
}

std::string encode(json::object msg) {
  msg["v"] = kProtocolVersion;
  std::string body = json::serialize(msg);
  if (body.size() > kMaxFrame) {
    throw Error(ErrorKind::kPeer,
                fmt::format("message '{}' is {} bytes, over the {} byte frame limit",
                            msg.contains("type") && msg.at("type").is_string()
                                ? std::string(msg.at("type").as_string())
                                : "?",
                            body.size(), kMaxFrame));
  }
  std::string out;
  out.reserve(4 + body.size());
  const uint32_t n = static_cast<uint32_t>(body.size());
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  out += body;
  return out;
}

void Decoder::feed(std::string_view bytes) {
  // Drop what next() consumed: the rest (a partial frame, or nothing) moves
  // to the front. The string keeps its allocation, which the cap bounds.
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  if (buf_.size() + bytes.size() > kMaxBuffered) {
    throw Error(ErrorKind::kPeer,
                fmt::format("{} bytes from the peer without a whole frame, over the {} byte "
                            "buffer cap",
                            buf_.size() + bytes.size(), kMaxBuffered),
                "the peer is not a chokepoint agent of this protocol, or is corrupt");
  }
  if (buf_.capacity() < buf_.size() + bytes.size()) {
    // Grow geometrically, never past the cap.
    buf_.reserve(std::min(kMaxBuffered, std::max(2 * buf_.capacity(), buf_.size() + bytes.size())));
  }
  buf_.append(bytes);
}

namespace {
std::string type_of(const json::object& msg) {
  auto it = msg.find("type");
  if (it != msg.end() && it->value().is_string()) return printable(it->value().as_string(), 64);
  return "?";
}

[[noreturn]] void bad_field(const json::object& msg, std::string_view name, std::string_view what) {
  throw Error(ErrorKind::kPeer,
              fmt::format("message '{}': field '{}' {}", type_of(msg), name, what));
}
}  // namespace

std::optional<json::object> Decoder::next() {
  if (buffered() < 4) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
  const uint32_t n = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
  if (n == 0) throw Error(ErrorKind::kPeer, "empty frame (length 0)");
  if (n > kMaxFrame) {
    throw Error(ErrorKind::kPeer,
                fmt::format("frame of {} bytes is over the {} byte limit", n, kMaxFrame),
                "the peer is not a chokepoint agent of this protocol, or is corrupt");
  }
  if (buffered() < 4 + n) return std::nullopt;
  std::string_view body(buf_.data() + pos_ + 4, n);
  pos_ += 4 + n;
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) throw Error(ErrorKind::kPeer, fmt::format("frame is not valid JSON: {}", ec.message()));
  if (!v.is_object()) throw Error(ErrorKind::kPeer, "frame is not a JSON object");
  json::object msg = std::move(v.as_object());
  const int64_t version = get_i64(msg, "v");
  if (version != kProtocolVersion) {
    throw Error(ErrorKind::kPeer,
                fmt::format("message '{}': protocol version {} but this build speaks {}",
                            type_of(msg), version, kProtocolVersion),
                "redeploy the agent from this build (remove the remote's cached agent)");
  }
  auto tit = msg.find("type");
  if (tit == msg.end()) bad_field(msg, "type", "missing");
  if (!tit->value().is_string()) bad_field(msg, "type", "must be a string");
  get_u64(msg, "id");
  return msg;
}

const json::value& field(const json::object& msg, std::string_view name) {
  auto it = msg.find(name);
  if (it == msg.end()) bad_field(msg, name, "missing");
  return it->value();
}

std::string get_string(const json::object& msg, std::string_view name) {
  const auto& v = field(msg, name);
  if (!v.is_string()) bad_field(msg, name, "must be a string");
  return std::string(v.as_string());
}

namespace {
template <JsonInteger T>
T get_integer(const json::object& msg, std::string_view name) {
  if (const std::optional<T> n = json_integer<T>(field(msg, name))) return *n;
  bad_field(msg, name, kNotJsonInteger<T>);
}
}  // namespace

uint64_t get_u64(const json::object& msg, std::string_view name) {
  return get_integer<uint64_t>(msg, name);
}

int64_t get_i64(const json::object& msg, std::string_view name) {
  return get_integer<int64_t>(msg, name);
}

double get_double(const json::object& msg, std::string_view name) {
  const auto& v = field(msg, name);
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  bad_field(msg, name, "must be a number");
}

bool get_bool(const json::object& msg, std::string_view name) {
  const auto& v = field(msg, name);
  if (!v.is_bool()) bad_field(msg, name, "must be true or false");
  return v.as_bool();
}

const json::object& get_object(const json::object& msg, std::string_view name) {
  const auto& v = field(msg, name);
  if (!v.is_object()) bad_field(msg, name, "must be an object");
  return v.as_object();
}

const json::array& get_array(const json::object& msg, std::string_view name) {
  const auto& v = field(msg, name);
  if (!v.is_array()) bad_field(msg, name, "must be an array");
  return v.as_array();
}

Envelope envelope(const json::object& msg) { return {get_string(msg, "type"), get_u64(msg, "id")}; }

std::string opt_string(const json::object& msg, std::string_view name, std::string fallback) {
  return msg.contains(name) ? get_string(msg, name) : fallback;
}
uint64_t opt_u64(const json::object& msg, std::string_view name, uint64_t fallback) {
  return msg.contains(name) ? get_u64(msg, name) : fallback;
}
double opt_double(const json::object& msg, std::string_view name, double fallback) {
  return msg.contains(name) ? get_double(msg, name) : fallback;
}
bool opt_bool(const json::object& msg, std::string_view name, bool fallback) {
  return msg.contains(name) ? get_bool(msg, name) : fallback;
}

}  // namespace cp::wire
