// A stored run's reports byte for byte: tests/golden/stored_run/runs.sql holds
// the rows (the tables come from schemas/sqlite's migrations 1 and 2) of
// two runs a real `chokepoint diagnose --server local --client local` stored
// (disk, TCP, a mounted path from RAM and disk, its transfer-size sweep), and
// outputs.sha256 the SHA-256 of what show (text, JSON, HTML), export (CSV,
// JSON, OpenMetrics) and compare (text, JSON, HTML) printed for them with the
// code before the typed run (core/stored_run.h): main at 579627e, with
// 5f75575's driver display name in show's summary and 7c0f9b4's empty
// "settings" list in each JSON finding, and show's outputs as the code before
// the typed run printed them with the bus and TCP-stream ladder (the links
// merge), with the size scan's table headed "Transfer-size scan" (it read
// "sweep", a word tune keeps; nothing else of the bytes changed) and each
// ladder row's "unit" (#24), and a row from disk's own candidate named
// "<protocol> + disk" (it read "path or path"), and the JSON's structured
// ids beside the words (each finding's "hint_ids", the link's "from", each
// compared row's "note_id"; the texts and HTML kept their bytes). Reading the
// run decoded once must give the same bytes. On a mismatch the outputs are kept under the
// temporary directory the failure names, to diff against a build of the older
// code (or, for an intended change of output, to refresh the digests:
// `sha256sum *` there).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/ladder.h"
#include "app/app.h"
#include "app/report_commands.h"
#include "core/sha256.h"
#include "core/stored_run.h"
#include "store/store.h"

