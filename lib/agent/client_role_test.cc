// The full agent (with the client role): hello lists its drivers, and a
// transfer moves a file through one (the null driver: no network).
#include "agent/driver_role.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "agent_server/agent.h"
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
