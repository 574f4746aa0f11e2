// A hostile peer and a tampered agent, end to end. SecurityHostilePeer: a
// scripted hostile agent (hostile_agent.py, relaying a real one) that turns
// to heartbeats only mid-stage; the run ends by the request's deadline with
// the samples measured before it kept. SecurityAgentCache: the lab's sshd
// (BusyBox NAS root, a non-root login, so the agent cache is the lab's own
// user's): a cached agent with bytes flipped is uploaded again, never run; a
// group-writable cache dir or one that is a symlink is refused; a remote
// command printing past exec's cap is cut off.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>

#include "core/clock.h"
#include "core/error.h"
#include "core/sha256.h"
#include "remote/ssh.h"
#include "support.h"

namespace cp::itest {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr int kFailed = 1, kPartial = 3;

// ---- a hostile agent behind the link (local endpoints, no lab) -------------

std::string agent_beside_chokepoint() {
  return (fs::path(CHOKEPOINT_BIN).parent_path() / "chokepoint-agent").string();
}

// The server's agent answers its disk writes, then on the first read sends
// only heartbeats. With [timeouts] silence = 2 s the read's deadline is
// 4 x (1 MiB at 1 MB/s) + 10 x 2 s, about 24 s: the run ends with the server
// agent abandoned, partial (exit 3), and the writes measured before it stay.
TEST(SecurityHostilePeer, AnAgentThatOnlyHeartbeatsEndsTheRunWithTheSamplesKept) {
  TempDir t;
  write_file(t.file("plan.ini"),
             local_dirs(t) +
                 "[disk]\nsizes = 1MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 300ms\ncount = "
                 "1\n[timeouts]\nsilence = 2s\n");
  setenv("CHOKEPOINT_AGENT", CHOKEPOINT_SOURCE_DIR "/tests/integration/hostile_agent.py", 1);
  setenv("CP_REAL_AGENT", agent_beside_chokepoint().c_str(), 1);
  setenv("CP_HOSTILE_TYPE", "disk", 1);
  setenv("CP_HOSTILE_AT", "3", 1);  // write, write, then the first read
  setenv("CP_HOSTILE_MARK", t.file("hostile.mark").c_str(), 1);
  const std::string db = t.file("runs.db");
  const double t0 = monotonic_seconds();
  RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db,
                            "--plan", t.file("plan.ini"), "-q"},
                           300);
  const double took = monotonic_seconds() - t0;
  for (const char* v : {"CHOKEPOINT_AGENT", "CP_REAL_AGENT", "CP_HOSTILE_TYPE", "CP_HOSTILE_AT",
                        "CP_HOSTILE_MARK"}) {
    unsetenv(v);
  }
  ASSERT_TRUE(fs::exists(t.file("hostile.mark"))) << "the agent never turned hostile: " << r.err;
  EXPECT_EQ(r.exit_code, kPartial) << r.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "partial");
  // The server's two writes were measured before it turned, and are kept.
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM samples s JOIN stages g ON s.stage_id = g.id WHERE "
                      "g.layer = 'disk' AND s.op = 'write' AND s.error = ''"),
            4);  // two on each end
  // The read it never answered is stored as failed.
  EXPECT_GE(query_int(db, "SELECT count(*) FROM samples WHERE error != ''"), 1);
  // Ended by the deadline, not the 300 s the command was allowed (loose:
  // the machine is shared).
  EXPECT_LT(took, 200);
  // Nothing left behind: the hostile agent and the real one behind it are
  // gone, and so are their run directories.
  const double until = monotonic_seconds() + 20;
  while (monotonic_seconds() < until &&
         (!pids_matching("hostile_agent.py").empty() || run_dirs_in(t.path()) > 0)) {
    usleep(100000);
  }
  EXPECT_TRUE(pids_matching("hostile_agent.py").empty());
  EXPECT_EQ(run_dirs_in(t.path()), 0);
}

// ---- the agent cache on the lab's sshd -------------------------------------

class SecurityAgentCache : public LabSuite<SecurityAgentCache> {
 public:
  static std::vector<std::string> lab_up_options() {
    return {"--server-profile", "nas", "--server-login", "user"};
  }

 protected:
  void SetUpLab() override {
    status_ = lab_status();
    cache_ = lab_dir() + "/server/home/.cache/chokepoint";
    const LabShare* s = status_.share("ftp", "ram");
    ASSERT_NE(s, nullptr);
    sweep_dir_ = s->server_dir;
  }
  RunResult clean() {
    return chokepoint({"clean", status_.server.alias, "--ssh-config", status_.ssh_config, "--dir",
                       sweep_dir_, "--json"});
  }
  // The agents in the cache dir: file -> SHA-256.
  std::map<std::string, std::string> cached() const {
    std::map<std::string, std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cache_, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("chokepoint-agent", 0) == 0) {
        out[name] = sha256_hex_of_file(e.path().string()).value_or("");
      }
    }
    return out;
  }
  // Whether `clean`'s JSON has an error for the host.
  static bool host_failed(const RunResult& r) {
    const json::value doc = json::parse(r.out);
    const auto& hosts = doc.at("hosts").as_array();
    return hosts.size() == 1 && hosts[0].as_object().contains("error");
  }

  LabStatus status_;
  std::string cache_, sweep_dir_;
};

