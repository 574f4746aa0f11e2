// Prints, one JSON object a line, every request the orchestrator builds
// through core/messages_json.h (as the frame it sends: v, type, id and the
// fields) and every result the agent builds through it ({"result": type,
// "data": ...}), so that agent_messages_test.py holds the codecs' output to
// schemas/agent-messages.schema.json as well as a live agent's frames.
#include <boost/json.hpp>

#include <iostream>
#include <string>

#include "core/facts_message_json.h"
#include "core/messages_json.h"
#include "core/testing/sample_messages.h"

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

using testing::sample_cpu;
using testing::sample_tcp_info;

using testing::sample_facts;

// A host that could tell little.
Facts sparse_facts() {
  Facts f;
  f.net = NetFacts{"10.9.9.9", {}, {}, {}, {}, {}, "no route to '10.9.9.9': unreachable"};
  f.disk_dir = DirFacts{"/srv", {}, {}, {}, true, {}, {}, {}};
  f.samba = SambaFacts{0, "/etc/x.conf", "cannot read /etc/x.conf: denied", "", "", "", {}};
  f.euid = 0;
  return f;
}

}  // namespace

int main() {
  const ShareRef share{"s", "smb://h/s", "smb", "u", "pw", {{"connections", "2"}}};
  request("facts", to_json(FactsRequest{"/ram", "/disk", "198.18.0.1", "/etc/samba/smb.conf"}));
  request("facts", to_json(FactsRequest{"/ram", "/disk", "198.18.0.2", "", false}));
  result("facts", to_json(sample_facts()));
  result("facts", to_json(sparse_facts()));
  request("disk", to_json(DiskRequest{"/disk", "write", "d.dat", 1u << 20, 1u << 20, false}));
  request("disk", to_json(DiskRequest{"/disk", "read", "d.dat", 0, 65536, true}));
  result("disk", to_json(DiskResult{1u << 20, 0.5, true, false, "O_DIRECT", false, sample_cpu()}));
  request("files", to_json(FilesRequest{"/disk", "files-1", 1000, 4096, 10, "random", 7, 30}));
  cp::files::PhaseStats create{cp::files::Phase::create, 1000, 4096000, 0.5, {40, 90, 400}};
  result("files", to_json(FilesResult{{{create, sample_cpu()}}, "ext4", false, ""}));
  request("tcp_listen",
          to_json(TcpListenRequest{"198.18.0.1", {"0123456789abcdef0123456789abcdef"}}));
  result("tcp_listen", to_json(TcpListenResult{40000, "198.18.0.1"}));
  request("tcp_run", to_json(TcpRunRequest{"198.18.0.1", 40000, "0123456789abcdef0123456789abcdef",
                                           "send", 2, 131072}));
  request("tcp_result", to_json(TcpResultRequest{"0123456789abcdef0123456789abcdef", 62}));
  result("tcp_run", to_json(TcpResult{1000, 2, true, sample_tcp_info(), sample_cpu()}));
  result("tcp_result", to_json(TcpResult{1000, 2, false, TcpInfo{}, sample_cpu()}));
  request("make_file", to_json(FileRequest{"/srv", "f.dat", 1u << 20, 1u << 20, true, true}));
  request("file_info", to_json(FileRequest{"/srv", "f.dat"}));
  request("remove_file", to_json(FileRequest{"/srv", "f.dat"}));
  result("make_file", to_json(FileResult{1u << 20, 0.1, "0123456789abcdef"}));
  result("file_info", to_json(FileResult{1u << 20, 0.1, "0123456789abcdef"}));
  request("transfer", to_json(TransferRequest{share, "read", "run/f.dat", "/ram", "f.dat", 1u << 20,
                                              1u << 20, true}));
  result("transfer", to_json(TransferResult{
                         1u << 20, 0.2, "0123456789abcdef", {{"dialect", "3.1.1"}}, sample_cpu()}));
  request("sweep",
          to_json(SizeScanRequest{share, "run/s.dat", "randread", 4096, 1u << 20, 4u << 20}));
  result("sweep", to_json(SizeScanResult{1u << 20, 0.3, "", sample_cpu()}));
  // Small files over a share.
  FilesShareRequest fs;
  fs.share = share;
  fs.root = "chokepoint-run-a/files-smb";
  fs.order = "random";
  fs.seed = 7;
  fs.in_flight = 4;
  request("files_share", to_json(fs));
  FilesShareResult fr;
  for (cp::files::Phase phase : cp::files::kPhases) {
    FilesPhase p{{phase, 1000, 4096000, 0.5, {120, 900, 2000}, 3.9, 4}, sample_cpu()};
    if (phase == cp::files::Phase::stat) p.stats.skipped = "the FTP server does not answer SIZE";
    fr.phases.push_back(p);
  }
  fr.in_flight = 4;
  fr.in_flight_note = "4 sessions, one thread each";
  fr.created = 1000;
  fr.properties = {{"dialect", "3.1.1"}};
  result("files_share", to_json(fr));
  request("files_tree", to_json(FilesTreeRequest{"/srv", "files-smb", "layout", 1000, 4096, 10}));
  result("files_tree", to_json(FilesTreeResult{1000, 4096000, 0.8, true, "ZFS's ARC"}));
  result("remove_file", to_json(RemoveFileResult{true}));
  // Run directories.
  request("prepare", to_json(PrepareRequest{{"/ram", "/disk"}, true, 7}));
  result("prepare", to_json(PrepareResult{{{"/ram", "/ram/chokepoint-run-a"}},
                                          {{"/ram/chokepoint-run-b", "its agent is gone", ""}},
                                          {{"/ram/chokepoint-run-e", "", "", "foreign_owner"}}}));
  request("sweep_orphans", to_json(CleanOrphansRequest{{"/ram"}}));
  result("sweep_orphans", to_json(CleanOrphansResult{
                              {{"/ram/chokepoint-run-b", "its agent is gone", ""}},
                              {{"/ram/chokepoint-run-c", "", ""},
                               {"/ram/chokepoint-run-d", "", "Permission denied"},
                               {"/ram/chokepoint-run-f", "", "", "owner_record_not_regular"}}}));
  request("check_space", to_json(CheckSpaceRequest{"/srv", 1u << 30, "free some space"}));
  result("check_space", to_json(CheckSpaceResult{1u << 40, 1u << 39, "ext4", "sda"}));
  result("check_space", to_json(CheckSpaceResult{1u << 30, 1u << 29, "tmpfs", ""}));
  // The agent itself.
  request("hello", {});
  result("hello", to_json(Hello{"1.0", "abc", 1, 42, "h", "Linux", "x86_64", "full", {"null"}}));
  request("smb_status", to_json(SmbStatusRequest{"/etc/samba/smb.conf"}));
  result("smb_status",
         to_json(SmbStatusResult{{{"ipv4:198.18.0.2:1", "SMB3_11", "-", "none", "-", "none"}}}));
  for (const char* type : {"stats", "cleanup", "bye"}) {
    request(type, {});
    result(type, to_json(AgentStats{4096}));
  }
  // The frames around answers.
  request("progress", to_json(Progress{1u << 20, 0.5}));
  request("error", {{"error", to_json(ErrorInfo{"config", "no such directory", "create it"})}});
  // Tuning.
  TuneRequest tune;
  tune.knob = "server.mtu";
  tune.value = "9000";
  tune.console = true;
  tune.confirm_s = 20;
  request("tune_plan", to_json(tune));
  request("tune_apply", to_json(tune));
  const TunePlanResult planned{
      "eth0", "1500", {"ip link set eth0 mtu 9000"}, {"ip link set eth0 mtu 1500"}, "/j", true, 0};
  result("tune_plan", to_json(planned));
  TunePlanResult applied = planned;
  applied.watchdog_s = 20;
  result("tune_apply", to_json(applied));
  request("tune_confirm", {});
  result("tune_confirm", to_json(TuneConfirmResult{true}));
  request("tune_revert", {});
  result("tune_revert",
         to_json(TuneRevertResult{{{"server.mtu", "eth0", "1500", ""}}, {}, "", "/j"}));
  return 0;
}
