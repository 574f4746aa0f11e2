// Prints, one JSON object a line, every request the orchestrator builds
// through core/messages_json.h (as the frame it sends: v, type, id and the
// fields) and every result the agent builds through it ({"result": type,
// "data": ...}), so that agent_messages_test.py holds the codecs' output to
// schemas/agent-messages.schema.json as well as a live agent's frames.
#include <boost/json.hpp>

#include <iostream>
#include <string>

#include "core/messages_json.h"

namespace {

namespace json = boost::json;
using namespace cp::msg;

int next_id = 1;

void request(const std::string& type, json::object fields) {
  fields["v"] = 1;
  fields["type"] = type;
  fields["id"] = next_id++;
  std::cout << json::serialize(fields) << "\n";
}

void result(const std::string& type, json::object data) {
  std::cout << json::serialize(json::object{{"result", type}, {"data", std::move(data)}}) << "\n";
}

CpuSummary cpu() {
  CpuSummary c;
  c.seconds = 1;
  c.core_busy_pct = {50, 10};
  c.core_busy_max_pct = {90, 20};
  ProcLoad p;
  p.pid = 10;
  p.comm = "smbd";
  p.role = "server";
  p.cpu_pct = 40;
  p.top_thread_pct = 35;
  p.threads = 2;
  c.top.push_back(p);
  return c;
}

TcpInfo tcp_info() {
  TcpInfo t;
  t.available = true;
  t.retransmits = 3;
  t.rtt_us = 120;
  t.rttvar_us = 20;
  t.snd_cwnd = 10;
  t.snd_mss = 1448;
  t.pmtu = 1500;
  t.busy_s = 1;
  t.delivery_rate = 1000000;
  t.rtt_idle_us = 60;
  return t;
}

}  // namespace

int main() {
  const ShareRef share{"s", "smb://h/s", "smb", "u", "pw", {{"connections", "2"}}};
  request("facts", to_json(FactsRequest{"/ram", "/disk", "198.18.0.1", "/etc/samba/smb.conf"}));
  request("disk", to_json(DiskRequest{"/disk", "write", "d.dat", 1u << 20, 1u << 20, false}));
  request("disk", to_json(DiskRequest{"/disk", "read", "d.dat", 0, 65536, true}));
  result("disk", to_json(DiskResult{1u << 20, 0.5, true, false, "O_DIRECT", false, cpu()}));
  request("tcp_listen", to_json(TcpListenRequest{"0.0.0.0"}));
  result("tcp_listen", to_json(TcpListenResult{40000}));
  request("tcp_run", to_json(TcpRunRequest{"198.18.0.1", 40000, "up-1-1", "send", 2, 131072}));
  request("tcp_result", to_json(TcpResultRequest{"up-1-1", 62}));
  result("tcp_run", to_json(TcpResult{1000, 2, true, tcp_info(), cpu()}));
  result("tcp_result", to_json(TcpResult{1000, 2, false, TcpInfo{}, cpu()}));
  request("make_file", to_json(FileRequest{"/srv", "f.dat", 1u << 20, 1u << 20, true, true}));
  request("file_info", to_json(FileRequest{"/srv", "f.dat"}));
  request("remove_file", to_json(FileRequest{"/srv", "f.dat"}));
  result("make_file", to_json(FileResult{1u << 20, 0.1, "0123456789abcdef"}));
  result("file_info", to_json(FileResult{1u << 20, 0.1, "0123456789abcdef"}));
  request("transfer", to_json(TransferRequest{share, "read", "run/f.dat", "/ram", "f.dat", 1u << 20,
                                              1u << 20, true}));
  result("transfer",
         to_json(TransferResult{1u << 20, 0.2, "0123456789abcdef", {{"dialect", "3.1.1"}}, cpu()}));
  request("sweep", to_json(SweepRequest{share, "run/s.dat", "randread", 4096, 1u << 20, 4u << 20}));
  result("sweep", to_json(SweepResult{1u << 20, 0.3, "", cpu()}));
  return 0;
}
