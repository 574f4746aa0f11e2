#include "agent_server/tcp_ops.h"

#include <algorithm>

#include "core/error.h"
#include "probe/cpu.h"

namespace cp::agent {
namespace {

msg::TcpInfo info_message(const probe::TcpResult& r) {
  const auto& i = r.info;
  return {i.available,      i.retransmits,      i.rtt_us,        i.rttvar_us,
          i.snd_cwnd,       i.snd_mss,          i.pmtu,          i.busy_s,
          i.rwnd_limited_s, i.sndbuf_limited_s, i.delivery_rate, r.rtt_idle_us};
}

msg::TcpResult one_stream(const probe::TcpResult& r, msg::CpuSummary cpu) {
  return {r.bytes, r.seconds, r.sender, info_message(r), std::move(cpu), {}};
}

}  // namespace

msg::TcpResult combine_streams(const std::vector<probe::TcpResult>& streams, msg::CpuSummary cpu) {
  msg::TcpResult out;
  out.cpu = std::move(cpu);
  for (size_t i = 0; i < streams.size(); ++i) {
    const probe::TcpResult& r = streams[i];
    const msg::TcpInfo t = info_message(r);
    out.streams.push_back({r.bytes, r.seconds, t});
    out.bytes += r.bytes;
    out.seconds = std::max(out.seconds, r.seconds);
    out.sender = r.sender;
    if (i == 0) {
      out.tcp_info = t;
      continue;
    }
    // Times limited and busy summed too, so their fractions stay fractions.
    msg::TcpInfo& s = out.tcp_info;
    s.available = s.available && t.available;
    s.retransmits += t.retransmits;
    s.busy_s += t.busy_s;
    s.rwnd_limited_s += t.rwnd_limited_s;
    s.sndbuf_limited_s += t.sndbuf_limited_s;
    s.delivery_rate += t.delivery_rate;
  }
  return out;
}

msg::TcpResult tcp_run_op(const msg::TcpRunRequest& q, const CancelToken& cancel,
                          const ProgressFn& progress) {
  if (q.mode != "send" && q.mode != "recv") {
    throw Error(ErrorKind::kPeer, "message 'tcp_run': field 'mode' must be send or recv");
  }
  if (q.port == 0 || q.port > 65535) throw Error(ErrorKind::kPeer, "message 'tcp_run': bad 'port'");
  const auto mode = q.mode == "send" ? probe::TcpMode::kSend : probe::TcpMode::kRecv;
  const auto port = static_cast<uint16_t>(q.port);
  const auto buffer = static_cast<uint32_t>(q.buffer);
  probe::CpuSampler cpu;
  cpu.start();
  if (!q.tokens.empty()) {
    const auto all =
        probe::tcp_run_streams(q.host, port, q.tokens, mode, q.seconds, buffer, cancel, progress);
    return combine_streams(all, cpu.stop());
  }
  const probe::TcpResult t =
      probe::tcp_run(q.host, port, q.token, mode, q.seconds, buffer, cancel, progress);
  return one_stream(t, cpu.stop());
}

msg::TcpResult tcp_result_op(probe::TcpServer& server, const msg::TcpResultRequest& q,
                             const CancelToken& cancel) {
  probe::CpuSampler cpu;
  cpu.start();
  if (!q.tokens.empty()) {
    // The streams run at once on the listener's threads: waiting for each in
    // turn ends when the last does.
    std::vector<probe::TcpResult> all;
    for (const std::string& token : q.tokens) {
      all.push_back(server.wait_result(token, q.timeout, cancel));
    }
    return combine_streams(all, cpu.stop());
  }
  // Two statements: as arguments of one call, cpu.stop() may run first (the
  // order is unspecified, GCC goes right to left) and close the window before
  // the transfer.
  const probe::TcpResult t = server.wait_result(q.token, q.timeout, cancel);
  return one_stream(t, cpu.stop());
}

}  // namespace cp::agent
