// Issue 3's quality bar on the built-in lab: the verdict names the layer a
// throttle starves (smbd under a cgroup CPU quota, the server disk under a
// blkio limit), and a broken share fails its own stage with a clear reason in
// the database while TCP and a good share in the same run complete.
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <optional>

#include "lab/lab.h"
#include "lab/layout.h"
#include "lab/throttle.h"
#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

// What the tests need of `lab status --json`.
struct LabInfo {
  std::string server_ram_share, server_disk_share;  // server_dir of the ram and disk shares
  std::string ro_share;                             // server_dir of the read-only share
  std::string user, password_file;
  int server_sshd_pid = 0;
  int smbd_pid = 0;
};

class Protocols : public LabSuite<Protocols> {
 protected:
  void SetUpLab() override { ASSERT_NO_FATAL_FAILURE(info_ = read_info()); }
  // Always, so no throttle outlives its test, even a failed one.
  void TearDown() override {
    if (geteuid() == 0 && lab_is_up()) {
      RunResult r = chokepoint({"lab", "throttle", "--clear"}, 120);
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    LabSuite::TearDown();
  }

  static LabInfo read_info() {
    LabInfo info;
    LabStatus lab;
    EXPECT_NO_THROW(lab = lab_status());
    for (const LabShare& s : lab.shares)
      (s.medium == "ram" ? info.server_ram_share : info.server_disk_share) = s.server_dir;
    info.user = lab.share_user;
    info.password_file = lab.share_password_file;
    info.server_sshd_pid = lab.server.sshd_pid;
    info.smbd_pid = lab.smbd_pid;
    std::optional<lab::LabState> state = lab::load(lab_dir());
    EXPECT_TRUE(state.has_value());
    if (state) info.ro_share = lab::server_files(*state).ro_share;
    EXPECT_FALSE(info.server_ram_share.empty());
    EXPECT_FALSE(info.server_disk_share.empty());
    EXPECT_GT(info.server_sshd_pid, 0);
    return info;
  }

  // A [share] section for the lab's server; `password` is the key=value line
  // naming the password source (the lab's 0600 file unless told otherwise).
  std::string share(const std::string& name, const std::string& url, const std::string& server_dir,
                    const std::string& medium, const std::string& password = "") const {
    return "[share " + name + "]\nurl = " + url + "\nserver_dir = " + server_dir +
           "\nmedium = " + medium + "\nuser = " + info_.user + "\n" +
           (password.empty() ? "password_file = " + info_.password_file : password) + "\n";
  }

  static RunResult on_host(const std::string& host, const std::string& command) {
    return on_lab_host(host, command);
  }

  // Runs diagnose on the lab with `plan`; its JSON report. `expect_exit`:
  // 0 complete, 3 partial (some stage failed, a verdict stands).
  static json::object diagnose(const TempDir& t, const std::string& plan, const std::string& db,
                               int expect_exit = 0) {
    write_file(t.file("plan.ini"), share_files_off(plan));
    RunResult r = chokepoint(
        {"diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"), "--json", "-q"}, 900);
    EXPECT_EQ(r.exit_code, expect_exit) << r.err;
    if (r.exit_code != expect_exit || r.out.empty()) return {};
    return json::parse(r.out).as_object();
  }

  LabInfo info_;
};

const json::object* row(const json::object& doc, const std::string& key) {
  return ladder_row(doc, key);
}

double median_mbps(const json::object& doc, const std::string& key) {
  const json::object* r = row(doc, key);
  EXPECT_NE(r, nullptr) << "no ladder row " << key;
  return r ? r->at("median_bytes_per_s").to_number<double>() / 1e6 : 0;
}

const json::object* finding(const json::object& doc, const std::string& path) {
  return verdict_finding(doc, path);
}

std::string str(const json::object& o, const char* key) {
  return std::string(o.at(key).as_string());
}

