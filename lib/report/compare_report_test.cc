#include "report/compare_report.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <map>
#include <set>

#include "core/error.h"
#include "report/test_runs.h"

namespace cp::report {
namespace {

using testing::drift_run;
using testing::seed_run;
using testing::tuned_run;

// Runs with no measured row in common are refused, naming each run's rows.
TEST(CompareReport, RefusesRunsWithNothingInCommon) {
  const RunRecord a =
      testing::SeedRun(3, "").stage("tcp", "server->client", "send", 0, {50, 51, 49, 50}).build();
  const RunRecord b = testing::SeedRun(5, "")
                          .stage("disk", "server", "read", 100'000'000, {70, 71, 72, 73})
                          .build();
  const analysis::Comparison c = analysis::compare_runs(stored::decode(a), stored::decode(b));
  try {
    require_common_rows(c);
    FAIL() << "compared runs with no common stage";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_STREQ(e.what(),
                 "runs 3 and 5 measured nothing in common: only in run 3: TCP server -> client; "
                 "only in run 5: server disk read, 100 MB files");
    EXPECT_FALSE(e.hint().empty());
  }
  // A run without samples has nothing to compare either.
  const RunRecord empty = testing::SeedRun(6, "").build();
  EXPECT_THROW(
      require_common_rows(analysis::compare_runs(stored::decode(a), stored::decode(empty))), Error);
  // Runs with a row in common pass.
  EXPECT_NO_THROW(require_common_rows(
      analysis::compare_runs(stored::decode(seed_run()), stored::decode(tuned_run()))));
}

TEST(CompareReport, TextShowsChangesAndWhatDiffers) {
  analysis::Comparison c =
      analysis::compare_runs(stored::decode(seed_run()), stored::decode(tuned_run()));
  std::string t = compare_text(c, {false});
  EXPECT_NE(t.find("A = run 1 \"before\""), std::string::npos) << t;
  EXPECT_NE(t.find("B = run 2 \"after\""), std::string::npos);
  // SMB from RAM 49.6 -> 89.2 MB/s, 5 vs 5 samples apart: p = 2/252.
  EXPECT_NE(t.find("49.6 (49.1-50.2)"), std::string::npos) << t;
  EXPECT_NE(t.find("+79.8 % faster (p=0.008, n=5+5) Holm p=0.032"), std::string::npos) << t;
  // TCP did not move.
  EXPECT_NE(t.find("~ no change (p="), std::string::npos);
  EXPECT_NE(t.find("only in A: FTP from RAM read, 100 MB files; AFP from RAM read, 100 MB files; "
                   "AFP from disk read, 100 MB files"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("samba.global.smb2 max read"), std::string::npos);
  EXPECT_NE(t.find("65536 -> 8388608"), std::string::npos);
  EXPECT_NE(t.find("disk_dir.device.read_ahead_kb"), std::string::npos);
  EXPECT_NE(t.find("128 -> 2048"), std::string::npos);
  EXPECT_EQ(t.find("\033["), std::string::npos);
  EXPECT_NE(compare_text(c, {true}).find("\033[32m"), std::string::npos);  // green: faster
}

TEST(CompareReport, JsonCarriesSamplesAndTests) {
  analysis::Comparison c =
      analysis::compare_runs(stored::decode(seed_run()), stored::decode(tuned_run()));
  auto doc = boost::json::parse(compare_json(c)).as_object();
  EXPECT_EQ(doc.at("a").at("id").as_int64(), 1);
  EXPECT_EQ(doc.at("b").at("label").as_string(), "after");
  EXPECT_DOUBLE_EQ(doc.at("alpha").as_double(), 0.05);
  bool smb = false;
  for (const auto& r : doc.at("rows").as_array()) {
    if (r.at("key").as_string() != "smb:ram:read:100000000") continue;
    smb = true;
    EXPECT_EQ(r.at("verdict").as_string(), "faster");
    EXPECT_NEAR(r.at("p").as_double(), 2.0 / 252, 1e-12);
    EXPECT_TRUE(r.at("exact").as_bool());
    EXPECT_EQ(r.at("a").at("samples_bytes_per_s").as_array().size(), 5u);
    EXPECT_EQ(r.at("b").at("sample_ids").as_array().size(), 5u);
  }
  EXPECT_TRUE(smb);
  EXPECT_EQ(doc.at("only_a").as_array().size(), 3u);
  EXPECT_TRUE(doc.at("only_b").as_array().empty());
  EXPECT_FALSE(doc.at("env").as_array().empty());
}

// Only Samba changed; the disks and FTP moved anyway. JSON says which rows
// are controls, that they drifted and by how much, and counts only the SMB
// change beyond the drift.
TEST(CompareReport, JsonSeparatesDriftFromChange) {
  analysis::Comparison c =
      analysis::compare_runs(stored::decode(drift_run(false)), stored::decode(drift_run(true)));
  auto doc = boost::json::parse(compare_json(c)).as_object();
  EXPECT_EQ(doc.at("correction").as_string(), "holm");
  std::map<std::string, std::string> verdicts;
  std::map<std::string, bool> affected;
  for (const auto& v : doc.at("rows").as_array()) {
    const auto& r = v.as_object();
    const std::string key(r.at("key").as_string());
    verdicts[key] = r.at("verdict").as_string();
    affected[key] = r.at("affected_by_change").as_bool();
    EXPECT_GE(r.at("p_corrected").as_double(), r.at("p").as_double()) << key;
  }
  const std::map<std::string, std::string> want = {
      {"disk:server:write:100000000", "drift"},     {"disk:server:read:100000000", "drift"},
      {"disk:client:write:100000000", "no change"}, {"disk:client:read:100000000", "drift"},
      {"tcp:server->client:send", "no change"},     {"tcp:client->server:send", "no change"},
      {"smb:ram:read:100000000", "drift"},          {"ftp:ram:read:100000000", "no change"},
      {"smb:disk:read:100000000", "faster"},        {"ftp:disk:read:100000000", "drift"},
  };
  EXPECT_EQ(verdicts, want);
  for (const auto& [key, a] : affected) EXPECT_EQ(a, key.rfind("smb:", 0) == 0) << key;
  const auto& drift = doc.at("drift").as_object();
  EXPECT_EQ(drift.at("controls").as_array().size(), 8u);
  EXPECT_EQ(drift.at("moved").as_int64(), 4);
  EXPECT_NEAR(drift.at("median_change").as_double(), 0, 0.01);
  EXPECT_NEAR(drift.at("spread_factor").as_double(), 1.369, 0.01);  // FTP from disk
  EXPECT_NEAR(drift.at("low").as_double(), 1 / 1.369 - 1, 0.01);
  EXPECT_NEAR(drift.at("high").as_double(), 0.369, 0.01);
  EXPECT_FALSE(drift.at("nothing_recorded").as_bool());
  // The changed Samba parameter, and what it can touch.
  bool param = false;
  for (const auto& v : doc.at("env").as_array()) {
    const auto& e = v.as_object();
    EXPECT_EQ(e.at("kind").as_string(), "Samba configuration");
    EXPECT_EQ(e.at("affects").as_array(), (boost::json::array{"smb", "path"}));
    if (e.at("what").as_string() == "samba.global.smb2 max read") {
      param = true;
      EXPECT_EQ(e.at("a").as_string(), "65536");
      EXPECT_EQ(e.at("b").as_string(), "1048576");
    }
  }
  EXPECT_TRUE(param);
}

// Another chokepoint version can touch every row: no control, no drift figure.
TEST(CompareReport, JsonHasNoDriftFigureWithoutControls) {
  RunRecord b = seed_run(2, "after");
  b.version = "0.2.0";
  auto doc = boost::json::parse(compare_json(analysis::compare_runs(stored::decode(seed_run()),
                                                                    stored::decode(b))))
                 .as_object();
  const auto& drift = doc.at("drift").as_object();
  EXPECT_TRUE(drift.at("controls").as_array().empty());
  EXPECT_TRUE(drift.at("median_change").is_null());
  EXPECT_TRUE(drift.at("spread_factor").is_null());
  for (const auto& r : doc.at("rows").as_array()) {
    EXPECT_TRUE(r.at("affected_by_change").as_bool());
    EXPECT_EQ(r.at("affected_by").as_array(), (boost::json::array{"run chokepoint version"}));
  }
}

TEST(CompareReport, TextShowsDriftAndRoles) {
  analysis::Comparison c =
      analysis::compare_runs(stored::decode(drift_run(false)), stored::decode(drift_run(true)));
  std::string t = compare_text(c, {false});
  EXPECT_NE(t.find("-24.5 % drift (p="), std::string::npos) << t;
  // The change is drift, not a slower row: no row's verdict says slower.
  size_t drifted = 0;
  for (const auto& d : c.rows) {
    EXPECT_NE(d.verdict, analysis::DeltaVerdict::kSlower) << d.key;
    drifted += d.verdict == analysis::DeltaVerdict::kDrift;
  }
  EXPECT_GE(drifted, 1u);
  EXPECT_NE(t.find("8 controls (rows no recorded difference can touch): median change +0.0 %, "
                   "band -27.0 % .. +36.9 %"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("samba.global.smb2 max read"), std::string::npos);
  EXPECT_NE(compare_text(c, {true}).find("\033[33m"), std::string::npos);  // yellow: drift
}

TEST(CompareReport, TextNamesLongSambaParametersWhole) {
  RunRecord a = seed_run(), b = seed_run(2, "after");
  b.hosts[0].facts_json = R"({"samba":{"sha256":"bb22","global":{"smb2 max read":"65536",)"
                          R"("server multi channel support":"yes"}}})";
  std::string t =
      compare_text(analysis::compare_runs(stored::decode(a), stored::decode(b)), {false});
  EXPECT_NE(t.find("samba.global.server multi channel support"), std::string::npos) << t;
}

// Every note judge_delta gives has its own words, and they carry its figures.
TEST(CompareReport, EveryDeltaNoteHasItsOwnWordsWithItsFigures) {
  std::set<std::string> texts;
  for (const char* id : {"too_few", "cannot_show", "not_significant", "within_spread",
                         "nothing_recorded", "unaffected", "within_drift"}) {
    analysis::RowDelta d;
    d.note = id;
    for (const char* k :
         {"n1", "n2", "min_samples", "alpha", "p", "family", "spread", "low", "high"})
      d.note_numbers[k] = 1;
    const std::string one = delta_note_text(d);
    EXPECT_FALSE(one.empty()) << id;
    texts.insert(one);
    for (auto& [k, v] : d.note_numbers) v = 2;
    const bool has_figures =
        std::string(id) != "nothing_recorded" && std::string(id) != "unaffected";
    EXPECT_EQ(delta_note_text(d) != one, has_figures) << id;
  }
  EXPECT_EQ(texts.size(), 7u);
  EXPECT_EQ(delta_note_text(analysis::RowDelta{}), "");
}

}  // namespace
}  // namespace cp::report