TEST_F(SecurityAgentCache, ACachedAgentWithFlippedBytesIsUploadedAgainNotRun) {
  RunResult first = clean();
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto good = cached();
  ASSERT_EQ(good.size(), 1u) << "one agent deployed";
  const std::string file = cache_ + "/" + good.begin()->first;
  const auto size = fs::file_size(file);
  {
    // Flip bytes in the middle: same size, same name, same mode.
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size / 2));
    char b[64];
    f.read(b, sizeof b);
    for (char& c : b) c = static_cast<char>(~c);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.write(b, sizeof b);
  }
  ASSERT_NE(*sha256_hex_of_file(file), good.begin()->second);
  RunResult second = clean();
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_FALSE(host_failed(second)) << second.out;
  // The file is this build's agent again, same size.
  EXPECT_EQ(cached(), good);
  EXPECT_EQ(fs::file_size(file), size);
}

TEST_F(SecurityAgentCache, AGroupWritableCacheDirIsRefusedAndNoAgentRuns) {
  ASSERT_EQ(clean().exit_code, 0);
  const auto before = cached();
  ASSERT_EQ(chmod(cache_.c_str(), 0770), 0);
  RunResult r = clean();
  struct stat st {};
  ASSERT_EQ(stat(cache_.c_str(), &st), 0);
  chmod(cache_.c_str(), 0700);
  EXPECT_EQ(r.exit_code, kFailed) << r.err;
  EXPECT_TRUE(host_failed(r)) << r.out;
  EXPECT_EQ(st.st_mode & 07777, 0770u);  // refused, not silently "fixed"
  EXPECT_EQ(cached(), before);           // nothing uploaded
  EXPECT_TRUE(lab_pids_matching("chokepoint-agent").empty());
  // Fixed as the error says (chmod go-w), it runs again.
  EXPECT_EQ(clean().exit_code, 0);
}

TEST_F(SecurityAgentCache, ACacheDirThatIsASymlinkIsRefusedAndItsTargetUntouched) {
  ASSERT_EQ(clean().exit_code, 0);
  const std::string aside = cache_ + ".aside";
  const std::string target = lab_dir() + "/server/home/elsewhere";
  fs::remove_all(aside);
  fs::rename(cache_, aside);
  fs::create_directories(target);
  fs::create_directory_symlink(target, cache_);
  RunResult r = clean();
  const bool target_empty = fs::is_empty(target);
  fs::remove(cache_);
  fs::rename(aside, cache_);
  fs::remove_all(target);
  EXPECT_EQ(r.exit_code, kFailed) << r.err;
  EXPECT_TRUE(host_failed(r)) << r.out;
  EXPECT_TRUE(target_empty);
  EXPECT_EQ(clean().exit_code, 0);
}

TEST_F(SecurityAgentCache, ExecOutputPastTheCapIsATypedErrorNamingTheCommand) {
  remote::SshSession ssh({status_.server.alias, status_.ssh_config});
  // Within the cap: all of it.
  EXPECT_EQ(ssh.exec("head -c 1000 /dev/zero", {}, 30, 4096).out.size(), 1000u);
  try {
    ssh.exec("head -c 3000000 /dev/zero", {}, 60);
    FAIL() << "3 MB of output accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRemote);
    EXPECT_NE(std::string(e.what()).find("head -c 3000000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(remote::kMaxExecOutput)), std::string::npos)
        << e.what();
  }
  // The session still works after the cut.
  EXPECT_EQ(ssh.exec("echo ok", {}, 30).out, "ok\n");
}

// The agent's own check, where a host has no sha256sum: a copy of the agent
// with one byte more refuses to serve (exit 3, no sentinel); the original
// passes with its own hash.
TEST(SecurityAgentSelfCheck, AnAlteredAgentRefusesToServe) {
  TempDir t;
  const std::string agent = agent_beside_chokepoint();
  const std::string hash = *sha256_hex_of_file(agent);
  EXPECT_EQ(run_command({agent, "--self-check", hash}).exit_code, 0);
  const std::string copy = t.file("chokepoint-agent");
  fs::copy_file(agent, copy);
  std::ofstream(copy, std::ios::app | std::ios::binary) << '\0';
  chmod(copy.c_str(), 0700);
  RunResult r = run_command({copy, "--self-check", hash, "--serve"}, "", 30);
  EXPECT_EQ(r.exit_code, kExitSelfCheck) << r.err;
  EXPECT_EQ(r.out.find("CHOKEPOINT-AGENT READY"), std::string::npos);
  EXPECT_EQ(run_command({copy, "--self-check", *sha256_hex_of_file(copy)}).exit_code, 0);
}

}  // namespace
}  // namespace cp::itest
