// Which agent binary a remote host gets, by its `uname -s` / `uname -m`.
#include "remote/endpoint.h"
#include "core/testing/scratch_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace cp::remote {
namespace {

namespace fs = std::filesystem;

class ChooseAgentTest : public ::testing::Test {
 protected:
  void SetUp() override { full_ = make("chokepoint-agent", 0755); }
  std::string make(const std::string& name, mode_t mode) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << "binary";
    chmod(p.c_str(), mode);
    return p;
  }
  std::optional<AgentChoice> choose(const std::string& role, const std::string& arch) {
    return choose_agent(role, "Linux", arch, "Linux", "x86_64", full_, dir_.string());
  }
  testing::ScratchDir scratch_{"choose-agent-test"};
  const fs::path dir_ = scratch_.path();
  std::string full_;
};

TEST_F(ChooseAgentTest, ServerEndOnAarch64GetsTheStaticAarch64Agent) {
  const std::string arm = make("chokepoint-agent-server-aarch64", 0755);
  make("chokepoint-agent-server-x86_64", 0755);
  auto c = choose("server", "aarch64");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->path, arm);
  EXPECT_EQ(c->kind, "server");
}

TEST_F(ChooseAgentTest, ServerEndOnThisPlatformGetsTheStaticAgentWhenBuilt) {
  const std::string x86 = make("chokepoint-agent-server-x86_64", 0755);
  auto c = choose("server", "x86_64");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->path, x86);
  EXPECT_EQ(c->kind, "server");
  // `chokepoint clean` needs only server-side requests too.
  EXPECT_EQ(choose("clean", "x86_64")->path, x86);
}

TEST_F(ChooseAgentTest, ServerEndOnThisPlatformFallsBackToTheFullAgent) {
  auto c = choose("server", "x86_64");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->path, full_);
  EXPECT_EQ(c->kind, "full");
}

TEST_F(ChooseAgentTest, ClientEndGetsTheFullAgentNeverTheServerAgent) {
  make("chokepoint-agent-server-x86_64", 0755);
  make("chokepoint-agent-server-aarch64", 0755);
  auto c = choose("client", "x86_64");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->path, full_);
  EXPECT_EQ(c->kind, "full");
  // An aarch64 client would need protocol clients built for aarch64.
  EXPECT_FALSE(choose("client", "aarch64").has_value());
}

TEST_F(ChooseAgentTest, NoAgentFitsAnUnbuiltMachineOrAnotherOs) {
  make("chokepoint-agent-server-aarch64", 0755);
  EXPECT_FALSE(choose("server", "armv7l").has_value());
  EXPECT_FALSE(
      choose_agent("server", "FreeBSD", "aarch64", "Linux", "x86_64", full_, dir_.string()));
  const Error e =
      no_agent_error("server (nas)", "server", "Linux", "armv7l", "Linux", "x86_64", dir_.string());
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_FALSE(e.hint().empty());
}

TEST_F(ChooseAgentTest, ANonExecutableServerAgentIsNotPicked) {
  make("chokepoint-agent-server-aarch64", 0644);
  EXPECT_FALSE(choose("server", "aarch64").has_value());
  EXPECT_TRUE(server_agent_archs(dir_.string()).empty());
}

TEST_F(ChooseAgentTest, ListsTheMachinesItHasServerAgentsFor) {
  make("chokepoint-agent-server-x86_64", 0755);
  make("chokepoint-agent-server-aarch64", 0755);
  EXPECT_EQ(server_agent_archs(dir_.string()), (std::vector<std::string>{"aarch64", "x86_64"}));
}

// The agent cache as `ls -ldn` shows it on the host (GNU and BusyBox print
// alike): only a directory of the SSH user's that no one else may write passes.
TEST(SecurityCacheDir, OnlyTheUsersOwnUnwritableByOthersDirectoryIsFit) {
  const std::string d = "/home/u/.cache/chokepoint";
  auto problem = [&](const std::string& ls, bool link = false) {
    return cache_dir_problem("server (nas)", d, ls, link, "1000");
  };
  EXPECT_FALSE(problem("drwx------    2 1000     1000          4096 Dec  1 20:00 " + d));
  EXPECT_FALSE(problem("drwxr-xr-x 2 1000 1000 4096 Dec  1 20:00 " + d));
  EXPECT_FALSE(problem(""));  // not there yet: the upload makes it 0700
  for (const std::string& bad :
       {"drwxrwx--- 2 1000 1000 4096 Dec  1 20:00 " + d,  // group-writable
        "drwx---rwx 2 1000 1000 4096 Dec  1 20:00 " + d,  // world-writable
        "drwxrwxrwt 2 1000 1000 4096 Dec  1 20:00 " + d,  // sticky does not help
        "drwx------ 2 1001 1000 4096 Dec  1 20:00 " + d,  // another user's
        "-rwx------ 1 1000 1000 4096 Dec  1 20:00 " + d,  // not a directory
        std::string("garbage")}) {
    SCOPED_TRACE(bad);
    const auto e = problem(bad);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->kind(), ErrorKind::kRemote);
    EXPECT_FALSE(e->hint().empty());
  }
  const auto link = problem("", true);
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->kind(), ErrorKind::kRemote);
  // The fix names the directory: chmod for a writable one.
  EXPECT_NE(problem("drwxrwx--- 2 1000 1000 4096 Dec  1 20:00 " + d)->hint().find("chmod go-w"),
            std::string::npos);
}

}  // namespace
}  // namespace cp::remote
