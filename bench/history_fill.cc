// bench/history_fill DB N: adds N synthetic runs to DB through the store's own
// API, each like the default lab plan (330 samples: disk 80, TCP 10, four
// protocols 60 each, as diagnose stores them), with CPU records of 7
// processes per end and verdicts recorded as diagnose records them.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/verdict_summary.h"
#include "core/cpu_message.h"
#include "core/model.h"
#include "core/stored_run.h"
#include "store/store.h"

namespace {

std::vector<cp::stored::EndCpu> cpu_of(int run, int i, bool both) {
  cp::msg::CpuSummary s;
  s.seconds = 0.5 + (i % 17) / 31.0;
  s.core_busy_pct = {100, 50 + (i % 13) / 0.7};
  s.core_busy_max_pct = {100, 90 + (i % 7) / 0.9};
  s.total_busy_pct = 75 + (i % 11) / 1.3;
  s.sys_pct = 14.634146341463415;
  s.agent_pct = 19.51219512195122 + i % 5;
  s.server_pct = 12.07 + (i % 3) / 0.3;
  s.kernel_pct = 3.2862;
  s.other_pct = 190.7 + (i % 9);
  s.own_wait_pct = 57.27;
  for (int p = 0; p < 7; ++p) {
    cp::msg::ProcLoad l;
    l.pid = 3000 + run * 10 + p + (i / 40);  // competitors come and go
    l.comm = p == 0 ? "smbd" : p == 1 ? "chokepoint-agen" : "cc1plus";
    l.role = p == 0 ? "server" : p == 1 ? "agent" : "other";
    l.cpu_pct = 30.0 / (p + 1.3) + (i % 7) / 3.0;
    l.top_thread_pct = l.cpu_pct / 1.07;
    l.threads = p == 1 ? 2 : 1;
    l.wait_pct = 80 + (i % 19) / 0.7;
    s.top.push_back(l);
  }
  std::vector<cp::stored::EndCpu> ends;
  if (both) ends.push_back({"client", s});
  ends.push_back({"server", s});
  return ends;
}

cp::msg::TcpDetails tcp_details(int i) {
  cp::msg::TcpDetails d;
  d.sender = "server";
  d.tcp_info.available = true;
  d.tcp_info.retransmits = i % 5;
  d.tcp_info.rtt_us = 300 + i % 40;
  d.tcp_info.busy_s = 1.2;
  d.tcp_info.sndbuf_limited_s = 0.04;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: history_fill DB N\n");
    return 2;
  }
  cp::Store store(argv[1]);
  const int n = std::atoi(argv[2]);
  for (int r = 0; r < n; ++r) {
    cp::RunRecord run;
    run.server = "nas";
    run.client = "mac";
    run.label = r % 10 == 0 ? fmt::format("night-{}", r) : "";
    run.started_at = 1'790'000'000 + r * 86400.0;
    run.plan_json = R"({"disk":{"size":"10MB","count":20},"tcp":{"seconds":2,"count":5}})";
    run.version = "0.1.0";
    const int64_t id = store.begin_run(run);
    for (const char* role : {"server", "client"}) {
      cp::msg::Facts f;
      f.hostname = role == std::string("server") ? "nas" : "mac";
      f.kernel = "6.1.0-18-amd64";
      f.net.emplace();
      f.net->name = "eth0";
      f.net->mtu = 1500;
      store.add_host(id, {role, *f.hostname, f});
    }
    int i = 0;
    auto stage = [&](const std::string& layer, const std::string& where, const std::string& op,
                     int count, double mbps) {
      cp::StageRecord st;
      st.layer = layer;
      st.where = where;
      const int64_t sid = store.begin_stage(id, st);
      for (int k = 1; k <= count; ++k, ++i) {
        cp::stored::Sample s;
        s.seq = k;
        s.op = op;
        s.size = layer == "tcp" ? 0 : 10'000'000;
        const double rate = mbps * 1e6 * (0.95 + (i % 10) / 100.0);
        s.bytes = layer == "tcp" ? static_cast<uint64_t>(rate * 2) : s.size;
        s.seconds = double(s.bytes) / rate;
        s.started_at = run.started_at + i;
        if (layer == "disk") {
          s.details.kind = cp::msg::DiskDetails{
              fmt::format("{}-10000000-{}.dat", where, k), "O_DIRECT", true, false, 1048576, ""};
        } else if (layer == "tcp") {
          s.details.kind = tcp_details(i);
        } else {
          s.details.kind = cp::msg::TransferDetails{
              fmt::format("{}-{}-{}-10000000-{}.dat", layer, where, op, k),
              fmt::format("{}-{}", layer, where),
              fmt::format("{:016x}", static_cast<uint64_t>(i) * 2654435761u),
              {{"dialect", "SMB3_11"},
               {"io_size", "1048576"},
               {"max_read_size", "8388608"},
               {"path_rtt_ms", "0.032"},
               {"signing", "AES-128-GMAC"}},
              "ext4",
              "sda",
              ""};
        }
        s.cpu = cpu_of(r, i, layer != "disk");
        store.add_sample(sid, s);
      }
      store.end_stage(sid, cp::kComplete);
    };
    for (const char* w : {"server", "client"})
      for (const char* op : {"write", "read"}) stage("disk", w, op, 20, 200);
    stage("tcp", "server->client", "send", 5, 117);
    stage("tcp", "client->server", "send", 5, 116);
    for (const char* p : {"smb", "ftp", "afp", "nfs"})
      for (const char* w : {"ram", "disk"})
        for (const char* op : {"read", "write"}) stage(p, w, op, 15, 90);
    store.end_run(id, cp::kComplete);
    cp::app::record_verdicts(store, id);
  }
  return 0;
}
