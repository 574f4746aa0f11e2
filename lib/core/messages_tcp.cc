// The TCP stage's messages (messages.h), as messages.cc codes the rest.
#include <boost/json.hpp>

#include "core/messages_in.h"
#include "core/messages_json.h"

namespace cp::msg {

// ---- TCP -------------------------------------------------------------------

CP_MESSAGE_FIELDS(TcpListenRequest) { v.need("bind", m.bind).omit_empty("tokens", m.tokens); }

CP_MESSAGE_FIELDS(TcpListenResult) { v.need("port", m.port).omit_empty("address", m.address); }

CP_MESSAGE_FIELDS(TcpRunRequest) {
  v.need("host", m.host)
      .need("port", m.port)
      .need("token", m.token)
      .need("mode", m.mode)
      .need("seconds", m.seconds)
      .opt("buffer", m.buffer)
      .omit_empty("tokens", m.tokens);
}

CP_MESSAGE_FIELDS(TcpResultRequest) {
  v.need("token", m.token).opt("timeout", m.timeout).omit_empty("tokens", m.tokens);
}

CP_MESSAGE_FIELDS(TcpInfo) {
  v.need("available", m.available)
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

CP_MESSAGE_FIELDS(TcpStream) {
  v.need("bytes", m.bytes).need("seconds", m.seconds).opt("tcp_info", m.tcp_info);
}

CP_MESSAGE_FIELDS(TcpResult) {
  v.need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .opt("sender", m.sender)
      .need("tcp_info", m.tcp_info)
      .need("cpu", m.cpu)
      .omit_empty("streams", m.streams);  // several streams only: one stays as it was
}

CP_MESSAGE_FIELDS(TcpDetails) {
  v.opt("sender", m.sender)
      .opt("sender_bytes", m.sender_bytes)
      .opt("sender_seconds", m.sender_seconds)
      .opt("tcp_info", m.tcp_info)
      .opt("receiver_tcp_info", m.receiver_tcp_info)
      .omit_empty("streams", m.streams);
}

}  // namespace cp::msg