// `lab throttle --smbd-cpu 20%`: smbd runs at a fifth of a core, never filling
// one; its quota, read inside the server host, is the evidence.
TEST_F(Protocols, StarvedSmbd) {
  RunResult th = chokepoint({"lab", "throttle", "--smbd-cpu", "20%"}, 120);
  ASSERT_EQ(th.exit_code, 0) << th.err;
  // The server host sees smbd's cgroup and its quota, at the root namespace's
  // paths (read-only mounts of the same hierarchies).
  std::optional<lab::LabState> state = lab::load(lab_dir());
  ASSERT_TRUE(state && !state->throttle.cgroups.empty());
  const std::string dir = state->throttle.cgroups.front();
  RunResult cg = on_host(lab_names().server_netns,
                         "cat /proc/" + std::to_string(info_.smbd_pid) + "/cgroup; cat " + dir +
                             "/cpu.cfs_quota_us " + dir + "/cpu.max 2>/dev/null; true");
  EXPECT_NE(cg.out.find(dir.substr(lab::cgroup_root_of(dir).size())), std::string::npos)
      << cg.out << cg.err;
  EXPECT_NE(cg.out.find("20000"), std::string::npos) << cg.out << cg.err;

  TempDir t;
  // 400 MB files: at a 20 % quota smbd moves ~350 MB/s here, so each transfer
  // lasts over a second; 50 MB ones end within one or two 100 ms CFS periods
  // (smbd bursts through its quota) and under the verdict's 0.5 s minimum CPU
  // window, so no CPU evidence would count.
  const std::string plan =
      "[disk]\nenabled = no\n[tcp]\ncount = 2\n[protocol]\nsizes = 400MB\ncount = 3\n" +
      share("smb-ram", "smb://" + lab_names().server_data_address + "/ram", info_.server_ram_share,
            "ram") +
      share("ftp-ram", "ftp://" + lab_names().server_data_address + "/ram", info_.server_ram_share,
            "ram");
  const json::object doc = diagnose(t, plan, t.file("runs.db"));
  ASSERT_FALSE(doc.empty());

  const double tcp = median_mbps(doc, "tcp:server->client:send");
  const double smb = median_mbps(doc, "smb:ram:read:400000000");
  const double ftp = median_mbps(doc, "ftp:ram:read:400000000");
  // The quota holds SMB below TCP (how far depends on the machine's load: 3.5x
  // was seen with other builds beside it); the finding below is the test.
  EXPECT_GT(tcp, smb) << "TCP " << tcp << " MB/s, SMB read " << smb << " MB/s";

  const json::object* f = finding(doc, "smb ram read");
  ASSERT_NE(f, nullptr);
  // The layer is the server's CPU quota, not the SMB layer, and no SMB setting is guessed.
  EXPECT_EQ(str(*f, "layer"), "cpu") << str(*f, "text");
  ASSERT_TRUE(f->contains("cpu")) << str(*f, "text");
  const json::object& cpu = f->at("cpu").as_object();
  EXPECT_EQ(str(cpu, "kind"), "quota") << str(*f, "text");
  EXPECT_EQ(str(cpu, "host"), "server");
  EXPECT_EQ(str(cpu, "process"), "smbd");
  EXPECT_NEAR(cpu.at("limit_pct").to_number<double>(), 20, 0.5);
  EXPECT_TRUE(f->at("hints").as_array().empty()) << str(*f, "text");

  // FTP over RAM is not held back by smbd's quota.
  const json::object* ff = finding(doc, "ftp ram read");
  ASSERT_NE(ff, nullptr);
  if (ff->contains("cpu")) {
    EXPECT_NE(str(ff->at("cpu").as_object(), "kind"), "quota") << str(*ff, "text");
  }
  EXPECT_GT(ftp, 1.5 * smb) << "FTP read " << ftp << " MB/s, SMB read " << smb << " MB/s";
}

