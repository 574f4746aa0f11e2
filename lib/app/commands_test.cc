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

// Every command of the table answers --help and -h (exit 0, some text), and
// the top-level usage lists each of them.
TEST(Commands, EveryCommandOfTheTableAnswersHelp) {
  size_t n = 0;
  testing::internal::CaptureStdout();
  EXPECT_EQ(run({"--help"}), 0);
  const std::string usage = testing::internal::GetCapturedStdout();
  for (const Command& c : command_table()) {
    const std::string name = c.name;
    EXPECT_NE(usage.find("\n  " + name + " "), std::string::npos) << name;
    for (const char* flag : {"--help", "-h"}) {
      testing::internal::CaptureStdout();
      EXPECT_EQ(run({name, flag}), 0) << name << " " << flag;
      EXPECT_FALSE(testing::internal::GetCapturedStdout().empty()) << name << " " << flag;
    }
    ++n;
  }
  EXPECT_GE(n, 10u);  // diagnose ... version
  EXPECT_EQ(run({"version"}), 0);
}

// `drivers` prints every driver of the registry with its URL forms and each
// option with its default.
TEST(Commands, DriversListsEveryDriverWithItsUrlsAndOptions) {
  testing::internal::CaptureStdout();
  const int rc = run({"drivers"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  ASSERT_FALSE(transfer::driver_specs().empty());
  for (const transfer::DriverSpec* d : transfer::driver_specs()) {
    const std::string name(d->name);
    const size_t at = out.find(name + ": " + std::string(d->summary) + "\n");
    ASSERT_NE(at, std::string::npos) << name;
    const size_t end = out.find("\n\n", at);
    const std::string block = out.substr(at, end - at);
    for (std::string_view p : d->url_prefixes) {
      EXPECT_NE(block.find(std::string(p)), std::string::npos) << name << " " << p;
    }
    if (d->options.empty()) EXPECT_NE(block.find("options: none"), std::string::npos) << name;
    for (const transfer::OptionSpec& o : d->options) {
      const size_t line = block.find("\n  " + std::string(o.name) + "  ");
      ASSERT_NE(line, std::string::npos) << name << " " << o.name;
      const std::string text = block.substr(line + 1, block.find('\n', line + 1) - line - 1);
      if (!o.fallback.empty()) {
        EXPECT_NE(text.find("; default " + std::string(o.fallback)), std::string::npos) << text;
      }
    }
  }
}

// A dry run checks the plan and prints what it would measure, connecting to
// nothing and creating no database; a plan that cannot run fails it.
TEST(Commands, DiagnoseDryRunMeasuresAndStoresNothing) {
  const std::string dir = testing::TempDir() + "cp-dry-run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = dir + "/runs.db";
  std::ofstream(dir + "/plan.ini") << "[disk]\nsizes = 10MB\ncount = 2\n[tcp]\ncount = "
                                      "3\n[files]\ncount = 100\norder = random\n";
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
  // disk: 2 hosts x 2 files x write+read, and the server's 2 synchronous writes; tcp: 2 x 3;
  // files: 2 hosts x one pass of 4 phases
  EXPECT_EQ(samples, 2 * 2 * 2 + 2 + 2 * 3 + 2 * 4);
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
