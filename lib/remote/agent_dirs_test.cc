// Where the orchestrator finds its agents: PREFIX/libexec/chokepoint beside an
// installed PREFIX/bin/chokepoint, then its own directory, then
// $CHOKEPOINT_AGENT_DIR; each server agent from the first directory that has it.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/testing/scratch_dir.h"
#include "core/text.h"
#include "remote/endpoint.h"

namespace cp::remote {
namespace {

namespace fs = std::filesystem;

class AgentDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "first");
    fs::create_directories(root_ / "second");
  }
  void TearDown() override { unsetenv("CHOKEPOINT_AGENT_DIR"); }
  std::string make(const std::string& dir, const std::string& name) {
    const fs::path p = root_ / dir / name;
    std::ofstream(p) << "binary";
    chmod(p.c_str(), 0755);
    return p.string();
  }
  std::string dirs() const {
    return (root_ / "first").string() + ":" + (root_ / "second").string();
  }
  testing::ScratchDir scratch_{"agent-dirs-test"};
  const fs::path root_ = scratch_.path();
};

TEST_F(AgentDirsTest, SearchOrderIsLibexecThenBesideThenTheEnvironment) {
  setenv("CHOKEPOINT_AGENT_DIR", (root_ / "second").c_str(), 1);
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const std::string dirs = server_agent_dir();
  std::vector<std::string> got;
  for (std::string_view d : split(dirs, ':')) got.emplace_back(d);
  const std::vector<std::string> want{
      (self.parent_path().parent_path() / "libexec" / "chokepoint").string(),
      self.parent_path().string(), (root_ / "second").string()};
  EXPECT_EQ(got, want);
}

TEST_F(AgentDirsTest, EachServerAgentComesFromTheFirstDirectoryHoldingIt) {
  const std::string first_x86 = make("first", "chokepoint-agent-server-x86_64");
  make("second", "chokepoint-agent-server-x86_64");
  const std::string second_arm = make("second", "chokepoint-agent-server-aarch64");
  const std::string full = make("first", "chokepoint-agent");
  EXPECT_EQ(server_agent_archs(dirs()), (std::vector<std::string>{"aarch64", "x86_64"}));
  auto x86 = choose_agent("server", "Linux", "x86_64", "Linux", "x86_64", full, dirs());
  ASSERT_TRUE(x86.has_value());
  EXPECT_EQ(x86->path, first_x86);
  auto arm = choose_agent("server", "Linux", "aarch64", "Linux", "x86_64", full, dirs());
  ASSERT_TRUE(arm.has_value());
  EXPECT_EQ(arm->path, second_arm);
  EXPECT_EQ(arm->kind, "server");
}

}  // namespace
}  // namespace cp::remote