// `lab throttle --server-disk-read 50MB/s`: the disk share is held to the
// server disk, the RAM share is not.
TEST_F(Protocols, SlowServerDisk) {
  RunResult th = chokepoint({"lab", "throttle", "--server-disk-read", "50MB/s"}, 120);
  ASSERT_EQ(th.exit_code, 0) << th.err;
  TempDir t;
  const std::string plan =
      "[disk]\nsizes = 50MB\ncount = 2\nsettle = 500ms\n[tcp]\ncount = 2\n"
      "[protocol]\nsizes = 50MB\ncount = 3\n" +
      share("ftp-ram", "ftp://" + lab_names().server_data_address + "/ram", info_.server_ram_share,
            "ram") +
      share("ftp-disk", "ftp://" + lab_names().server_data_address + "/disk",
            info_.server_disk_share, "disk") +
      share("smb-disk", "smb://" + lab_names().server_data_address + "/disk",
            info_.server_disk_share, "disk");
  const std::string db = t.file("runs.db");
  const json::object doc = diagnose(t, plan, db);
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE status != 'complete'"), 0)
      << query_text(db, "SELECT error FROM stages WHERE status != 'complete'");

  const json::object* f = finding(doc, "ftp disk read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(str(*f, "layer"), "server disk") << str(*f, "text");
  const double disk_share = median_mbps(doc, "ftp:disk:read:50000000");
  EXPECT_GT(disk_share, 40);
  EXPECT_LT(disk_share, 60);
  EXPECT_NEAR(median_mbps(doc, "disk:server:read:50000000"), 50, 10);
  const double ram_share = median_mbps(doc, "ftp:ram:read:50000000");
  EXPECT_GT(ram_share, 3 * disk_share) << "FTP from RAM " << ram_share << " MB/s";
  // The server agent found each share's directory where the plan said it is.
  ASSERT_NE(row(doc, "ftp:ram:read:50000000"), nullptr);
  EXPECT_EQ(str(*row(doc, "ftp:ram:read:50000000"), "server_fs"), "tmpfs");
  ASSERT_NE(row(doc, "ftp:disk:read:50000000"), nullptr);
  EXPECT_EQ(str(*row(doc, "ftp:disk:read:50000000"), "server_fs"), "ext4");
  // ... on the disk the disk stage measured, so the disk verdict above stands.
  std::string measured;
  for (const auto& h : doc.at("hosts").as_array()) {
    if (h.at("role").as_string() == "server") {
      measured = str(h.at("facts").at("disk_dir").at("device").as_object(), "disk");
    }
  }
  EXPECT_FALSE(measured.empty());
  EXPECT_EQ(str(*row(doc, "ftp:disk:read:50000000"), "server_disk"), measured);
  EXPECT_EQ(finding(doc, "config"), nullptr);
}

// A share declared `medium = ram` whose directory is the lab's ext4 disk: its
// rows measure that disk too, so no protocol verdict rests on them and a
// config finding names the share's real filesystem.
TEST_F(Protocols, RamShareOnADiskIsNotTakenForRam) {
  TempDir t;
  const std::string plan =
      "[disk]\nenabled = no\n[tcp]\ncount = 2\n[protocol]\nsizes = 10MB\ncount = 2\n" +
      share("ftp-mislabelled", "ftp://" + lab_names().server_data_address + "/disk",
            info_.server_disk_share, "ram");
  const json::object doc = diagnose(t, plan, t.file("runs.db"));
  ASSERT_FALSE(doc.empty());
  const json::object* r = row(doc, "ftp:ram:read:10000000");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(str(*r, "server_fs"), "ext4");
  EXPECT_TRUE(r->contains("medium_mismatch"));
  const json::object* f = finding(doc, "ftp ram read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(str(*f, "layer"), "undecided") << str(*f, "text");
  EXPECT_EQ(str(*f, "undecided_reason"), "medium");
  const json::object* cfg = finding(doc, "config");
  ASSERT_NE(cfg, nullptr);
  EXPECT_EQ(str(*cfg, "layer"), "config");
}

// Each broken share alone with a good one (one share per protocol and medium
// in a run), the broken one first: it fails its stage with its reason in the
// database, and TCP and the good share after it still complete.
TEST_F(Protocols, StageErrors) {
  struct Case {
    std::string name;
    std::string bad;  // its [share bad] section
    std::string good_url, good_dir;
    std::string reason;  // in stages.error
  };
  const std::string smb_ram = "smb://" + lab_names().server_data_address + "/ram",
                    ftp_ram = "ftp://" + lab_names().server_data_address + "/ram";
  ASSERT_EQ(setenv("CP_TEST_WRONG_PASSWORD", "wrong", 1), 0);

  // A full disk: a 4 MiB tmpfs inside the server host's ram share, in its
  // mount namespace only (vsftpd serves it as ram/cp-full).
  const std::string full = info_.server_ram_share + "/cp-full";
  const std::string ns = std::to_string(info_.server_sshd_pid);
  RunResult mk = run_command({"nsenter", "-t", ns, "-m", "--", "sh", "-c",
                              "mkdir -p \"$1\" && mount -t tmpfs -o size=4m,mode=0777 cp-full "
                              "\"$1\"",
                              "cp-test", full});
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  struct Unmount {
    std::string ns, dir;
    ~Unmount() {
      run_command({"nsenter", "-t", ns, "-m", "--", "sh", "-c", "umount \"$1\" && rmdir \"$1\"",
                   "cp-test", dir});
    }
  } unmount{ns, full};

  const std::vector<Case> cases = {
      {"wrong password",
       share("bad", smb_ram, info_.server_ram_share, "ram",
             "password_env = CP_TEST_WRONG_PASSWORD"),
       ftp_ram, info_.server_ram_share, "NT_STATUS_LOGON_FAILURE"},
      {"unknown share",
       share("bad", "smb://" + lab_names().server_data_address + "/nope", info_.server_ram_share,
             "ram"),
       ftp_ram, info_.server_ram_share, "has no share or directory 'nope'"},
      {"closed port",
       share("bad", "ftp://" + lab_names().server_data_address + ":2999/ram",
             info_.server_ram_share, "ram"),
       smb_ram, info_.server_ram_share,
       "cannot connect to the FTP server at " + lab_names().server_data_address + ":2999"},
      {"read-only share",
       share("bad",
             std::string("smb://" + lab_names().server_data_address + "/") + lab::kReadOnlyShare,
             info_.ro_share, "ram"),
       ftp_ram, info_.server_ram_share, "refused to write"},
      {"full disk", share("bad", ftp_ram + "/cp-full", full, "ram"), smb_ram,
       info_.server_ram_share, "not enough space"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir t;
    const std::string plan =
        "[disk]\nenabled = no\n[tcp]\nseconds = 1\ncount = 1\n[protocol]\nsizes = 10MB\n"
        "count = 1\n" +
        c.bad + share("good", c.good_url, c.good_dir, "ram");
    const std::string db = t.file("runs.db");
    // A failure never looks like success: the run is partial, exit 3.
    diagnose(t, plan, db, /*expect_exit=*/3);  // its exit status is checked there
    EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "partial");
    const std::string where = "json_extract(params_json, '$.share') = ";
    EXPECT_EQ(query_text(db, "SELECT status FROM stages WHERE " + where + "'bad'"), "failed");
    const std::string error = query_text(db, "SELECT error FROM stages WHERE " + where + "'bad'");
    EXPECT_NE(error.find(c.reason), std::string::npos) << error;
    // The reason comes with its fix.
    EXPECT_NE(error.find("fix: "), std::string::npos) << error;
    EXPECT_EQ(query_int(db,
                        "SELECT count(*) FROM stages WHERE layer = 'tcp' AND status = "
                        "'complete'"),
              2);
    EXPECT_EQ(query_text(db, "SELECT status FROM stages WHERE " + where + "'good'"), "complete")
        << query_text(db, "SELECT error FROM stages WHERE " + where + "'good'");
    EXPECT_EQ(query_int(db,
                        "SELECT count(*) FROM samples WHERE error = '' AND stage_id IN "
                        "(SELECT id FROM stages WHERE " +
                            where + "'good')"),
              2);
    EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
    // Nothing left behind in the shares, whatever failed.
    RunResult left = on_host(lab_names().server_netns,
                             "ls -d " + shell_quote(info_.server_ram_share) + "/chokepoint-run-* " +
                                 shell_quote(c.good_dir) + "/chokepoint-run-* 2>/dev/null | wc -l");
    EXPECT_EQ(left.out, "0\n") << left.err;
  }
  unsetenv("CP_TEST_WRONG_PASSWORD");
}

}  // namespace
}  // namespace cp::itest
