// Messages with every common field told, for the codec tests (not part of the
// library): core's round trips and the schema check of tests/schema.
#pragma once

#include "core/messages.h"

namespace cp::msg::testing {

// Two cores, smbd busiest on the server.
inline CpuSummary sample_cpu() {
  CpuSummary c;
  c.seconds = 2.5;
  c.core_busy_pct = {80, 5};
  c.core_busy_max_pct = {90, 20};
  ProcLoad p;
  p.pid = 7;
  p.comm = "smbd";
  p.role = "server";
  p.cpu_pct = 99;
  p.top_thread_pct = 35;
  p.threads = 2;
  c.top.push_back(p);
  return c;
}

// A sender's tcp_info with each figure set.
inline TcpInfo sample_tcp_info() {
  TcpInfo t;
  t.available = true;
  t.retransmits = 12;
  t.rtt_us = 250;
  t.rttvar_us = 30;
  t.snd_cwnd = 40;
  t.snd_mss = 1448;
  t.pmtu = 1500;
  t.busy_s = 1.25;
  t.rwnd_limited_s = 0.5;
  t.sndbuf_limited_s = 0.25;
  t.delivery_rate = 117000000;
  t.rtt_idle_us = 90;
  return t;
}

}  // namespace cp::msg::testing
