#include "report/compare_report.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "report/test_runs.h"

namespace cp::report {
namespace {

using testing::seed_run;
using testing::tuned_run;

TEST(CompareReport, TextShowsChangesAndWhatDiffers) {
  analysis::Comparison c = analysis::compare_runs(seed_run(), tuned_run());
  std::string t = compare_text(c, {false});
  EXPECT_NE(t.find("A = run 1 \"before\""), std::string::npos) << t;
  EXPECT_NE(t.find("B = run 2 \"after\""), std::string::npos);
  // SMB from RAM 49.6 -> 89.2 MB/s, 5 vs 5 samples apart: p = 2/252.
  EXPECT_NE(t.find("49.6 (49.1-50.2)"), std::string::npos) << t;
  EXPECT_NE(t.find("+79.8 % faster (p=0.008, n=5+5)"), std::string::npos) << t;
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
  analysis::Comparison c = analysis::compare_runs(seed_run(), tuned_run());
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

}  // namespace
}  // namespace cp::report
