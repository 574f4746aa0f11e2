#include "app/report_commands.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/test_store.h"
#include "core/error.h"
#include "core/testing/scratch_dir.h"
#include "report/test_runs.h"
#include "store/store.h"

namespace cp::app {
namespace {

namespace fs = std::filesystem;
using testing::save_run;

class ReportCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_ + "/chokepoint.db";
    Store store(db_);
    before_ = save_run(store, report::testing::seed_run());
    after_ = save_run(store, report::testing::tuned_run());
    // A run that measured only the server disk: nothing in common with TCP-only runs.
    disk_only_ = save_run(store, report::testing::SeedRun(0, "disk-only")
                                     .stage("disk", "client", "read", 10'000'000, {150, 151, 149})
                                     .build());
    tcp_only_ = save_run(store, report::testing::SeedRun(0, "tcp-only")
                                    .stage("tcp", "server->client", "send", 0, {117, 116, 118})
                                    .build());
  }

  std::string run(int (*cmd)(const std::vector<std::string>&, std::ostream&),
                  std::vector<std::string> args) {
    args.push_back("--db");
    args.push_back(db_);
    std::ostringstream out;
    EXPECT_EQ(cmd(args, out), 0);
    return out.str();
  }

  static std::string read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  const cp::testing::ScratchDir scratch_{"cp-app"};
  const std::string dir_ = scratch_.path().string();
  std::string db_;
  int64_t before_ = 0, after_ = 0, disk_only_ = 0, tcp_only_ = 0;
};

TEST_F(ReportCommands, CompareByLabel) {
  std::string t = run(compare_command, {"before", "after"});
  EXPECT_NE(t.find(fmt::format("A = run {} \"before\"", before_)), std::string::npos) << t;
  EXPECT_NE(t.find("+79.8 % faster (p=0.008, n=5+5)"), std::string::npos) << t;
  EXPECT_NE(t.find("samba.global.smb2 max read"), std::string::npos);
  EXPECT_EQ(t.find("\033["), std::string::npos);  // not a TTY
}

TEST_F(ReportCommands, CompareJsonAndHtml) {
  const std::string html = dir_ + "/compare.html";
  auto doc =
      boost::json::parse(run(compare_command, {std::to_string(before_), std::to_string(after_),
                                               "--json", "--html", html}))
          .as_object();
  EXPECT_EQ(doc.at("a").at("id").as_int64(), before_);
  EXPECT_EQ(doc.at("b").at("id").as_int64(), after_);
  // Sample ids are the stored ones.
  const auto& row = doc.at("rows").as_array()[0].as_object();
  EXPECT_GT(row.at("a").at("sample_ids").as_array()[0].as_int64(), 0);
  std::string page = read(html);
  EXPECT_NE(page.find("<svg class=\"chart compare\""), std::string::npos);
  EXPECT_FALSE(fs::exists(html + ".tmp." + std::to_string(getpid())));
}

TEST_F(ReportCommands, CompareRefusesDisjointRuns) {
  std::ostringstream out;
  try {
    compare_command({"disk-only", "tcp-only", "--db", db_}, out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("measured nothing in common: only in run " +
                                         std::to_string(disk_only_) +
                                         ": client disk read, 10 MB files; only in run " +
                                         std::to_string(tcp_only_) + ": TCP server -> client"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ReportCommands, CompareNeedsTwoRuns) {
  std::ostringstream out;
  try {
    compare_command({"before", "--db", db_}, out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_STREQ(e.what(), "compare needs two runs, got 1");
  }
  EXPECT_THROW(compare_command({"before", "nosuchlabel", "--db", db_}, out), Error);
}

TEST_F(ReportCommands, ExportCsvAndJson) {
  std::string csv = run(export_command, {"before"});
  EXPECT_EQ(csv.rfind("run_id,run_label,stage_id,layer,where,", 0), 0u) << csv.substr(0, 200);
  size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, 1u + 4 * 4 + 7 * 5);  // header, 4 disk stages of 4, 7 others of 5
  const std::string file = dir_ + "/out.json";
  EXPECT_EQ(run(export_command, {"tcp-only", "--format", "json", "--output", file}), "");
  auto doc = boost::json::parse(read(file)).as_object();
  EXPECT_EQ(doc.at("run").at("label").as_string(), "tcp-only");
  EXPECT_EQ(doc.at("samples").as_array().size(), 3u);
}

TEST_F(ReportCommands, ExportRejectsAnUnknownFormat) {
  std::ostringstream out;
  try {
    export_command({"before", "--format", "xml", "--db", db_}, out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(out.str().empty());
  }
}

TEST_F(ReportCommands, ExportOpenMetricsEndsWithEofAndTypesEveryFamily) {
  std::ostringstream out;
  ASSERT_EQ(export_command({"before", "--format", "openmetrics", "--db", db_}, out), 0);
  const std::string text = out.str();
  ASSERT_GE(text.size(), 6u);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
  size_t help = 0, type = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    help += line.rfind("# HELP ", 0) == 0;
    type += line.rfind("# TYPE ", 0) == 0;
  }
  EXPECT_GT(type, 0u);
  EXPECT_EQ(help, type);
}

TEST_F(ReportCommands, ShowHtmlFile) {
  Store store(db_);
  const std::string path = dir_ + "/run.html";
  const RunRecord run = store.load_run(before_);
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  write_run_html(stored::decode(run), a, path);
  std::string page = read(path);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("data-chart=\"path:server -&gt; client\""), std::string::npos);
  try {
    write_run_html(stored::decode(run), a, dir_ + "/no/such/dir/run.html");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("/no/such/dir/run.html"), std::string::npos);
  }
}

// A link planted at the report's path, or at the old predictable temporary
// name (path.tmp.PID), is replaced or ignored: its target keeps its bytes, and
// no temporary is left.
TEST(SecurityWriteFileAtomic, NeverWritesThroughAPlantedLink) {
  std::string tmpl = (fs::temp_directory_path() / "cp-atomic-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  { std::ofstream(dir / "victim") << "keep"; }
  const fs::path report = dir / "report.html";
  fs::create_symlink(dir / "victim", report);
  fs::create_symlink(dir / "victim", dir / ("report.html.tmp." + std::to_string(::getpid())));
  write_file_atomic(report.string(), "new");
  std::ifstream victim(dir / "victim");
  std::string kept((std::istreambuf_iterator<char>(victim)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "keep");
  EXPECT_FALSE(fs::is_symlink(report));
  std::ifstream written(report);
  std::string got((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "new");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 3u);  // victim, report.html and the planted link: no temporary
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cp::app
