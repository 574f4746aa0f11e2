// A share's password never lands anywhere a run leaves behind: not in the
// database file (bytes, its -wal and -shm too), not in `show --json`, the
// JSON and CSV exports, the HTML report, the text report or the progress
// lines. A password inside a share URL is refused before anything is stored.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A password no run could hold by chance: "pw-" and 24 random hex digits.
std::string fresh_password() {
  std::random_device rd;
  std::string pw = "pw-";
  for (int i = 0; i < 24; ++i) pw += "0123456789abcdef"[rd() % 16];
  return pw;
}

// Everything a run leaves with the user, each with a name for messages.
struct Artifact {
  std::string name, bytes;
};

// Runs diagnose (text report, progress on stderr) with `plan` into `db`,
// then show --json, export json and csv, and an HTML report; what each gave.
// The run must complete (0) or be partial (3): its stages did run.
std::vector<Artifact> run_and_collect(const TempDir& t, const std::vector<std::string>& where,
                                      const std::string& plan, int64_t* run_id) {
  const std::string db = t.file("runs.db");
  write_file(t.file("plan.ini"), plan);
  std::vector<std::string> args{"diagnose",         "--db",    db,        "--plan",
                                t.file("plan.ini"), "--label", "secrets", "--html",
                                t.file("run.html")};
  args.insert(args.end(), where.begin(), where.end());
  std::vector<Artifact> out;
  const RunResult r = chokepoint(args, 900);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.exit_code << r.err;
  out.push_back({"diagnose stdout", r.out});
  out.push_back({"diagnose stderr (progress)", r.err});
  *run_id = query_int(db, "SELECT max(id) FROM runs");
  const std::string id = std::to_string(*run_id);
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"show", id, "--db", db, "--json"},
        std::vector<std::string>{"show", id, "--db", db},
        std::vector<std::string>{"export", id, "--db", db, "--format", "json"},
        std::vector<std::string>{"export", id, "--db", db, "--format", "csv"},
        std::vector<std::string>{"history", "--db", db, "--json"}}) {
    const RunResult c = chokepoint(cmd, 120);
    EXPECT_EQ(c.exit_code, 0) << cmd[0] << ": " << c.err;
    out.push_back({cmd[0] + " " + cmd.back() + " stdout", c.out});
    out.push_back({cmd[0] + " " + cmd.back() + " stderr", c.err});
  }
  out.push_back({"run.html", file_bytes(t.file("run.html"))});
  // The database as bytes: the main file and whatever SQLite keeps beside it.
  for (const auto& e : std::filesystem::directory_iterator(t.path())) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("runs.db")) out.push_back({name, file_bytes(e.path().string())});
  }
  return out;
}

void expect_nowhere(const std::vector<Artifact>& artifacts, const std::string& password) {
  ASSERT_FALSE(password.empty());
  for (const Artifact& a : artifacts) {
    EXPECT_EQ(a.bytes.find(password), std::string::npos) << "the password is in " << a.name;
  }
}

int64_t samples_of(const std::string& db, const std::string& layer, const std::string& where) {
  return query_int(db,
                   "SELECT count(*) FROM samples s JOIN stages g ON s.stage_id = g.id "
                   "WHERE g.layer = '" +
                       layer + "' AND g.location = '" + where + "' AND s.error = ''");
}

// ftp://bob:S3cret@host (and the other schemes) on the command line or in a
// plan: refused before anything connects (exit 1, a config error), the
// password echoed nowhere, no database made.
TEST(SecuritySecrets, UrlPasswordIsRefusedBeforeAnythingIsStored) {
  TempDir t;
  const std::string db = t.file("runs.db");
  for (const char* url : {"ftp://bob:S3cret@198.51.100.7/pub", "smb://bob:S3cret@nas/share",
                          "afp://bob:S3cret@nas/Data", "nfs://bob:S3cret@nas/export"}) {
    RunResult r =
        chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db, "--share",
                    std::string("x=") + url + ",server_dir=/srv/x,medium=ram"});
    EXPECT_EQ(r.exit_code, 1) << url << ": " << r.err;
    EXPECT_EQ((r.out + r.err).find("S3cret"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("password_env"), std::string::npos) << r.err;  // the fix
    write_file(t.file("plan.ini"),
               std::string("[share x]\nurl = ") + url + "\nserver_dir = /srv/x\nmedium = ram\n");
    r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db, "--plan",
                    t.file("plan.ini"), "--dry-run", "--json"});
    EXPECT_EQ(r.exit_code, 1) << url << ": " << r.err;
    EXPECT_EQ((r.out + r.err).find("S3cret"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(db)) << url;
  }
}

