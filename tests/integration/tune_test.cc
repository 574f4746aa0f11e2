// `chokepoint tune` on the built-in lab (issue 13): sweeps that find the
// known-good value of a knob the lab was mis-tuned with, and every way a
// sweep can end (done, orchestrator killed, agent killed) leaving the knob's
// value and the Samba config byte-identical to before.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/process.h"
#include "core/text.h"
#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

class Tune : public LabSuite<Tune> {
 protected:
  void SetUpLab() override {
    LabStatus lab;
    ASSERT_NO_THROW(lab = lab_status());
    loop_ = lab.server.loop_device;
    hostname_ = lab.server.hostname;
    smb_conf_ = lab.dir + "/server/samba/smb.conf";
    dropin_ = lab.dir + "/server/samba/chokepoint-tune.conf";
    lab_readahead_ = getra();
    if (lab.share("ftp", "disk"))
      ftp_disk_share_ =
          fmt::format("ftp-disk={},server_dir={},medium=disk,user={},password_file={}",
                      lab.share("ftp", "disk")->url, lab.share("ftp", "disk")->server_dir,
                      lab.share_user, lab.share_password_file);
    // The agent runs as root inside the host, on this filesystem.
    journal_ = std::string(getpwnam("root")->pw_dir) + "/.local/state/chokepoint/tune-journal-" +
               hostname_ + ".json";
  }
  void TearDown() override {
    if (lab_is_up() && geteuid() == 0 && !lab_readahead_.empty())
      run_command({"blockdev", "--setra", lab_readahead_, loop_});
    LabSuite::TearDown();
  }
  std::string getra() {
    RunResult r = run_command({"blockdev", "--getra", loop_});
    std::string s = r.out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  void setra(const std::string& sectors) {
    ASSERT_EQ(run_command({"blockdev", "--setra", sectors, loop_}).exit_code, 0);
  }
  // Polls `done` for up to `seconds`.
  template <class F>
  bool wait_for(F done, double seconds) {
    const double until = monotonic_seconds() + seconds;
    while (monotonic_seconds() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return done();
  }
  // `tune --lab <args> --json -q`: the first session's result.
  static json::object tune_json(std::vector<std::string> args) {
    args.insert(args.begin(), {"tune", "--lab"});
    args.insert(args.end(), {"--json", "-q"});
    RunResult r = chokepoint(args, 900);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).as_array().at(0).as_object();
  }
  json::object sweep_json(const std::vector<std::string>& extra, const std::string& db,
                          const std::string& rounds = "3") {
    std::vector<std::string> args = {"--rounds", rounds,  "--count", "3",
                                     "--size",   "100MB", "--db",    db};
    args.insert(args.end(), extra.begin(), extra.end());
    return tune_json(args);
  }
  // That the sweep put Samba's config back as `conf_before` (byte for byte)
  // and left no drop-in nor journal.
  void expect_smb_conf_put_back(const std::string& conf_before) {
    EXPECT_EQ(slurp(smb_conf_), conf_before);
    EXPECT_FALSE(std::filesystem::exists(dropin_));
    EXPECT_FALSE(std::filesystem::exists(journal_));
  }

  std::string loop_, hostname_, smb_conf_, dropin_, lab_readahead_, journal_;
  std::string ftp_disk_share_;  // --share flag for the lab's FTP share on the server disk
};

// Readahead of 16 KiB starves vsftpd's sendfile(2) reads from the server
// disk (measured: -80 % against the lab's 2.5 MiB): on the FTP disk share,
// 4 MiB must come out significantly better. (smbd's large reads barely
// depend on readahead, so SMB is left out of this sweep.)
TEST_F(Tune, ReadaheadSweepAppliesEachValueInTurnAndPutsItBack) {
  TempDir t;
  ASSERT_FALSE(ftp_disk_share_.empty());
  setra("32");  // 16 KiB: the mis-tuned original
  const std::string conf_before = slurp(smb_conf_);
  // 5 rounds: FTP-from-disk samples on this shared 2-core machine spread
  // widely (a sample the page cache serves is fast at any readahead).
  json::object r = sweep_json({"--knob", "server.readahead=4M", "--share", ftp_disk_share_},
                              t.file("tune.db"), "5");
  EXPECT_EQ(r.at("original").as_string(), "16384");
  // This VM's loop disk sits in the host's page cache, so how much readahead helps
  // varies from run to run (16 KiB read 610-800 MB/s, 4 MiB 330-1650 in one CI
  // run): the recommendation, when there is one, must be the known-good value,
  // never the mis-tuned original.
  if (r.at("recommended").is_string()) {
    EXPECT_EQ(r.at("recommended").as_string(), "4194304");
  }
  for (const auto& l : r.at("layers").as_array()) {
    // Only the layers the knob affects: reads from the server's disk.
    EXPECT_NE(std::string(l.at("layer").as_string()).find(" disk read"), std::string::npos);
  }
  // Each run measured with its slot's value applied, the values interleaved
  // round by round (16 KiB, 4 MiB, 16 KiB, ...): the server's facts of each run
  // say which readahead it had.
  const std::string db = t.file("tune.db");
  for (int64_t round = 1; round <= 5; ++round) {
    for (const char* value : {"16384", "4194304"}) {
      const int64_t run_id = query_int(
          db, fmt::format("SELECT run_id FROM tune_runs WHERE round = {} AND value = '{}'", round,
                          value));
      const std::string facts = query_text(
          db, fmt::format("SELECT facts_json FROM hosts WHERE run_id = {} AND role = 'server'",
                          run_id));
      const int64_t kb =
          json::parse(facts).at("disk_dir").at("device").at("read_ahead_kb").to_number<int64_t>();
      EXPECT_EQ(kb * 1024, std::stoll(value)) << "round " << round;
    }
  }
  EXPECT_EQ(getra(), "32");
  EXPECT_EQ(slurp(smb_conf_), conf_before);
  EXPECT_FALSE(std::filesystem::exists(journal_));
  // The session and its 10 runs (5 rounds x 2 values) are stored.
  EXPECT_EQ(query_int(t.file("tune.db"), "SELECT count(*) FROM tune_runs"), 10);
  EXPECT_EQ(query_text(t.file("tune.db"), "SELECT status FROM tune_sessions"), "complete");
  EXPECT_EQ(query_int(t.file("tune.db"), "SELECT count(*) FROM runs WHERE status='complete'"), 10);
  // `tune --show` recomputes the same result from the stored samples.
  RunResult shown = chokepoint({"tune", "--show", "latest", "--db", t.file("tune.db"), "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const json::object again = json::parse(shown.out).as_array().at(0).as_object();
  EXPECT_EQ(again.at("recommended"), r.at("recommended"));
  EXPECT_EQ(again.at("layers"), r.at("layers"));
  EXPECT_EQ(again.at("run_ids"), r.at("run_ids"));
}

// The issue's readahead sweep in shape, end to end: a sweep on the FTP disk
// share whose values include the original (16 KiB), which runs once per
// round as the original's slot; then its stored samples forced to the spread
// the issue saw (the original 433-1529 MB/s, 4 MiB +56 % at the median, 9
// samples each: beyond the original's spread, short of significance), which
// `tune --show` reads back: no recommendation, and `unsettled` names 4 MiB
// with more rounds than the 3 run. (Forced: this loaded machine's own spread
// lands anywhere.)
TEST_F(Tune, AMoveBeyondTheSpreadNamesTheRoundsToSettleItAndTheOriginalIsOneSlot) {
  TempDir t;
  const std::string db = t.file("tune.db");
  ASSERT_FALSE(ftp_disk_share_.empty());
  setra("32");  // 16 KiB
  RunResult r =
      chokepoint({"tune", "--lab", "--rounds", "3", "--count", "3", "--size", "20MB", "--db", db,
                  "--json", "-q", "--knob", "server.readahead=16K,4M", "--share", ftp_disk_share_},
                 900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object swept = json::parse(r.out).as_array().at(0).as_object();
  EXPECT_EQ(swept.at("original").as_string(), "16384");
  // One slot per value and round: the original, and 4 MiB.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM tune_runs"), 6);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM tune_runs WHERE is_original = 1"), 3);
  EXPECT_EQ(query_int(db, "SELECT count(DISTINCT value) FROM tune_runs"), 2);
  for (const auto& l : swept.at("layers").as_array()) {
    EXPECT_EQ(l.at("values").as_array().size(), 2u) << l.at("layer");
  }
  // Each read row's samples, in round and sample order, get the issue's rates (MB/s).
  const std::vector<int> original = {433, 500, 560, 600, 640, 700, 760, 1100, 1529};
  const std::vector<int> higher = {450, 520, 700, 900, 1000, 1050, 1200, 1300, 1529};
  std::string rates;
  for (const auto& [is_original, list] : {std::pair{1, &original}, std::pair{0, &higher}}) {
    for (size_t k = 0; k < list->size(); ++k) {
      rates +=
          fmt::format("{}({}, {}, {})", rates.empty() ? "" : ", ", is_original, k + 1, (*list)[k]);
    }
  }
  exec_sql(db,
           "WITH rates(orig, k, mbps) AS (VALUES " + rates +
               "), ranked AS (SELECT s.id AS id, t.is_original AS orig, row_number() OVER "
               "(PARTITION BY t.is_original, st.layer, st.location ORDER BY t.round, s.seq) AS k "
               "FROM samples s JOIN stages st ON st.id = s.stage_id JOIN tune_runs t ON t.run_id "
               "= s.run_id WHERE s.op = 'read' AND s.error = '') "
               "UPDATE samples SET seconds = samples.bytes / (1e6 * rates.mbps) FROM ranked JOIN "
               "rates ON rates.orig = ranked.orig AND rates.k = ranked.k "
               "WHERE samples.id = ranked.id");
  RunResult shown = chokepoint({"tune", "--show", "latest", "--db", db, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const json::object again = json::parse(shown.out).as_array().at(0).as_object();
  EXPECT_TRUE(again.at("recommended").is_null()) << shown.out;
  ASSERT_TRUE(again.at("unsettled").is_object()) << shown.out;
  const json::object& u = again.at("unsettled").as_object();
  EXPECT_EQ(u.at("value").as_string(), "4194304");
  EXPECT_GT(u.at("change").to_number<double>(), 0.3);
  EXPECT_GT(u.at("suggested_rounds").to_number<int64_t>(), 3);
}

// The lab's smbd started with smb2 max read = 16384: 8 MiB is known-good.
TEST_F(Tune, SmbMaxReadSweepFindsTheKnownGoodValueAndPutsTheConfigBack) {
  ASSERT_NO_FATAL_FAILURE(reshape({"--rate", "0", "--samba", "smb2 max read = 16384"}));
  TempDir t;
  const std::string conf_before = slurp(smb_conf_);
  json::object r = sweep_json({"--knob", "samba.smb2_max_read=8M"}, t.file("tune.db"));
  EXPECT_EQ(r.at("original").as_string(), "16384");
  ASSERT_TRUE(r.at("recommended").is_string()) << r.at("reason").as_string() << "\n"
                                               << json::serialize(r.at("layers"));
  EXPECT_EQ(r.at("recommended").as_string(), "8388608");
  for (const auto& l : r.at("layers").as_array()) {
    EXPECT_EQ(std::string(l.at("layer").as_string()).rfind("smb ", 0), 0u);
  }
  expect_smb_conf_put_back(conf_before);
}

// SMB1: `max xmit` under `server min/max protocol = NT1` with the client
// offering NT1 only. Every sample says NT1 was negotiated and carries the
// slot's max xmit as the server announced it; smb.conf comes back
// byte-identical.
TEST_F(Tune, MaxXmitSweepRunsUnderNt1RecordsItAndPutsTheConfigBack) {
  TempDir t;
  const std::string conf_before = slurp(smb_conf_);
  RunResult orig = run_command({"testparm", "-s", "--parameter-name=max xmit", smb_conf_});
  ASSERT_EQ(orig.exit_code, 0) << orig.err;
  std::string xmit_before = orig.out;
  while (!xmit_before.empty() && xmit_before.back() == '\n') xmit_before.pop_back();
  const std::string db = t.file("tune.db");
  RunResult r = chokepoint({"tune", "--lab", "--knob", "samba.max_xmit=4096,65535", "--rounds", "2",
                            "--count", "2", "--size", "10MB", "--db", db, "--json", "-q"},
                           900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object res = json::parse(r.out).as_array().at(0).as_object();
  EXPECT_EQ(res.at("original").as_string(), xmit_before);
  // 2 rounds x (original + 2 values), every sample of every run over NT1.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM tune_runs"), 6);
  EXPECT_GT(query_int(db, "SELECT count(*) FROM samples"), 0);
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM sample_details WHERE error = '' AND "
                      "json_extract(details_json, '$.properties.dialect') IS NOT 'NT1'"),
            0);
  EXPECT_EQ(
      query_int(db,
                "SELECT count(*) FROM sample_details s JOIN tune_runs t ON t.run_id = s.run_id "
                "WHERE json_extract(s.details_json, '$.properties.max_xmit') IS NOT "
                "t.value"),
      0);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples WHERE error != ''"), 0);
  expect_smb_conf_put_back(conf_before);
}

// Two knobs: every combination (cross) runs with its values applied at
// once, each visible in what the server announced (max read/write sizes),
// and one Holm family over all comparisons. Both Samba knobs share the
// drop-in, which is gone at the end.
TEST_F(Tune, GridOfTwoKnobsRunsEveryCombinationWithItsValues) {
  TempDir t;
  const std::string conf_before = slurp(smb_conf_);
  const std::string db = t.file("tune.db");
  const json::object res =
      tune_json({"--knob", "samba.smb2_max_read=1M", "--knob", "samba.smb2_max_write=1M",
                 "--rounds", "2", "--count", "2", "--size", "10MB", "--db", db});
  EXPECT_EQ(res.at("grid").as_string(), "cross");
  const json::array& combos = res.at("combinations").as_array();
  ASSERT_EQ(combos.size(), 4u);
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& c : combos) {
    const json::array& set = c.at("settings").as_array();
    ASSERT_EQ(set.size(), 2u);
    seen.insert({std::string(set[0].as_string()), std::string(set[1].as_string())});
  }
  EXPECT_EQ(seen.size(), 4u);
  size_t comparisons = 0;
  for (const auto& l : res.at("layers").as_array()) {
    ASSERT_EQ(l.at("values").as_array().size(), 4u);
    for (const auto& v : l.at("values").as_array()) {
      EXPECT_GE(v.at("p_holm").to_number<double>(), v.at("p").to_number<double>());
    }
    comparisons += 3;
  }
  EXPECT_GT(comparisons, 3u);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM tune_runs"), 8);
  // Each run's samples: the server announced the combination's sizes.
  for (size_t i = 0; i < combos.size(); ++i) {
    const json::array& set = combos[i].at("settings").as_array();
    const std::string label(combos[i].at("label").as_string());
    EXPECT_EQ(
        query_int(db, fmt::format(
                          "SELECT count(*) FROM sample_details s JOIN tune_runs t ON t.run_id = "
                          "s.run_id WHERE t.value = '{}' AND (json_extract(s.details_json, "
                          "'$.properties.max_read_size') IS NOT '{}' OR "
                          "json_extract(s.details_json, '$.properties.max_write_size') IS "
                          "NOT '{}')",
                          label, std::string(set[0].as_string()), std::string(set[1].as_string()))),
        0)
        << label;
    EXPECT_EQ(
        query_int(db, fmt::format("SELECT count(*) FROM tune_runs WHERE value = '{}'", label)), 2)
        << label;
  }
  expect_smb_conf_put_back(conf_before);
  // One knob at a time: the original and one combination per value.
  const json::object o =
      tune_json({"--knob", "samba.smb2_max_read=1M", "--knob", "samba.smb2_max_write=1M", "--grid",
                 "one-at-a-time", "--rounds", "1", "--count", "1", "--size", "10MB", "--db",
                 t.file("one.db")});
  EXPECT_EQ(o.at("grid").as_string(), "one-at-a-time");
  const json::array& oc = o.at("combinations").as_array();
  ASSERT_EQ(oc.size(), 3u);
  for (const auto& c : oc) {
    const json::array& set = c.at("settings").as_array();
    const json::array& first = oc[0].at("settings").as_array();
    EXPECT_LE((set[0] != first[0]) + (set[1] != first[1]), 1);
  }
  EXPECT_EQ(slurp(smb_conf_), conf_before);
  EXPECT_FALSE(std::filesystem::exists(journal_));
}

// A non-root user on the client: the readahead of its disk needs root.
// Without a sudo rule the sweep is refused before anything changes; with
// `USER ALL=(root) NOPASSWD: /usr/sbin/blockdev` it runs through `sudo -n`
// and puts the value back.
TEST_F(Tune, NonRootKnobUsesSudoWithARuleAndIsRefusedWithout) {
  TempDir t;
  RunResult st = chokepoint({"lab", "status", "--json"}, 120);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  const json::object doc = json::parse(st.out).as_object();
  const json::object& client = doc.at("client").as_object();
  const json::object& server = doc.at("server").as_object();
  const std::string lab_ssh(doc.at("ssh_config").as_string());
  const std::string identity(doc.at("identity").as_string());
  const std::string known(doc.at("known_hosts").as_string());
  const std::string client_loop(client.at("loop_device").as_string());
  const std::string client_disk(client.at("disk").at("dir").as_string());
  const std::string client_ram(client.at("ram").at("dir").as_string());
  const std::string client_alias(client.at("alias").as_string());
  const std::string user = fmt::format("cptune-{}", lab_instance());
  // Not under the TempDir: sshd reads ~/.ssh as the user, who cannot enter a 0700 dir.
  const std::string home = "/var/tmp/" + user + "-home";
  const std::string sudoers = fmt::format("/etc/sudoers.d/chokepoint-test-{}", lab_instance());
  struct Cleanup {
    std::string user, sudoers, home;
    ~Cleanup() {
      ::unlink(sudoers.c_str());
      std::error_code ec;
      std::filesystem::remove_all(home, ec);
      // The user's agent ends with its SSH channel; then the user can go.
      for (int i = 0; i < 50 && run_command({"userdel", user}).exit_code == 8; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      run_command({"userdel", "-f", user});
    }
  } cleanup{user, sudoers, home};
  run_command({"userdel", "-f", user});
  ASSERT_EQ(run_command({"useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/sh",
                         "--comment", "chokepoint tune test", user})
                .exit_code,
            0);
  // '*': no password, yet not locked ('!'), which sshd without PAM refuses.
  ASSERT_EQ(run_command({"usermod", "-p", "*", user}).exit_code, 0);
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home + "/.ssh");
  std::filesystem::copy_file(identity + ".pub", home + "/.ssh/authorized_keys");
  ASSERT_EQ(run_command({"chown", "-R", user + ":" + user, home}).exit_code, 0);
  // Its directories inside the client host (its own mount namespace).
  const std::string disk_dir = client_disk + "/" + user, ram_dir = client_ram + "/" + user;
  RunResult mk =
      run_command({"ssh", "-F", lab_ssh, client_alias,
                   fmt::format("mkdir -p {0} {1} && chown {2}: {0} {1}", disk_dir, ram_dir, user)});
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  write_file(t.file("ssh_config"),
             fmt::format("Host tuner\n  HostName {}\n  User {}\n  IdentityFile {}\n"
                         "  IdentitiesOnly yes\n  UserKnownHostsFile {}\n"
                         "  StrictHostKeyChecking yes\n"
                         "Host server\n  HostName {}\n  User root\n  IdentityFile {}\n"
                         "  IdentitiesOnly yes\n  UserKnownHostsFile {}\n"
                         "  StrictHostKeyChecking yes\n",
                         std::string(client.at("mgmt_address").as_string()), user, identity, known,
                         std::string(server.at("mgmt_address").as_string()), identity, known));
  write_file(t.file("plan.ini"),
             fmt::format("[server]\nram_dir = {}\ndisk_dir = {}\n[client]\nram_dir = {}\n"
                         "disk_dir = {}\n",
                         std::string(server.at("ram").at("dir").as_string()),
                         std::string(server.at("disk").at("dir").as_string()), ram_dir, disk_dir));
  // The user logs in (a refusal below is then the knob's, not the login's).
  RunResult login = run_command({"ssh", "-F", t.file("ssh_config"), "tuner", "id", "-u"});
  ASSERT_EQ(login.exit_code, 0) << login.err;
  EXPECT_NE(login.out, "0\n");
  auto getra_client = [&] {
    std::string s = run_command({"blockdev", "--getra", client_loop}).out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  };
  const std::string ra = getra_client();
  const std::string user_journal = home + "/.local/state/chokepoint/tune-journal-" +
                                   std::string(client.at("hostname").as_string()) + ".json";
  const std::vector<std::string> args = {"tune",
                                         "--server",
                                         "server",
                                         "--client",
                                         "tuner",
                                         "--ssh-config",
                                         t.file("ssh_config"),
                                         "--plan",
                                         t.file("plan.ini"),
                                         "--knob",
                                         "client.readahead=1M",
                                         "--rounds",
                                         "1",
                                         "--count",
                                         "1",
                                         "--size",
                                         "10MB",
                                         "--json",
                                         "-q"};
  // No rule: refused (exit 1), nothing changed, no session stored.
  std::vector<std::string> no_rule = args;
  no_rule.insert(no_rule.end(), {"--db", t.file("none.db")});
  RunResult refused = chokepoint(no_rule, 600);
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_EQ(getra_client(), ra);
  EXPECT_FALSE(std::filesystem::exists(user_journal));
  if (std::filesystem::exists(t.file("none.db"))) {
    EXPECT_EQ(query_int(t.file("none.db"),
                        "SELECT count(*) FROM sqlite_master WHERE name = "
                        "'tune_sessions'") == 0 ||
                  query_int(t.file("none.db"), "SELECT count(*) FROM tune_sessions") == 0,
              true);
  }
  // With the rule: runs through sudo -n, measures 1 MiB, puts it back.
  write_file(sudoers, user + " ALL=(root) NOPASSWD: /usr/sbin/blockdev\n");
  ASSERT_EQ(::chmod(sudoers.c_str(), 0440), 0);
  std::vector<std::string> with_rule = args;
  with_rule.insert(with_rule.end(), {"--db", t.file("tune.db")});
  RunResult ok = chokepoint(with_rule, 600);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const json::object res = json::parse(ok.out).as_array().at(0).as_object();
  EXPECT_EQ(res.at("original").as_string(), std::to_string(std::stoll(ra) * 512));
  EXPECT_EQ(query_int(t.file("tune.db"),
                      "SELECT json_extract(h.facts_json, '$.disk_dir.device.read_ahead_kb') FROM "
                      "hosts h JOIN tune_runs t ON t.run_id = h.run_id WHERE h.role = 'client' AND "
                      "t.is_original = 0"),
            1024);
  EXPECT_EQ(getra_client(), ra);
  EXPECT_FALSE(std::filesystem::exists(user_journal));
}

// netatalk's knobs against the project's AFP test server standing in for
// afpd (Debian 12 has no netatalk): the server reads `server quantum` from
// afp.conf at start, and the restart command stops it by PID and starts it
// again on the same port. Both ends are local agents; no lab needed.
TEST(TuneLocal, NetatalkServerQuantumRestartsTheServerAndPutsAfpConfBack) {
  if (geteuid() != 0) GTEST_SKIP() << "local agents tune as root";
  TempDir t;
  const std::string peer = std::filesystem::path(CHOKEPOINT_BIN).parent_path() / "afp_test_peer";
  ASSERT_TRUE(std::filesystem::exists(peer)) << peer;
  const std::string vol = fmt::format("/dev/shm/chokepoint-tune-afp-{}", getpid());
  std::filesystem::remove_all(vol);
  std::filesystem::create_directories(vol);
  struct Cleanup {
    std::string vol, pid_file;
    ~Cleanup() {
      // The last server started by the restart command: stopped by its PID.
      std::ifstream in(pid_file);
      int pid = 0;
      if (in >> pid && pid > 1) ::kill(pid, SIGTERM);
      std::error_code ec;
      std::filesystem::remove_all(vol, ec);
    }
  } cleanup{vol, t.file("peer.pid")};
  // A free port, for the server's every start.
  int port = 0;
  {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = ntohs(a.sin_port);
    ::close(fd);
  }
  const std::string conf = t.file("afp.conf");
  const std::string conf_text =
      "; afp.conf of the tune test\n[Global]\n  log level = default:warn\n\n[vol]\n  path = " +
      vol + "\n";
  write_file(conf, conf_text);
  const std::string pid_file = t.file("peer.pid");
  write_file(
      t.file("restart.sh"),
      fmt::format("#!/bin/sh\n"
                  "# Stops the running server by its PID, starts it again.\n"
                  "if [ -f {0} ]; then\n"
                  "  kill \"$(cat {0})\"\n"
                  "  i=0; while [ -f {0} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
                  "fi\n"
                  "setsid {1} --dir {2} --port {3} --afp-conf {4} --pid-file {0} "
                  "</dev/null >/dev/null 2>&1 &\n"
                  "i=0; while [ ! -f {0} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n"
                  "[ -f {0} ]\n",
                  pid_file, peer, vol, port, conf));
  ASSERT_EQ(run_command({"sh", t.file("restart.sh")}).exit_code, 0);
  write_file(t.file("password"), "bench\n");
  ASSERT_EQ(::chmod(t.file("password").c_str(), 0600), 0);
  const std::string db = t.file("tune.db");
  RunResult r =
      chokepoint({"tune",
                  "--server",
                  "local",
                  "--client",
                  "local",
                  "--share",
                  fmt::format("afp-vol=afp://127.0.0.1:{}/vol,server_dir={},medium=ram,user=bench,"
                              "password_file={}",
                              port, vol, t.file("password")),
                  "--knob",
                  "netatalk.server_quantum=256K",
                  "--afp-conf",
                  conf,
                  "--afp-restart",
                  "sh " + t.file("restart.sh"),
                  "--rounds",
                  "2",
                  "--count",
                  "1",
                  "--size",
                  "10MB",
                  "--db",
                  db,
                  "--json",
                  "-q"},
                 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object res = json::parse(r.out).as_array().at(0).as_object();
  EXPECT_EQ(res.at("original").as_string(), "1048576");  // netatalk's default: the file sets none
  EXPECT_EQ(res.at("target").as_string(), conf);
  // Every sample measured against the quantum of its slot, as the server
  // announced it after its restart.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM tune_runs"), 4);
  EXPECT_GT(query_int(db, "SELECT count(*) FROM samples WHERE error = ''"), 0);
  EXPECT_EQ(
      query_int(db,
                "SELECT count(*) FROM sample_details s JOIN tune_runs t ON t.run_id = s.run_id "
                "WHERE json_extract(s.details_json, '$.properties.quantum') IS NOT "
                "t.value"),
      0);
  EXPECT_EQ(slurp(conf), conf_text);
  // Restarted once more by the revert: a server runs, with the original quantum.
  EXPECT_TRUE(std::filesystem::exists(pid_file));
}

TEST_F(Tune, DryRunChangesNothing) {
  const std::string conf_before = slurp(smb_conf_);
  const std::string ra = getra();
  RunResult r = chokepoint({"tune", "--lab", "--dry-run", "--knob", "server.readahead=1M", "--knob",
                            "samba.smb2_max_read=64K"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("blockdev --setra 2048 " + loop_), std::string::npos) << r.out;
  EXPECT_EQ(getra(), ra);
  expect_smb_conf_put_back(conf_before);
}

// The orchestrator killed outright: the agents see their channel close and
// revert (Samba config byte-identical, drop-in gone, smbd reloaded).
TEST_F(Tune, OrchestratorSigkillMidSweepRestoresTheOriginal) {
  TempDir t;
  const std::string conf_before = slurp(smb_conf_);
  Child c({CHOKEPOINT_BIN, "tune", "--lab", "--knob", "samba.smb2_max_read=64K,1M", "--rounds",
           "20", "--count", "3", "--size", "100MB", "--db", t.file("tune.db"), "-q"});
  ASSERT_TRUE(wait_for([&] { return std::filesystem::exists(dropin_); }, 120))
      << "the sweep never applied the knob";
  EXPECT_NE(slurp(smb_conf_), conf_before);
  EXPECT_TRUE(std::filesystem::exists(journal_));
  c.kill(SIGKILL);
  ASSERT_EQ(c.wait(10), 128 + SIGKILL);
  EXPECT_TRUE(wait_for([&] { return !std::filesystem::exists(journal_); }, 60));
  EXPECT_EQ(slurp(smb_conf_), conf_before);
  EXPECT_FALSE(std::filesystem::exists(dropin_));
}

// The server's agent killed outright: nothing can revert at once; the next
// agent start does (here `tune --revert`, which starts one).
TEST_F(Tune, AgentSigkillMidSweepRestoresAtTheNextAgentStart) {
  TempDir t;
  const std::string ra = getra();
  Child c({CHOKEPOINT_BIN, "tune", "--lab", "--knob", "server.readahead=16K,64K", "--rounds", "20",
           "--count", "3", "--size", "100MB", "--db", t.file("tune.db"), "-q"});
  ASSERT_TRUE(wait_for([&] { return getra() != ra; }, 120)) << "the sweep never applied the knob";
  ASSERT_TRUE(std::filesystem::exists(journal_));
  const json::object j = json::parse(slurp(journal_)).as_object();
  const int agent_pid = static_cast<int>(j.at("pid").as_int64());
  ASSERT_GT(agent_pid, 1);
  ASSERT_EQ(::kill(agent_pid, SIGKILL), 0);
  EXPECT_NE(c.wait(120), 0);  // the sweep fails: its server agent is gone
  EXPECT_NE(getra(), ra);     // nobody was left to revert
  EXPECT_TRUE(std::filesystem::exists(journal_));
  RunResult rv = chokepoint({"tune", "--revert", "--lab", "--json"}, 300);
  ASSERT_EQ(rv.exit_code, 0) << rv.err << rv.out;
  EXPECT_EQ(getra(), ra);
  EXPECT_FALSE(std::filesystem::exists(journal_));
  const json::array hosts = json::parse(rv.out).as_array();
  const json::array& restored = hosts.at(0).at("restored").as_array();
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0].at("knob").as_string(), "server.readahead");
  EXPECT_EQ(restored[0].at("error").as_string(), "");
}

int data_mtu(const std::string& netns) {
  RunResult r = run_command({"ip", "netns", "exec", netns, "ip", "-o", "link", "show"});
  for (const char* ifname : {"cpd-s", "cpd-c"}) {
    const size_t at = r.out.find(std::string(": ") + ifname);
    if (at == std::string::npos) continue;
    const size_t m = r.out.find(" mtu ", at);
    return std::stoi(r.out.substr(m + 5));
  }
  return 0;
}

// Both ends' data interfaces change together and come back together; SSH
// runs over the management interfaces, so no watchdog is needed.
TEST_F(Tune, MtuSweepChangesBothEndsAndPutsThemBack) {
  TempDir t;
  const int server_before = data_mtu(lab_names().server_netns);
  const int client_before = data_mtu(lab_names().client_netns);
  ASSERT_GT(server_before, 0);
  RunResult r = chokepoint({"tune", "--lab", "--knob", "link.mtu=1280", "--rounds", "1", "--count",
                            "1", "--size", "10MB", "--db", t.file("tune.db"), "--json", "-q"},
                           900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object res = json::parse(r.out).as_array().at(0).as_object();
  EXPECT_EQ(res.at("original").as_string(), std::to_string(server_before));
  EXPECT_EQ(data_mtu(lab_names().server_netns), server_before);
  EXPECT_EQ(data_mtu(lab_names().client_netns), client_before);
  // The value's run measured with 1280 on both ends (the facts taken at its start).
  EXPECT_EQ(query_int(t.file("tune.db"), "SELECT count(*) FROM tune_runs"), 2);
  EXPECT_EQ(query_int(t.file("tune.db"),
                      "SELECT count(*) FROM hosts h JOIN tune_runs t ON t.run_id = h.run_id "
                      "WHERE t.is_original = 0 AND json_extract(h.facts_json, '$.net.mtu') = 1280"),
            2);
}

TEST_F(Tune, UnknownKnobAndMissingStageAreUsageAndConfigErrors) {
  RunResult unknown = chokepoint({"tune", "--lab", "--knob", "server.nope=1"});
  EXPECT_EQ(unknown.exit_code, 2);
  // The lab has no AFP share: an AFP option has no stage to measure.
  RunResult nostage = chokepoint({"tune", "--lab", "--knob", "client.afp_depth=4"});
  EXPECT_EQ(nostage.exit_code, 1);
  // A loop disk has no drive write cache: refused before anything changes.
  RunResult wc = chokepoint({"tune", "--lab", "--knob", "server.write_cache=0", "--rounds", "1",
                             "--count", "1", "--size", "10MB", "-q"});
  EXPECT_EQ(wc.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(journal_));
}

// A tune state directory for the local agent in `t` (`state`, mode 0700, for
// CHOKEPOINT_TUNE_STATE_DIR) and the journal it looks for there.
void make_state_dir(const TempDir& t, std::string* state, std::string* journal) {
  *state = t.file("state");
  ASSERT_TRUE(std::filesystem::create_directory(*state));
  ASSERT_EQ(::chmod(state->c_str(), 0700), 0);
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  *journal = *state + "/tune-journal-" + std::string(host) + ".json";
}

// A journal planted where the local agent looks for it (an attacker's
// `run: touch ...` under a real knob's name, and a write outside the knob
// table): `chokepoint clean local` starts the agent, which refuses both and
// runs neither; the run reports the refusal in its typed fields and fails.
TEST(SecurityTuneJournal, CleanLocalRefusesAPlantedJournalRunsNothingAndSaysSo) {
  TempDir t;
  std::string state, journal;
  ASSERT_NO_FATAL_FAILURE(make_state_dir(t, &state, &journal));
  const std::string marker = t.file("marker"), victim = t.file("victim");
  write_file(victim, "keep\n");
  write_file(
      journal,
      fmt::format(R"({{"version":1,"host":"x","pid":1,"entries":[)"
                  R"({{"knob":"server.readahead","target":"/dev/loop0","original":"x",)"
                  R"("revert":[{{"kind":"run","argv":["touch","{}"]}}]}},)"
                  R"({{"knob":"server.tcp_rmem","target":"net.ipv4.tcp_rmem","original":"x",)"
                  R"("revert":[{{"kind":"write","path":"{}","content":"owned\n"}}]}}]}})"
                  "\n",
                  marker, victim));
  ASSERT_EQ(::chmod(journal.c_str(), 0600), 0);
  ::setenv("CHOKEPOINT_TUNE_STATE_DIR", state.c_str(), 1);
  RunResult r = chokepoint({"clean", "local", "--dir", t.path(), "--json"}, 120);
  RunResult text = chokepoint({"clean", "local", "--dir", t.path()}, 120);
  ::unsetenv("CHOKEPOINT_TUNE_STATE_DIR");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(slurp(victim), "keep\n");
  const json::object host0 = json::parse(r.out).at("hosts").as_array().at(0).as_object();
  ASSERT_TRUE(host0.contains("tune_at_start")) << r.out;
  const json::object& ts = host0.at("tune_at_start").as_object();
  EXPECT_EQ(ts.at("journal").as_string(), journal);
  EXPECT_TRUE(ts.at("reverted").as_array().empty());
  const json::array& refused = ts.at("refused").as_array();
  ASSERT_EQ(refused.size(), 2u);
  std::set<std::string> knobs;
  for (const auto& x : refused) {
    EXPECT_EQ(x.at("reason").as_string(), "action_shape");
    knobs.insert(std::string(x.at("knob").as_string()));
  }
  EXPECT_EQ(knobs, (std::set<std::string>{"server.readahead", "server.tcp_rmem"}));
  // The text report fails too and does not call the host clean.
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_EQ(text.out.find("nothing left behind"), std::string::npos) << text.out;
  // The journal stays for a person to look at.
  EXPECT_TRUE(std::filesystem::exists(journal));
}

// The same with a symlinked journal (to a journal that would pass): refused
// as a symlink, not followed.
TEST(SecurityTuneJournal, CleanLocalRefusesASymlinkedJournal) {
  TempDir t;
  std::string state, journal;
  ASSERT_NO_FATAL_FAILURE(make_state_dir(t, &state, &journal));
  const std::string elsewhere = t.file("elsewhere.json");
  write_file(elsewhere, R"({"version":1,"entries":[]})");
  ::chmod(elsewhere.c_str(), 0600);
  std::filesystem::create_symlink(elsewhere, journal);
  ::setenv("CHOKEPOINT_TUNE_STATE_DIR", state.c_str(), 1);
  RunResult r = chokepoint({"clean", "local", "--dir", t.path(), "--json"}, 120);
  ::unsetenv("CHOKEPOINT_TUNE_STATE_DIR");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json::object host0 = json::parse(r.out).at("hosts").as_array().at(0).as_object();
  ASSERT_TRUE(host0.contains("tune_at_start")) << r.out;
  const json::array& refused = host0.at("tune_at_start").at("refused").as_array();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].at("reason").as_string(), "symlink");
}

// tune --show on a database that is not there: an error naming it, and no file made.
TEST(SecurityTuneShow, AMissingDatabaseIsNotCreated) {
  TempDir t;
  RunResult r = chokepoint({"tune", "--show", "--db", t.file("none.db")}, 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(t.file("none.db")));
}

}  // namespace
}  // namespace cp::itest
