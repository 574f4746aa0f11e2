// The full agent (with the client role): hello lists its drivers, and a
// transfer moves a file through one (the null driver: no network).
#include "agent/driver_role.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "agent_server/agent.h"
#include "agent_server/files_tree.h"
#include "core/error.h"
#include "core/messages_json.h"
#include "link/agent_link.h"

namespace cp::agent {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

TEST(ClientRole, FullAgentListsItsDriversAndMovesAFileThroughOne) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::thread agent([&] { serve(sv[1], sv[1], {"test-build", "0", make_client_role}); });
  const fs::path dir = fs::temp_directory_path() / ("client-role-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    remote::AgentLink link(remote::make_fd_stream(sv[0], sv[0], "test"), "test agent");
    const msg::Hello& hello = link.handshake(10);
    EXPECT_EQ(hello.role, "full");
    const std::vector<std::string>& drivers = hello.drivers;
    for (const char* d : {"null", "ftp", "smb", "afp"}) {
      EXPECT_NE(std::find(drivers.begin(), drivers.end(), d), drivers.end()) << d;
    }
    json::object p = link.call("prepare", {{"dirs", json::array{dir.string()}}}, 10);
    const std::string run_dir = msg::decode<msg::PrepareResult>(p, "prepare").dirs.at(dir.string());
    json::object r = link.call("transfer",
                               {{"dir", dir.string()},
                                {"op", "read"},
                                {"name", "got.dat"},
                                {"remote", "x.dat"},
                                {"size", 1u << 20},
                                {"share", {{"name", "s"}, {"url", "null:"}, {"driver", "null"}}}},
                               30);
    EXPECT_EQ(msg::decode<msg::TransferResult>(r, "transfer").bytes, 1u << 20);
    EXPECT_EQ(fs::file_size(run_dir + "/got.dat"), 1u << 20);
    link.call("cleanup", {}, 10);
    EXPECT_FALSE(fs::exists(run_dir));
  }
  agent.join();
  close(sv[1]);
  fs::remove_all(dir);
}

// files_share over the agent link: the path driver on a local directory with
// four operations in flight (four sessions), every phase over every file, the
// client's CPU per phase, and nothing left in the share; a request out of
// range is refused before anything is made.
TEST(ClientRole, FilesShareRunsAPassOverAShareAndLeavesNothing) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::thread agent([&] { serve(sv[1], sv[1], {"test-build", "0", make_client_role}); });
  const fs::path dir = fs::temp_directory_path() / ("files-share-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    remote::AgentLink link(remote::make_fd_stream(sv[0], sv[0], "test"), "test agent");
    link.handshake(10);
    msg::FilesShareRequest q;
    q.share = {"p", dir.string(), "path", "", "", {}};
    q.root = "files";
    q.count = 60;
    q.size = 100;
    q.dirs = 6;
    q.order = "random";
    q.seed = 3;
    q.in_flight = 4;
    const auto r = msg::decode<msg::FilesShareResult>(link.call("files_share", msg::to_json(q), 60),
                                                      "files_share");
    ASSERT_EQ(r.phases.size(), 4u);
    EXPECT_EQ(r.in_flight, 4u);
    EXPECT_EQ(r.created, 60u);
    const char* names[] = {"create", "stat", "read", "delete"};
    for (size_t i = 0; i < 4; ++i) {
      SCOPED_TRACE(names[i]);
      EXPECT_EQ(files::phase_name(r.phases[i].stats.phase), names[i]);
      EXPECT_EQ(r.phases[i].stats.ops, 60u);
      EXPECT_TRUE(r.phases[i].stats.error.empty()) << r.phases[i].stats.error;
      EXPECT_LE(r.phases[i].stats.latency.median_us, r.phases[i].stats.latency.p99_us);
      EXPECT_LE(r.phases[i].stats.latency.p99_us, r.phases[i].stats.latency.max_us);
      EXPECT_GE(r.phases[i].stats.in_flight_max, 1u);
      EXPECT_LE(r.phases[i].stats.in_flight_max, 4u);
      EXPECT_GT(r.phases[i].cpu.seconds, 0);
    }
    EXPECT_EQ(r.phases[2].stats.bytes, 6000u);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 0);

    q.count = 0;
    EXPECT_THROW(link.call("files_share", msg::to_json(q), 60), Error);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 0);
    link.call("cleanup", {}, 10);
  }
  agent.join();
  close(sv[1]);
  fs::remove_all(dir);
}