// Two local agents and two null shares, one given its password through
// password_env, one through a 0600 password_file: the whole pipeline runs
// (the passwords travel to the client agent), and neither is kept.
TEST(SecuritySecrets, LocalRunKeepsNoPassword) {
  TempDir t;
  const std::string env_pw = fresh_password(), file_pw = fresh_password();
  setenv("CHOKEPOINT_TEST_SHARE_PW", env_pw.c_str(), 1);
  write_file(t.file("pw"), file_pw + "\n");
  ASSERT_EQ(chmod(t.file("pw").c_str(), 0600), 0);
  const std::string plan =
      local_dirs(t) +
      "[disk]\nsizes = 1MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 200ms\ncount = 2\n"
      "[protocol]\nsizes = 1MiB\ncount = 2\n"
      "[share nul-ram]\nurl = null:\nmedium = ram\nuser = bob\n"
      "password_env = CHOKEPOINT_TEST_SHARE_PW\n"
      "[share nul-disk]\nurl = null:\nmedium = disk\nuser = bob\npassword_file = " +
      t.file("pw") + "\n";
  int64_t run_id = 0;
  const std::vector<Artifact> got =
      run_and_collect(t, {"--server", "local", "--client", "local"}, plan, &run_id);
  unsetenv("CHOKEPOINT_TEST_SHARE_PW");
  // The share stages ran: the passwords were read and sent.
  EXPECT_GT(query_int(t.file("runs.db"),
                      "SELECT count(*) FROM samples s JOIN stages g ON s.stage_id = g.id "
                      "WHERE g.layer = 'null' AND s.error = ''"),
            0);
  expect_nowhere(got, env_pw);
  expect_nowhere(got, file_pw);
}

// The lab's FTP and SMB shares need the share user's password to log in:
// given through password_env (FTP) and the lab's 0600 password_file (SMB),
// the transfers succeed, so the password was used, and it is kept nowhere.
class SecuritySecretsLab : public LabSuite<SecuritySecretsLab> {
 public:
  static std::vector<std::string> lab_up_options() { return {}; }
};

TEST_F(SecuritySecretsLab, LabRunKeepsNoPassword) {
  if (!ready()) return;
  const LabStatus lab = lab_status();
  std::string password = file_bytes(lab.share_password_file);
  while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
    password.pop_back();
  }
  ASSERT_GE(password.size(), 8u) << "the lab's share password is too short to grep for";
  const LabShare* ftp = lab.share("ftp", "ram");
  ASSERT_NE(ftp, nullptr);
  setenv("CHOKEPOINT_TEST_SHARE_PW", password.c_str(), 1);
  const std::string plan =
      "[disk]\nenabled = no\n[tcp]\nseconds = 1\ncount = 2\n[protocol]\nsizes = 4MiB\ncount = 2\n"
      "[share ftp-ram]\nurl = " +
      ftp->url + "\nserver_dir = " + ftp->server_dir + "\nmedium = ram\nuser = " + lab.share_user +
      "\npassword_env = CHOKEPOINT_TEST_SHARE_PW\n" + lab.plan_section("smb-ram", "smb", "ram");
  TempDir t;
  int64_t run_id = 0;
  const std::vector<Artifact> got = run_and_collect(t, {"--lab"}, plan, &run_id);
  unsetenv("CHOKEPOINT_TEST_SHARE_PW");
  EXPECT_EQ(samples_of(t.file("runs.db"), "ftp", "ram"), 4);  // 2 files each way
  EXPECT_EQ(samples_of(t.file("runs.db"), "smb", "ram"), 4);
  expect_nowhere(got, password);
}

}  // namespace
}  // namespace cp::itest
