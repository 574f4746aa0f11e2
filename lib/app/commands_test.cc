// The command table: every command answers --help, an unknown one is a usage error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/app.h"
#include "transfer/driver.h"

namespace cp::app {
namespace {

int run(std::vector<std::string> args) {
  args.insert(args.begin(), "chokepoint");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return main(static_cast<int>(argv.size()), argv.data());
}

TEST(Commands, EveryCommandAnswersHelp) {
  for (const char* c :
       {"diagnose", "history", "show", "compare", "export", "clean", "lab", "tune", "drivers"}) {
    EXPECT_EQ(run({c, "--help"}), 0) << c;
  }
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_EQ(run({"version"}), 0);
}

TEST(Commands, DriversPrintsTheDriverTable) {
  testing::internal::CaptureStdout();
  const int rc = run({"drivers"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, transfer::describe_drivers());
}

TEST(Commands, UnknownOrMissingCommandIsAUsageError) {
  EXPECT_EQ(run({}), 2);
  EXPECT_EQ(run({"diagnos"}), 2);
  EXPECT_EQ(run({"frobnicate"}), 2);
  EXPECT_EQ(run({"version", "extra"}), 2);
  EXPECT_EQ(run({"drivers", "extra"}), 2);
}

}  // namespace
}  // namespace cp::app