// A tree the server agent laid out (files_tree layout): the pass has no
// create phase, stats, reads and deletes every file, and removes the tree.
TEST(ClientRole, FilesShareOverATreeTheServerLaidOut) {
  const fs::path dir = fs::temp_directory_path() / ("files-laid-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  CancelToken cancel;
  const files::Tree tree{.count = 30, .size = 700, .dirs = 3};
  ASSERT_EQ(lay_out_tree({fd, "laid", (dir / "laid").string()}, tree, cancel).files, 30u);
  auto role = make_client_role();
  msg::FilesShareRequest q;
  q.share = {"p", dir.string(), "path", "", "", {}};
  q.root = "laid";
  q.count = 30;
  q.size = 700;
  q.dirs = 3;
  q.laid_out = true;
  const msg::FilesShareResult r = role->files_share(q, {cancel, {}, {}});
  ASSERT_EQ(r.phases.size(), 4u);
  EXPECT_EQ(r.phases[0].stats.ops, 0u);
  EXPECT_FALSE(r.phases[0].stats.skipped.empty());
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(r.phases[i].stats.ops, 30u) << i;
  EXPECT_EQ(r.phases[2].stats.bytes, 30u * 700);
  EXPECT_FALSE(fs::exists(dir / "laid"));
  ::close(fd);
  fs::remove_all(dir);
}

// The pipeline's requests, a phase each: every answer holds its own phase
// with the client's CPU over it, the tree stays between them, delete removes
// it; an unknown phase or more existing files than the count is refused.
TEST(ClientRole, FilesShareOnePhasePerRequestAnswersThatPhaseAndKeepsTheTree) {
  const fs::path dir = fs::temp_directory_path() / ("files-phase-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  CancelToken cancel;
  auto role = make_client_role();
  msg::FilesShareRequest q;
  q.share = {"p", dir.string(), "path", "", "", {}};
  q.root = "tree";
  q.count = 25;
  q.size = 300;
  q.dirs = 5;
  q.order = "random";
  q.seed = 11;
  for (const char* phase : {"create", "stat", "read", "delete"}) {
    SCOPED_TRACE(phase);
    q.phase = phase;
    const msg::FilesShareResult r = role->files_share(q, {cancel, {}, {}});
    ASSERT_EQ(r.phases.size(), 1u);
    EXPECT_EQ(files::phase_name(r.phases[0].stats.phase), phase);
    EXPECT_EQ(r.phases[0].stats.ops, 25u);
    EXPECT_GT(r.phases[0].cpu.seconds, 0);
    if (q.phase == "create") q.existing = r.created;
    EXPECT_EQ(r.kept, q.phase != "delete");
    EXPECT_EQ(fs::exists(dir / "tree"), q.phase != "delete");
  }
  q.phase = "rename";
  EXPECT_THROW(role->files_share(q, {cancel, {}, {}}), Error);
  q.phase = "stat";
  q.existing = 26;
  EXPECT_THROW(role->files_share(q, {cancel, {}, {}}), Error);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 0);
  fs::remove_all(dir);
}

// Whether a sweep cell can run is the driver table's word: a random read
// through FTP (no random_access) is unsupported before any connection is
// tried (port 1 on loopback is closed: a connection would fail otherwise).
TEST(ClientRole, ASweepPatternTheDriverTableLacksIsUnsupportedBeforeConnecting) {
  auto role = make_client_role();
  CancelToken cancel;
  msg::SizeScanRequest req;
  req.share = {"s", "ftp://127.0.0.1:1/x", "ftp", "", "", {}};
  req.remote = "f.dat";
  req.request = 4096;
  req.bytes = 1u << 20;
  req.file_size = 4u << 20;
  for (const char* pattern : {"randread", "randwrite"}) {
    SCOPED_TRACE(pattern);
    req.pattern = pattern;
    try {
      role->size_scan(req, {cancel, {}, {}});
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    }
  }
  // A sequential read is not refused by the table: it tries the server.
  req.pattern = "seqread";
  try {
    role->size_scan(req, {cancel, {}, {}});
    ADD_FAILURE() << "port 1 answered";
  } catch (const Error& e) {
    EXPECT_NE(e.kind(), ErrorKind::kUnsupported);
  }
}

}  // namespace
}  // namespace cp::agent
