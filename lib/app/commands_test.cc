// The command table: every command answers --help, an unknown one is a usage error.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/app.h"
#include "app/command_table.h"
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
  size_t n = 0;
  for (const Command& c : command_table()) {
    testing::internal::CaptureStdout();
    EXPECT_EQ(run({c.name, "--help"}), 0) << c.name;
    EXPECT_EQ(run({c.name, "-h"}), 0) << c.name;
    EXPECT_FALSE(testing::internal::GetCapturedStdout().empty()) << c.name;
    ++n;
  }
  EXPECT_GE(n, 10u);  // diagnose ... version
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

// A dry run checks the plan and prints what it would measure, connecting to
// nothing and creating no database; a plan that cannot run fails it.
TEST(Commands, DiagnoseDryRunMeasuresAndStoresNothing) {
  const std::string dir = testing::TempDir() + "cp-dry-run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = dir + "/runs.db";
  std::ofstream(dir + "/plan.ini") << "[disk]\nsizes = 10MB\ncount = 2\n[tcp]\ncount = 3\n";
  testing::internal::CaptureStdout();
  const int rc = run({"diagnose", "--server", "nowhere.invalid", "--client", "local", "--plan",
                      dir + "/plan.ini", "--db", db, "--dry-run", "--json"});
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  EXPECT_FALSE(std::filesystem::exists(db));
  const boost::json::object doc = boost::json::parse(out).as_object();
  EXPECT_EQ(doc.at("server").as_string(), "nowhere.invalid");
  int samples = 0;
  for (const auto& s : doc.at("stages").as_array()) {
    samples += static_cast<int>(s.at("samples").to_number<int64_t>());
  }
  EXPECT_EQ(samples, 2 * 2 * 2 + 2 * 3);  // disk: 2 hosts x 2 files x write+read; tcp: 2 x 3
  std::ofstream(dir + "/bad.ini") << "[disk]\ncount = 0\n";
  EXPECT_EQ(run({"diagnose", "--server", "nowhere.invalid", "--client", "local", "--plan",
                 dir + "/bad.ini", "--db", db, "--dry-run"}),
            1);
  EXPECT_FALSE(std::filesystem::exists(db));
  std::filesystem::remove_all(dir);
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
