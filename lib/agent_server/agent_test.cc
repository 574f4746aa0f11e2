// The agent's request loop, driven through the orchestrator's link over a
// socketpair (agent::serve runs in this process).
#include "agent_server/agent.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/process.h"
#include "core/testing/scratch_dir.h"
#include "core/wire.h"
#include "link/agent_link.h"

namespace cp::agent {
using remote::AgentLink;
using remote::make_fd_stream;
namespace json = boost::json;
namespace {

namespace fs = std::filesystem;

// The run dir a prepare answer names for `base`, read through its codec.
std::string run_dir_of(const json::object& prepared, const std::string& base) {
  return msg::decode<msg::PrepareResult>(prepared, "prepare").dirs.at(base);
}

class AgentLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv_), 0);
    agent_ = std::thread([this] { rc_ = serve(sv_[1], sv_[1], {"test-build", "0", {}}); });
    link_ = std::make_unique<AgentLink>(make_fd_stream(sv_[0], sv_[0], "test"), "test agent");
  }
  void TearDown() override {
    link_.reset();  // closes our end: the agent sees EOF
    if (agent_.joinable()) agent_.join();
    close(sv_[1]);
  }
  std::vector<fs::path> entries() {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path());
    return out;
  }

  int sv_[2];
  std::thread agent_;
  int rc_ = -1;
  std::unique_ptr<AgentLink> link_;
  testing::ScratchDir scratch_{"agent-link-test"};
  const fs::path dir_ = scratch_.path();
};

TEST_F(AgentLinkTest, HandshakeAndHello) {
  const msg::Hello& hello = link_->handshake(10);
  EXPECT_EQ(hello.build, "test-build");
  EXPECT_EQ(hello.proto, wire::kProtocolVersion);
  EXPECT_EQ(hello.pid, getpid());
}

// The agent without a client role is the static server agent: it says so in
// hello and refuses the protocol clients' requests with a typed error.
TEST_F(AgentLinkTest, ServerAgentSaysItsRoleAndRefusesTransfers) {
  const msg::Hello& hello = link_->handshake(10);
  EXPECT_EQ(hello.role, "server");
  EXPECT_TRUE(hello.drivers.empty());
  link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  const json::object share{{"name", "s"}, {"url", "null:"}, {"driver", "null"}};
  for (const char* type : {"transfer", "sweep"}) {
    try {
      link_->call(type,
                  {{"dir", dir_.string()},
                   {"op", "read"},
                   {"name", "a.dat"},
                   {"remote", "a.dat"},
                   {"share", share}},
                  10);
      ADD_FAILURE() << type << " was served";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << type;
      EXPECT_FALSE(e.hint().empty());
    }
  }
  // Nothing was made for the refused requests, and the agent keeps serving.
  EXPECT_NO_THROW(link_->call("close_shares", {}, 10));
  EXPECT_NO_THROW(link_->call("stats", {}, 10));
}

TEST_F(AgentLinkTest, DiskWriteReadInsideItsOwnRunDir) {
  link_->handshake(10);
  json::object p = link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  const std::string run_dir = run_dir_of(p, dir_.string());
  EXPECT_EQ(fs::path(run_dir).parent_path(), dir_);
  ASSERT_TRUE(fs::is_directory(run_dir));

  json::object w = link_->call(
      "disk", {{"dir", dir_.string()}, {"op", "write"}, {"name", "a.dat"}, {"size", 3u << 20}}, 30);
  const auto written = msg::decode<msg::DiskResult>(w, "disk");
  EXPECT_EQ(written.bytes, 3u << 20);
  EXPECT_GT(written.seconds, 0);
  EXPECT_FALSE(written.cpu.core_busy_pct.empty());
  EXPECT_EQ(fs::file_size(run_dir + "/a.dat"), 3u << 20);

  json::object r = link_->call(
      "disk", {{"dir", dir_.string()}, {"op", "read"}, {"name", "a.dat"}, {"delete_after", true}},
      30);
  const auto read = msg::decode<msg::DiskResult>(r, "disk");
  EXPECT_EQ(read.bytes, 3u << 20);
  EXPECT_FALSE(fs::exists(run_dir + "/a.dat"));
  // The read says whether a cache may have served it, and why exactly when so.
  EXPECT_EQ(read.cache_possible, !read.direct);
  EXPECT_EQ(read.cache_reason.empty(), !read.cache_possible);

  // A file laid out and evicted for a protocol server: on this filesystem (not
  // ZFS) nothing keeps it cached; without `evict` nothing is claimed.
  json::object m = link_->call(
      "make_file", {{"dir", dir_.string()}, {"name", "m.dat"}, {"size", 1u << 20}, {"evict", true}},
      30);
  // (msg::FileResult sends cache_possible only when true.)
  const auto made = msg::decode<msg::FileResult>(m, "make_file");
  EXPECT_FALSE(made.cache_possible);
  EXPECT_EQ(made.cache_reason, "");
  json::object k =
      link_->call("make_file", {{"dir", dir_.string()}, {"name", "k.dat"}, {"size", 4096}}, 30);
  EXPECT_FALSE(k.contains("cache_possible"));

  link_->call("cleanup", {}, 10);
  EXPECT_FALSE(fs::exists(run_dir));
}

