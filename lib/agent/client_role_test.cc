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
#include <optional>
#include <thread>

#include "agent_server/agent.h"
#include "agent_server/files_tree.h"
#include "core/error.h"
#include "core/messages_json.h"
#include "core/testing/scratch_dir.h"
#include "link/agent_link.h"

namespace cp::agent {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// A full agent serving one end of a socket pair on its own thread, and the
// link to it on the other; the agent ends when the link closes.
struct AgentOverSocket {
  int sv[2] = {-1, -1};
  std::thread agent;
  std::optional<remote::AgentLink> link;

  AgentOverSocket() {
    CP_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    agent = std::thread([this] { serve(sv[1], sv[1], {"test-build", "0", make_client_role}); });
    link.emplace(remote::make_fd_stream(sv[0], sv[0], "test"), "test agent");
  }
  ~AgentOverSocket() {
    link.reset();
    agent.join();
    close(sv[1]);
  }
};

// Each test's scratch directory.
class ClientRole : public ::testing::Test {
 protected:
  // A small-file pass over the path driver on dir_, in `root`.
  msg::FilesShareRequest files_request(const std::string& root, uint64_t count, uint64_t size,
                                       uint64_t dirs) const {
    msg::FilesShareRequest q;
    q.share = {"p", dir_.string(), "path", "", "", {}};
    q.root = root;
    q.count = count;
    q.size = size;
    q.dirs = dirs;
    return q;
  }

  const cp::testing::ScratchDir scratch_{"client-role-test"};
  const fs::path& dir_ = scratch_.path();
};

TEST_F(ClientRole, FullAgentListsItsDriversAndMovesAFileThroughOne) {
  AgentOverSocket a;
  remote::AgentLink& link = *a.link;
  const msg::Hello& hello = link.handshake(10);
  EXPECT_EQ(hello.role, "full");
  const std::vector<std::string>& drivers = hello.drivers;
  for (const char* d : {"null", "ftp", "smb", "afp"}) {
    EXPECT_NE(std::find(drivers.begin(), drivers.end(), d), drivers.end()) << d;
  }
  json::object p = link.call("prepare", {{"dirs", json::array{dir_.string()}}}, 10);
  const std::string run_dir = msg::decode<msg::PrepareResult>(p, "prepare").dirs.at(dir_.string());
  json::object r = link.call("transfer",
                             {{"dir", dir_.string()},
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

// files_share over the agent link: the path driver on a local directory with
// four operations in flight (four sessions), every phase over every file, the
// client's CPU per phase, and nothing left in the share; a request out of
// range is refused before anything is made.
TEST_F(ClientRole, FilesShareRunsAPassOverAShareAndLeavesNothing) {
  AgentOverSocket a;
  remote::AgentLink& link = *a.link;
  link.handshake(10);
  msg::FilesShareRequest q = files_request("files", 60, 100, 6);
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
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 0);

  q.count = 0;
  EXPECT_THROW(link.call("files_share", msg::to_json(q), 60), Error);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 0);
  link.call("cleanup", {}, 10);
}

// A tree the server agent laid out (files_tree layout): the pass has no
// create phase, stats, reads and deletes every file, and removes the tree.
TEST_F(ClientRole, FilesShareOverATreeTheServerLaidOut) {
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  CancelToken cancel;
  const files::Tree tree{.count = 30, .size = 700, .dirs = 3};
  ASSERT_EQ(lay_out_tree({fd, "laid", (dir_ / "laid").string()}, tree, cancel).files, 30u);
  auto role = make_client_role();
  msg::FilesShareRequest q = files_request("laid", 30, 700, 3);
  q.laid_out = true;
  const msg::FilesShareResult r = role->files_share(q, {cancel, {}, {}});
  ASSERT_EQ(r.phases.size(), 4u);
  EXPECT_EQ(r.phases[0].stats.ops, 0u);
  EXPECT_FALSE(r.phases[0].stats.skipped.empty());
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(r.phases[i].stats.ops, 30u) << i;
  EXPECT_EQ(r.phases[2].stats.bytes, 30u * 700);
  EXPECT_FALSE(fs::exists(dir_ / "laid"));
  ::close(fd);
}

// The pipeline's requests, a phase each: every answer holds its own phase
// with the client's CPU over it, the tree stays between them, delete removes
// it; an unknown phase or more existing files than the count is refused.
TEST_F(ClientRole, FilesShareOnePhasePerRequestAnswersThatPhaseAndKeepsTheTree) {
  CancelToken cancel;
  auto role = make_client_role();
  msg::FilesShareRequest q = files_request("tree", 25, 300, 5);
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
    EXPECT_EQ(fs::exists(dir_ / "tree"), q.phase != "delete");
  }
  q.phase = "rename";
  EXPECT_THROW(role->files_share(q, {cancel, {}, {}}), Error);
  q.phase = "stat";
  q.existing = 26;
  EXPECT_THROW(role->files_share(q, {cancel, {}, {}}), Error);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 0);
}

// Whether a sweep cell can run is the driver table's word: a random read
// through FTP (no random_access) is unsupported before any connection is
// tried (port 1 on loopback is closed: a connection would fail otherwise).
TEST_F(ClientRole, ASweepPatternTheDriverTableLacksIsUnsupportedBeforeConnecting) {
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
