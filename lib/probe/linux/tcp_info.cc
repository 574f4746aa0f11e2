// Linux: struct tcp_info from getsockopt(TCP_INFO) (platform.h).
#include "probe/tcp_info.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "probe/platform.h"

namespace cp::probe {

TcpInfoSummary summarize_tcp_info(const void* data, size_t len) {
  struct tcp_info ti;
  std::memset(&ti, 0, sizeof ti);
  std::memcpy(&ti, data, len < sizeof ti ? len : sizeof ti);
  TcpInfoSummary s;
  // A field is valid only when the kernel filled all of it.
#define CP_HAS(field) (len >= offsetof(struct tcp_info, field) + sizeof(ti.field))
  // Every kernel since 2.6 fills the RTT; a shorter reply is no tcp_info (qemu-user
  // answers TCP_INFO like an int option: 4 bytes, the state bytes only).
  if (!CP_HAS(tcpi_rtt)) return s;
  s.available = true;
  if (CP_HAS(tcpi_snd_mss)) s.snd_mss = ti.tcpi_snd_mss;
  if (CP_HAS(tcpi_pmtu)) s.pmtu = ti.tcpi_pmtu;
  if (CP_HAS(tcpi_rtt)) s.rtt_us = ti.tcpi_rtt;
  if (CP_HAS(tcpi_rttvar)) s.rttvar_us = ti.tcpi_rttvar;
  if (CP_HAS(tcpi_snd_cwnd)) s.snd_cwnd = ti.tcpi_snd_cwnd;
  if (CP_HAS(tcpi_total_retrans)) s.retransmits = ti.tcpi_total_retrans;
  if (CP_HAS(tcpi_delivery_rate)) s.delivery_rate = ti.tcpi_delivery_rate;
  // Kernel times in microseconds.
  if (CP_HAS(tcpi_busy_time)) s.busy_s = static_cast<double>(ti.tcpi_busy_time) / 1e6;
  if (CP_HAS(tcpi_rwnd_limited)) s.rwnd_limited_s = static_cast<double>(ti.tcpi_rwnd_limited) / 1e6;
  if (CP_HAS(tcpi_sndbuf_limited)) {
    s.sndbuf_limited_s = static_cast<double>(ti.tcpi_sndbuf_limited) / 1e6;
  }
#undef CP_HAS
  return s;
}

TcpInfoSummary os::read_tcp_info(int fd) {
  struct tcp_info ti;
  std::memset(&ti, 0, sizeof ti);
  socklen_t len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return {};
  return summarize_tcp_info(&ti, len);
}

size_t tcp_info_struct_size() { return sizeof(struct tcp_info); }
size_t tcp_info_busy_time_offset() { return offsetof(struct tcp_info, tcpi_busy_time); }

}  // namespace cp::probe
