// A diagnosis whose server host has nothing but BusyBox in the root its SSH
// sessions see (`lab up --server-profile nas`): no shared library, no bash,
// no Debian tools. The deployment probe and upload run under BusyBox's sh,
// and the server end must be the static server agent, so a missing library
// or a bash-ism fails here.
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>

#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

class NasLab : public LabSuite<NasLab> {
 public:
  static std::vector<std::string> lab_up_options() { return {"--server-profile", "nas"}; }

 protected:
  static RunResult on_server(const std::string& command) {
    return on_lab_host(lab_names().server_netns, command);
  }
};

TEST_F(NasLab, ServerSessionsSeeOnlyBusyBox) {
  // sh is BusyBox; there is no C library to load and no real bash.
  RunResult sh = on_server("readlink /bin/sh");
  ASSERT_EQ(sh.exit_code, 0) << sh.err;
  EXPECT_EQ(sh.out, "/bin/busybox\n");
  EXPECT_NE(on_server("ls /lib/x86_64-linux-gnu/libc.so.6").exit_code, 0);
  EXPECT_NE(on_server("ls /usr/bin/python3").exit_code, 0);
  // A bash-ism fails (root's login shell there is BusyBox's sh).
  EXPECT_NE(on_server("a=(1 2); echo ${a[1]}").exit_code, 0);
}

TEST_F(NasLab, DiagnosesAServerWhoseRootHoldsOnlyBusyBox) {
  TempDir t;
  write_file(t.file("plan.ini"), kShortNasPlan);
  const std::string db = t.file("runs.db");
  // A fresh agent cache in the server's root, so the static agent is uploaded.
  std::filesystem::remove_all(lab_dir() + "/server/nasroot/root/.cache");
  RunResult r = chokepoint(
      {"diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"), "--label", "nas", "--json"});
  // Complete: smbstatus is not there, so what SMB negotiated goes unrecorded
  // (a note), and every stage still runs.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
  auto doc = json::parse(r.out).as_object();
  for (const auto& h : doc.at("hosts").as_array()) {
    if (h.at("role").as_string() != "server") continue;
    EXPECT_EQ(h.at("facts").at("agent").at("role").as_string(), "server");
    EXPECT_EQ(h.at("facts").at("disk_dir").at("fs_type").as_string(), "ext4");
  }
  // The server's disk and both TCP directions are measured with the static
  // agent, and so are the protocols it lays the files out for.
  EXPECT_EQ(complete_stages(db, "'disk', 'tcp'"), 4);
  EXPECT_EQ(complete_stages(db, "'ftp', 'smb'"), 4);
  // It was uploaded into the BusyBox root and nothing is left in the shares.
  int agents = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(lab_dir() + "/server/nasroot/root/.cache/chokepoint")) {
    agents += e.path().filename().string().rfind("chokepoint-agent-server-", 0) == 0;
  }
  EXPECT_EQ(agents, 1);
  RunResult ls = on_server("ls -d " + lab_dir() + "/server/*/chokepoint-run-* 2>/dev/null; true");
  EXPECT_EQ(ls.out, "");
}

}  // namespace
}  // namespace cp::itest