namespace cp::app {
namespace {

namespace fs = std::filesystem;

const std::string kGolden = std::string(CP_SOURCE_DIR) + "/tests/golden/stored_run";
const std::string kMigrations = std::string(CP_SOURCE_DIR) + "/schemas/sqlite";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int run_main(std::vector<std::string> args) {
  args.insert(args.begin(), "chokepoint");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return main(static_cast<int>(argv.size()), argv.data());
}

// What `chokepoint ARGS` prints on stdout, and its exit code.
std::pair<int, std::string> stdout_of(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStdout();
  const int rc = run_main(args);
  return {rc, ::testing::internal::GetCapturedStdout()};
}

std::string sha256_hex(const std::string& text) {
  Sha256 h;
  h.update(text.data(), text.size());
  return h.hex();
}

// How many analyses `chokepoint ARGS` ran (it must succeed).
uint64_t analyses(const std::vector<std::string>& args) {
  const uint64_t before = analysis::analyses_run();
  EXPECT_EQ(stdout_of(args).first, 0) << args[0];
  return analysis::analyses_run() - before;
}

// A fresh directory holding runs.db: the golden runs in a file of schema 2.
void make_golden_db(std::string* dir) {
  std::string tmpl = (fs::temp_directory_path() / "cp-golden-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  *dir = tmpl;
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open((tmpl + "/runs.db").c_str(), &h), SQLITE_OK);
  // The tables as schema 2 made them (the migrations themselves), then the rows.
  const std::string sql = read(kMigrations + "/0001_init.sql") +
                          read(kMigrations + "/0002_compact_and_verdicts.sql") +
                          "PRAGMA user_version=2;\n" + read(kGolden + "/runs.sql");
  char* err = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK) << (err ? err : "");
}

TEST(StoredOutput, ShowExportAndCompareOfAStoredRunMatchTheOlderCodesBytes) {
  std::string dir;
  ASSERT_NO_FATAL_FAILURE(make_golden_db(&dir));
  const std::string db = dir + "/runs.db";
  std::map<std::string, std::string> out;  // output name -> its bytes
  for (const std::string id : {"1", "2"}) {
    auto [rc, text] = stdout_of({"show", id, "--db", db, "--html", dir + "/show_" + id + ".html"});
    ASSERT_EQ(rc, 0);
    out["show_" + id + ".txt"] = text;
    out["show_" + id + ".html"] = read(dir + "/show_" + id + ".html");
    std::tie(rc, text) = stdout_of({"show", id, "--db", db, "--json"});
    ASSERT_EQ(rc, 0);
    out["show_" + id + ".json"] = text;
    for (const auto& [format, ext] : std::map<std::string, std::string>{
             {"csv", "csv"}, {"json", "json"}, {"openmetrics", "om"}}) {
      std::ostringstream s;
      ASSERT_EQ(export_command({id, "--db", db, "--format", format}, s), 0);
      out["export_" + id + "." + ext] = s.str();
    }
  }
  std::ostringstream text, json;
  ASSERT_EQ(compare_command({"1", "2", "--db", db, "--html", dir + "/compare.html"}, text), 0);
  ASSERT_EQ(compare_command({"1", "2", "--db", db, "--json"}, json), 0);
  out["compare.txt"] = text.str();
  out["compare.json"] = json.str();
  out["compare.html"] = read(dir + "/compare.html");

  std::istringstream digests(read(kGolden + "/outputs.sha256"));
  std::string digest, name;
  size_t checked = 0, wrong = 0;
  while (digests >> digest >> name) {
    ++checked;
    ASSERT_TRUE(out.count(name)) << name;
    if (sha256_hex(out[name]) != digest) {
      ++wrong;
      ADD_FAILURE() << name << " differs from the older code's output";
    }
  }
  EXPECT_EQ(checked, out.size());
  if (wrong == 0) {
    fs::remove_all(dir);
  } else {
    for (const auto& [n, bytes] : out) std::ofstream(dir + "/" + n, std::ios::binary) << bytes;
    ADD_FAILURE() << "the outputs are kept in " << dir;
  }
}

// Each command judges each run it reports once, whatever it prints (text,
// JSON, HTML together): show one analysis, compare two (one per run), export
// one for OpenMetrics and none for CSV and JSON (no verdict in them), history
// one per run whose stored verdict is stale, and none once stored again.
TEST(OneAnalysis, EachCommandAnalyzesEachRunItReportsOnce) {
  std::string dir;
  ASSERT_NO_FATAL_FAILURE(make_golden_db(&dir));
  const std::string db = dir + "/runs.db", html = dir + "/out.html";
  EXPECT_EQ(analyses({"show", "1", "--db", db}), 1u);
  EXPECT_EQ(analyses({"show", "1", "--db", db, "--explain", "--html", html}), 1u);
  EXPECT_EQ(analyses({"show", "2", "--db", db, "--json", "--html", html}), 1u);
  EXPECT_EQ(analyses({"compare", "1", "2", "--db", db, "--html", html}), 2u);
  EXPECT_EQ(analyses({"compare", "1", "2", "--db", db, "--json"}), 2u);
  EXPECT_EQ(analyses({"export", "1", "--db", db, "--format", "openmetrics"}), 1u);
  EXPECT_EQ(analyses({"export", "1", "--db", db, "--format", "csv"}), 0u);
  EXPECT_EQ(analyses({"export", "1", "--db", db, "--format", "json"}), 0u);
  EXPECT_LE(analyses({"history", "--db", db}), 2u);  // the golden runs' verdicts are stale
  EXPECT_EQ(analyses({"history", "--db", db}), 0u);  // and stored now
  fs::remove_all(dir);
}

// The same for a run whose stored strings need escaping on a terminal (a
// label with quotes, unicode and a bidi override, a hostname with an escape
// sequence): text, HTML, JSON and OpenMetrics still come from one analysis.
TEST(OneAnalysis, ARunWhoseStringsNeedEscapingIsAnalyzedOncePerCommand) {
  std::string dir;
  ASSERT_NO_FATAL_FAILURE(make_golden_db(&dir));
  const std::string db = dir + "/runs.db", html = dir + "/out.html";
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  const char* sql =
      "UPDATE runs SET label = 'it''s \"n\u00e4s\" ' || char(8238) || 'gnp.exe' WHERE id = 1;"
      "UPDATE hosts SET facts_json = json_set(facts_json, '$.hostname', "
      "'nas' || char(27) || '[2J') WHERE run_id = 1 AND role = 'server';";
  const int rc = sqlite3_exec(h, sql, nullptr, nullptr, nullptr);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK);
  bool changed = false;
  stored::sanitized(Store(db, Store::Access::kReadOnly).load(1), &changed);
  ASSERT_TRUE(changed);  // else this test shows nothing
  EXPECT_EQ(analyses({"show", "1", "--db", db}), 1u);
  EXPECT_EQ(analyses({"show", "1", "--db", db, "--explain", "--html", html}), 1u);
  EXPECT_EQ(analyses({"show", "1", "--db", db, "--json", "--html", html}), 1u);
  EXPECT_EQ(analyses({"compare", "1", "2", "--db", db}), 2u);
  EXPECT_EQ(analyses({"compare", "2", "1", "--db", db, "--html", html}), 2u);
  EXPECT_EQ(analyses({"compare", "1", "2", "--db", db, "--json"}), 2u);
  EXPECT_EQ(analyses({"export", "1", "--db", db, "--format", "openmetrics"}), 1u);
  EXPECT_LE(analyses({"history", "--db", db}), 2u);  // stale stored verdicts, derived once
  EXPECT_EQ(analyses({"history", "--db", db}), 0u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cp::app
