// A diagnosis whose server logs in without root (`lab up --server-profile nas
// --server-login user`): the SSH user is the lab's share user, who owns the
// shares and nothing else, in the BusyBox-only root of a NAS. Every stage
// that can run does (disk in the user's shares, TCP, the protocols), and
// what needs privilege degrades to the next best method and is named in the
// server's facts with the privilege that would restore it.
#include <pwd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <map>

#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

class NasLabWithoutRoot : public LabSuite<NasLabWithoutRoot> {
 public:
  static std::vector<std::string> lab_up_options() {
    return {"--server-profile", "nas", "--server-login", "user"};
  }

 protected:
  static RunResult on_server(const std::string& command) {
    return on_lab_host(lab_names().server_netns, command);
  }
  static uid_t share_uid() {
    const passwd* pw = getpwnam(lab_names().share_user.c_str());
    return pw ? pw->pw_uid : 0;
  }
};

TEST_F(NasLabWithoutRoot, ServerSessionsAreTheShareUserWhoCannotWriteTheDiskRoot) {
  ASSERT_NE(share_uid(), 0u);
  RunResult id = on_server("id -u");
  ASSERT_EQ(id.exit_code, 0) << id.err;
  EXPECT_EQ(id.out, std::to_string(share_uid()) + "\n");
  // The disk's root is root's; the share on it is the user's.
  EXPECT_NE(on_server("touch " + lab_dir() + "/server/disk/cp-nonroot-probe").exit_code, 0);
  EXPECT_EQ(on_server("touch " + lab_dir() + "/server/disk/share/cp-nonroot-probe && rm " +
                      lab_dir() + "/server/disk/share/cp-nonroot-probe")
                .exit_code,
            0);
  EXPECT_EQ(on_server("readlink /bin/sh").out, "/bin/busybox\n");
}

TEST_F(NasLabWithoutRoot, EveryStageRunsAndTheFactsNameWhatLackOfRootDegraded) {
  TempDir t;
  write_file(t.file("plan.ini"), kShortNasPlan);
  const std::string db = t.file("runs.db");
  std::filesystem::remove_all(lab_dir() + "/server/home/.cache");
  RunResult r = chokepoint({"diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"),
                            "--label", "nonroot", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
  // No stage failed, none was left out: disk on both hosts, TCP both ways,
  // FTP and SMB from RAM and disk.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE status != 'complete'"), 0);
  EXPECT_EQ(complete_stages(db, "'disk', 'tcp'"), 4);
  EXPECT_EQ(complete_stages(db, "'ftp', 'smb'"), 4);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples WHERE error != ''"), 0);
  auto doc = json::parse(r.out).as_object();
  std::map<std::string, json::object> facts;
  for (const auto& h : doc.at("hosts").as_array()) {
    facts[std::string(h.at("role").as_string())] = h.at("facts").as_object();
  }
  const json::object& server = facts.at("server");
  // The server agent ran as the share user, measuring the disk in its share.
  EXPECT_EQ(server.at("euid").to_number<int64_t>(), static_cast<int64_t>(share_uid()));
  EXPECT_EQ(server.at("disk_dir").at("path").as_string(), lab_dir() + "/server/disk/share");
  EXPECT_EQ(server.at("disk_dir").at("fs_type").as_string(), "ext4");
  // Degraded for want of root: other users' process namespaces (CPU roles) and
  // what SMB negotiated (no smbstatus in the NAS root), each with its restorer.
  std::map<std::string, json::object> degraded;
  for (const auto& d : server.at("degraded").as_array()) {
    degraded[std::string(d.at("fact").as_string())] = d.as_object();
  }
  ASSERT_EQ(degraded.count("process_netns"), 1u) << json::serialize(server.at("degraded"));
  ASSERT_EQ(degraded.count("smb_negotiated"), 1u) << json::serialize(server.at("degraded"));
  for (const auto& [fact, d] : degraded) {
    EXPECT_FALSE(d.at("method").as_string().empty()) << fact;
    EXPECT_FALSE(d.at("privilege").as_string().empty()) << fact;
  }
  // The client logs in as root: nothing of it is degraded.
  EXPECT_EQ(facts.at("client").at("euid").to_number<int64_t>(), 0);
  EXPECT_TRUE(facts.at("client").at("degraded").as_array().empty());
  // The report's list carries the same entries with their host.
  int listed = 0;
  for (const auto& d : doc.at("degraded").as_array()) {
    listed += d.at("role").as_string() == "server";
  }
  EXPECT_EQ(listed, static_cast<int>(degraded.size()));
  // So does the export.
  RunResult x = chokepoint({"export", "1", "--db", db, "--format", "json"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  EXPECT_EQ(json::parse(x.out).at("run").at("degraded").as_array().size(), degraded.size());
  // The agent went into the user's own home, and nothing is left in the shares.
  int agents = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(lab_dir() + "/server/home/.cache/chokepoint")) {
    agents += e.path().filename().string().rfind("chokepoint-agent-server-", 0) == 0;
    EXPECT_EQ(std::filesystem::status(e.path()).permissions() & std::filesystem::perms::others_all,
              std::filesystem::perms::none);
  }
  EXPECT_EQ(agents, 1);
  RunResult ls = on_server("ls -d " + lab_dir() + "/server/*/share/chokepoint-run-* " + lab_dir() +
                           "/server/*/chokepoint-run-* 2>/dev/null; true");
  EXPECT_EQ(ls.out, "");
}

}  // namespace
}  // namespace cp::itest
