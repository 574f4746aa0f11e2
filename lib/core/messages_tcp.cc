// The TCP stage's messages (messages.h), as messages.cc codes the rest.
#include <boost/json.hpp>

#include "core/messages_in.h"
#include "core/messages_json.h"

namespace cp::msg {
namespace json = boost::json;
using codec::array_of;
using codec::In;
using codec::strings;

// ---- TCP -------------------------------------------------------------------

json::object to_json(const TcpListenRequest& m) {
  json::object o{{"bind", m.bind}};
  if (!m.tokens.empty()) o["tokens"] = strings(m.tokens);
  return o;
}
void from_json(const json::value& v, TcpListenRequest& m, Source src, std::string_view what) {
  In(v, src, what).need("bind", m.bind).opt("tokens", m.tokens);
}

json::object to_json(const TcpListenResult& m) {
  json::object o{{"port", m.port}};
  if (!m.address.empty()) o["address"] = m.address;
  return o;
}
void from_json(const json::value& v, TcpListenResult& m, Source src, std::string_view what) {
  In(v, src, what).need("port", m.port).opt("address", m.address);
}

json::object to_json(const TcpRunRequest& m) {
  json::object o{{"host", m.host}, {"port", m.port},       {"token", m.token},
                 {"mode", m.mode}, {"seconds", m.seconds}, {"buffer", m.buffer}};
  if (!m.tokens.empty()) o["tokens"] = strings(m.tokens);
  return o;
}
void from_json(const json::value& v, TcpRunRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("host", m.host)
      .need("port", m.port)
      .need("token", m.token)
      .need("mode", m.mode)
      .need("seconds", m.seconds)
      .opt("buffer", m.buffer)
      .opt("tokens", m.tokens);
}

json::object to_json(const TcpResultRequest& m) {
  json::object o{{"token", m.token}, {"timeout", m.timeout}};
  if (!m.tokens.empty()) o["tokens"] = strings(m.tokens);
  return o;
}
void from_json(const json::value& v, TcpResultRequest& m, Source src, std::string_view what) {
  In(v, src, what).need("token", m.token).opt("timeout", m.timeout).opt("tokens", m.tokens);
}

json::object to_json(const TcpInfo& m) {
  return {{"available", m.available},
          {"retransmits", m.retransmits},
          {"rtt_us", m.rtt_us},
          {"rttvar_us", m.rttvar_us},
          {"snd_cwnd", m.snd_cwnd},
          {"snd_mss", m.snd_mss},
          {"pmtu", m.pmtu},
          {"busy_s", m.busy_s},
          {"rwnd_limited_s", m.rwnd_limited_s},
          {"sndbuf_limited_s", m.sndbuf_limited_s},
          {"delivery_rate", m.delivery_rate},
          {"rtt_idle_us", m.rtt_idle_us}};
}
void from_json(const json::value& v, TcpInfo& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("available", m.available)
      .opt("retransmits", m.retransmits)
      .opt("rtt_us", m.rtt_us)
      .opt("rttvar_us", m.rttvar_us)
      .opt("snd_cwnd", m.snd_cwnd)
      .opt("snd_mss", m.snd_mss)
      .opt("pmtu", m.pmtu)
      .opt("busy_s", m.busy_s)
      .opt("rwnd_limited_s", m.rwnd_limited_s)
      .opt("sndbuf_limited_s", m.sndbuf_limited_s)
      .opt("delivery_rate", m.delivery_rate)
      .opt("rtt_idle_us", m.rtt_idle_us);
}

json::object to_json(const TcpStream& m) {
  return {{"bytes", m.bytes}, {"seconds", m.seconds}, {"tcp_info", to_json(m.tcp_info)}};
}
void from_json(const json::value& v, TcpStream& m, Source src, std::string_view what) {
  In(v, src, what).need("bytes", m.bytes).need("seconds", m.seconds).opt("tcp_info", m.tcp_info);
}

json::object to_json(const TcpResult& m) {
  json::object o{{"bytes", m.bytes},
                 {"seconds", m.seconds},
                 {"sender", m.sender},
                 {"tcp_info", to_json(m.tcp_info)},
                 {"cpu", msg::to_json(m.cpu)}};
  // Written only for several streams: a one-stream answer stays as it was.
  if (!m.streams.empty()) o["streams"] = array_of(m.streams);
  return o;
}
void from_json(const json::value& v, TcpResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .opt("sender", m.sender)
      .need("tcp_info", m.tcp_info)
      .need("cpu", m.cpu)
      .opt("streams", m.streams);
}

json::object to_json(const TcpDetails& m) {
  json::object o{{"sender", m.sender},
                 {"sender_bytes", m.sender_bytes},
                 {"sender_seconds", m.sender_seconds},
                 {"tcp_info", to_json(m.tcp_info)},
                 {"receiver_tcp_info", to_json(m.receiver_tcp_info)}};
  if (!m.streams.empty()) o["streams"] = array_of(m.streams);
  return o;
}
void from_json(const json::value& v, TcpDetails& m, Source src, std::string_view what) {
  In(v, src, what)
      .opt("sender", m.sender)
      .opt("sender_bytes", m.sender_bytes)
      .opt("sender_seconds", m.sender_seconds)
      .opt("tcp_info", m.tcp_info)
      .opt("receiver_tcp_info", m.receiver_tcp_info)
      .opt("streams", m.streams);
}

}  // namespace cp::msg