TEST_F(AgentLinkTest, RefusesNamesOutsideItsRunDir) {
  link_->handshake(10);
  link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  try {
    link_->call("disk",
                {{"dir", dir_.string()}, {"op", "write"}, {"name", "../escape"}, {"size", 4096}},
                10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer);
    EXPECT_NE(std::string(e.what()).find("field 'name'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_.parent_path() / "escape"));
  // Unprepared directory.
  EXPECT_THROW(link_->call("disk", {{"dir", "/tmp"}, {"op", "read"}, {"name", "x"}}, 10), Error);
}

TEST_F(AgentLinkTest, ErrorsComeBackTypedAndTheAgentKeepsServing) {
  link_->handshake(10);
  try {
    link_->call("frobnicate", {}, 10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown message type 'frobnicate'"), std::string::npos);
    EXPECT_FALSE(e.hint().empty());
  }
  try {
    link_->call("prepare", {{"dirs", 5}}, 10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("field 'dirs' must be an array"), std::string::npos);
  }
  link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  try {
    link_->call("check_space", {{"dir", dir_.string()}, {"bytes", uint64_t(1) << 60}}, 10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("under 10 % free"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(link_->call("stats", {}, 10));
}

// Requests are decoded through their codecs (core/messages_json.h): a field
// missing or of the wrong type is the peer's error, and the agent goes on.
TEST_F(AgentLinkTest, ARequestItsCodecRefusesIsAPeerErrorAndTheAgentKeepsServing) {
  link_->handshake(10);
  link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  for (json::object bad :
       {json::object{{"dir", dir_.string()}, {"name", "a.dat"}},  // no op
        json::object{
            {"dir", dir_.string()}, {"op", "write"}, {"name", "a.dat"}, {"size", "big"}}}) {
    try {
      link_->call("disk", bad, 10);
      ADD_FAILURE() << "accepted " << json::serialize(bad);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kPeer) << e.what();
    }
  }
  try {
    link_->call("tcp_run", {{"host", "127.0.0.1"}, {"port", 1}, {"token", "t"}}, 10);
    ADD_FAILURE() << "tcp_run without mode and seconds accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPeer) << e.what();
  }
  EXPECT_TRUE(entries().size() == 1u);  // only the run dir: nothing was written
  EXPECT_NO_THROW(link_->call("stats", {}, 10));
}

TEST_F(AgentLinkTest, CancelStopsAWriteAndRemovesTheFile) {
  // What is checked is the agent's answer to a cancel, not how fast it comes:
  // on a loaded disk one O_DIRECT block may take longer than the 0.5 s a run
  // waits after Ctrl-C (that abandonment has its own test in agent_link_test).
  remote::DeadlinePolicy patient;
  patient.cancel_grace = 30;
  link_->set_deadline_policy(patient);
  link_->handshake(10);
  json::object p = link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  const std::string run_dir = run_dir_of(p, dir_.string());
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.cancel();
  });
  try {
    // 64 GiB: far more than can be written in 0.3 s, and the space check is
    // not asked for; the cancel lands long before the disk fills.
    link_->call("disk",
                {{"dir", dir_.string()},
                 {"op", "write"},
                 {"name", "big.dat"},
                 {"size", uint64_t(64) << 30}},
                30, {}, &cancel);
    ADD_FAILURE() << "the write was not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled) << e.what();
  }
  canceller.join();
  EXPECT_FALSE(fs::exists(run_dir + "/big.dat"));
  EXPECT_NO_THROW(link_->call("stats", {}, 10));  // still serving
}

TEST_F(AgentLinkTest, ChannelCloseCleansUp) {
  link_->handshake(10);
  json::object p = link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  const std::string run_dir = run_dir_of(p, dir_.string());
  link_->call("disk", {{"dir", dir_.string()}, {"op", "write"}, {"name", "f"}, {"size", 4096}}, 10);
  link_.reset();
  agent_.join();
  EXPECT_EQ(rc_, 0);
  EXPECT_FALSE(fs::exists(run_dir));
}

TEST_F(AgentLinkTest, RefusesANameHoldingNul) {
  link_->handshake(10);
  link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  for (const char* type : {"remove_file", "file_info", "make_file"}) {
    try {
      link_->call(type, {{"dir", dir_.string()}, {"name", std::string("..\0", 3)}, {"size", 4096}},
                  10);
      ADD_FAILURE() << type << " accepted a name holding NUL";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kPeer) << type << ": " << e.what();
    }
  }
}

TEST_F(AgentLinkTest, HeartbeatsKeepASlowRequestAlive) {
  link_->handshake(10);
  // Silence limit 2.5 s; tcp_result waits 4 s for a client that never comes
  // and then fails with its own error: heartbeats must cover the wait.
  link_->set_silence_limit(2.5);
  link_->call("tcp_listen", {{"bind", "127.0.0.1"}}, 10);
  try {
    link_->call("tcp_result", {{"token", "never"}, {"timeout", 4}}, 10);
    ADD_FAILURE() << "tcp_result returned without a client";
  } catch (const Error& e) {
    EXPECT_NE(e.kind(), ErrorKind::kRemote) << e.what();  // the agent's error, not silence
  }
  EXPECT_FALSE(link_->abandoned());
  EXPECT_LT(link_->last_call_max_silence(), 2.5);
}

// A run directory whose owner record names `pid` started at `ticks`.
void make_run_dir(const fs::path& dir, int64_t pid, int64_t ticks) {
  fs::create_directories(dir);
  std::error_code ec;
  const std::string ns = fs::read_symlink("/proc/self/ns/pid", ec).string();
  std::ofstream(dir / ".chokepoint-owner") << json::serialize(json::object{{"pid", pid},
                                                                           {"start_ticks", ticks},
                                                                           {"boot_id", boot_id()},
                                                                           {"host", host_name()},
                                                                           {"pid_ns", ns},
                                                                           {"run", 7}});
  std::ofstream(dir / "server-100000000-1.dat") << "data";
}

TEST_F(AgentLinkTest, PrepareSweepsRunDirsOfGoneAgentsOnly) {
  // An agent that ran and ended: its pid is free (or reused with another start time).
  Child gone({"true"});
  ASSERT_EQ(gone.wait(10), 0);
  make_run_dir(dir_ / "chokepoint-run-gone01", gone.pid(), 12345);
  // A live one: this process.
  make_run_dir(dir_ / "chokepoint-run-live01", getpid(), process_start_ticks(getpid()).value());
  // Unowned: an older chokepoint's, untouched for 2 h, and a fresh one.
  fs::create_directories(dir_ / "chokepoint-run-old001");
  fs::last_write_time(dir_ / "chokepoint-run-old001",
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::create_directories(dir_ / "chokepoint-run-new001");
  fs::create_directories(dir_ / "not-ours");

  link_->handshake(10);
  json::object p = link_->call("prepare", {{"dirs", json::array{dir_.string()}}, {"run", 8}}, 10);
  std::set<std::string> swept;
  for (const auto& v : msg::decode<msg::PrepareResult>(p, "prepare").swept) {
    swept.insert(fs::path(v.path).filename());
  }
  EXPECT_EQ(swept, (std::set<std::string>{"chokepoint-run-gone01", "chokepoint-run-old001"}));
  EXPECT_FALSE(fs::exists(dir_ / "chokepoint-run-gone01"));
  EXPECT_FALSE(fs::exists(dir_ / "chokepoint-run-old001"));
  EXPECT_TRUE(fs::exists(dir_ / "chokepoint-run-live01"));
  EXPECT_TRUE(fs::exists(dir_ / "chokepoint-run-new001"));
  EXPECT_TRUE(fs::exists(dir_ / "not-ours"));
  // Its own run dir carries its owner record: this (in-process) agent's pid and the run.
  const std::string mine = run_dir_of(p, dir_.string());
  std::ifstream in(mine + "/.chokepoint-owner");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto owner = msg::read_stored<msg::OwnerRecord>(ss.str());
  EXPECT_EQ(owner.pid, getpid());
  EXPECT_EQ(owner.run, 8);
  // A second agent's sweep keeps this live run's directory.
  json::object s = link_->call("sweep_orphans", {{"dirs", json::array{dir_.string()}}}, 10);
  EXPECT_TRUE(msg::decode<msg::CleanOrphansResult>(s, "sweep_orphans").removed.empty());
  EXPECT_TRUE(fs::exists(mine));
}

// The disk stage's disk_dir may be a share's directory too (the server's
// default when a disk share exists): the share's prepare opens the same run
// directory to the protocol server's user.
TEST_F(AgentLinkTest, PrepareOpensAnAlreadyPreparedDirToAShare) {
  link_->handshake(10);
  json::object p = link_->call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  const std::string mine = run_dir_of(p, dir_.string());
  EXPECT_EQ(fs::status(mine).permissions() & fs::perms::others_all, fs::perms::none);
  json::object q =
      link_->call("prepare", {{"dirs", json::array{dir_.string()}}, {"shared", true}}, 10);
  EXPECT_EQ(run_dir_of(q, dir_.string()), mine);
  EXPECT_EQ(fs::status(mine).permissions() & fs::perms::others_all, fs::perms::others_all);
}

TEST_F(AgentLinkTest, MalformedFrameIsRejectedNamingTheField) {
  link_->handshake(10);
  // A frame whose id is a string: the agent answers an error and stops.
  std::string body = R"({"v":1,"type":"hello","id":"x"})";
  std::string frame = {0, 0, 0, static_cast<char>(body.size())};
  frame += body;
  ASSERT_EQ(write(sv_[0], frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  agent_.join();
  EXPECT_EQ(rc_, 2);
  char buf[4096];
  ssize_t n = read(sv_[0], buf, sizeof buf);
  ASSERT_GT(n, 4);
  std::string reply(buf + 4, static_cast<size_t>(n - 4));
  EXPECT_NE(reply.find("field 'id' must be a non-negative integer"), std::string::npos) << reply;
}

}  // namespace
}  // namespace cp::agent
