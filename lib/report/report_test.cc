#include "report/report.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/text.h"
#include "report/finding_text.h"
#include "report/row_text.h"
#include "report/test_runs.h"

namespace cp::report {
namespace {

RunRecord sample_run() {
  RunRecord run;
  static_cast<RunHead&>(run) = cp::testing::complete_run(7, "before", "local");
  run.hosts.push_back({"server", "nas",
                       R"({"hostname":"nas","net":{"name":"eth0","mtu":1500,"speed_mbit":1000}})"});
  run.hosts.push_back({"client", "local",
                       R"({"hostname":"mac","net":{"name":"en0","mtu":1500,"speed_mbit":1000}})"});
  StageRecord tcp;
  tcp.layer = "tcp";
  tcp.where = "server->client";
  tcp.status = kComplete;
  for (int i = 0; i < 3; ++i) {
    SampleRecord s;
    s.id = 100 + i;
    s.op = "send";
    s.bytes = 234'000'000;
    s.seconds = 2;
    tcp.samples.push_back(s);
  }
  run.stages.push_back(tcp);
  StageRecord disk;
  disk.layer = "disk";
  disk.where = "server";
  disk.status = kFailed;
  disk.error = "no space";
  run.stages.push_back(disk);
  return run;
}

// The ladder line of the row labelled `label`, split into its columns after
// the label; empty when the text has none.
std::vector<std::string> ladder_columns(const std::string& text, const std::string& label) {
  std::vector<std::string> cols;
  const size_t at = text.find("\n  " + label + " ");
  if (at == std::string::npos) return cols;
  const size_t from = at + 3 + label.size(), end = text.find('\n', from);
  for (std::string_view w : split_ws(std::string_view(text).substr(from, end - from))) {
    cols.emplace_back(w);
  }
  return cols;
}

TEST(Report, TextShowsEachRowsFiguresAndEveryFindingOfTheAnalysis) {
  RunRecord run = sample_run();
  const analysis::Analysis a = analysis::analyze(stored::decode(run));
  TextOptions explain;
  explain.explain = true;  // every finding with its evidence
  std::string t = run_text(stored::decode(run), a, explain);
  EXPECT_NE(t.find("chokepoint run 7"), std::string::npos);
  EXPECT_NE(t.find("label \"before\""), std::string::npos);
  // The TCP row's median, spread and count as the analysis has them.
  const analysis::Row* tcp = analysis::find_row(a, "tcp:server->client:send");
  ASSERT_NE(tcp, nullptr);
  const std::vector<std::string> cols = ladder_columns(t, row_label(*tcp));
  ASSERT_GE(cols.size(), 3u) << t;
  EXPECT_EQ(cols[0], fmt::format("{:.1f}", tcp->rate.median / 1e6));
  EXPECT_EQ(cols[1], fmt::format("{:.1f}-{:.1f}", tcp->rate.min / 1e6, tcp->rate.max / 1e6));
  EXPECT_EQ(cols[2], std::to_string(tcp->rate.n));
  EXPECT_NE(t.find("disk server failed: no space"), std::string::npos);
  // The verdict: the headline, then every other finding, each as rendered.
  ASSERT_GE(a.headline_finding, 0);
  const size_t verdict = t.find("\nVerdict\n  " + headline_text(a) + "\n");
  EXPECT_NE(verdict, std::string::npos) << t;
  for (size_t i = 0; i < a.findings.size(); ++i) {
    if (static_cast<int>(i) == a.headline_finding) continue;
    EXPECT_NE(t.find("  - " + finding_text(a.findings[i]) + "\n", verdict), std::string::npos)
        << a.findings[i].rule;
  }
  EXPECT_EQ(t.find("\033["), std::string::npos);  // no colour when not asked
  std::string c = run_text(stored::decode(run), a, {true});
  EXPECT_NE(c.find("\033["), std::string::npos);
}

TEST(Report, JsonCarriesSamplesBehindTheVerdict) {
  RunRecord run = sample_run();
  auto doc =
      boost::json::parse(run_json(stored::decode(run), analysis::analyze(stored::decode(run))))
          .as_object();
  EXPECT_EQ(doc.at("run").at("id").as_int64(), 7);
  const auto& ladder = doc.at("ladder").as_array();
  bool found = false;
  for (const auto& r : ladder) {
    if (r.at("key").as_string() == "tcp:server->client:send") {
      found = true;
      EXPECT_DOUBLE_EQ(r.at("median_bytes_per_s").as_double(), 117e6);
    }
  }
  EXPECT_TRUE(found);
  const auto& samples = doc.at("stages").as_array()[0].at("samples").as_array();
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].at("id").as_int64(), 100);
  EXPECT_DOUBLE_EQ(samples[0].at("bytes_per_s").as_double(), 117e6);
  EXPECT_FALSE(doc.at("verdict").at("headline").as_string().empty());
}

// Each disk row carries the bus beneath its disk: kind, links, theoretical and
// effective ceilings and the row's ratio to the theoretical one.
TEST(Report, JsonLadderCarriesEachDiskRowsBus) {
  RunRecord run = sample_run();
  run.hosts[0].facts_json =
      R"({"hostname":"nas","net":{"name":"eth0","mtu":1500,"speed_mbit":1000},)"
      R"("disk_dir":{"path":"/srv","device":{"name":"sda1","disk":"sda","partition":true,)"
      R"("slaves":[],"bus":{"kind":"sata","link":"3.0 Gbps","ceiling_bytes_per_s":300000000}}}})";
  run.hosts[1].facts_json =
      R"({"hostname":"mac","net":{"name":"en0","mtu":1500,"speed_mbit":1000},)"
      R"("disk_dir":{"path":"/tmp","device":{"name":"loop0","disk":"loop0","partition":false,)"
      R"("slaves":[],"bus":{"kind":"virtual","link":"","ceiling_bytes_per_s":0}}}})";
  for (const char* where : {"server", "client"}) {
    StageRecord disk;
    disk.layer = "disk";
    disk.where = where;
    disk.status = kComplete;
    SampleRecord s;
    s.id = where == std::string("server") ? 200 : 300;
    s.op = "read";
    s.size = 100'000'000;
    s.bytes = s.size;
    s.seconds = 0.5;  // 200 MB/s
    disk.samples.push_back(s);
    run.stages.push_back(disk);
  }
  const stored::Run typed = stored::decode(run);
  auto doc = boost::json::parse(run_json(typed, analysis::analyze(typed))).as_object();
  std::map<std::string, boost::json::object> bus;
  for (const auto& r : doc.at("ladder").as_array()) {
    if (r.as_object().contains("bus")) {
      bus[std::string(r.at("key").as_string())] = r.at("bus").as_object();
    }
  }
  ASSERT_EQ(bus.size(), 2u);
  const auto& sata = bus.at("disk:server:read:100000000");
  EXPECT_EQ(sata.at("kind").as_string(), "sata");
  EXPECT_EQ(sata.at("links").as_array()[0].at("link").as_string(), "3.0 Gbps");
  EXPECT_DOUBLE_EQ(sata.at("theoretical_bytes_per_s").as_double(), 300e6);
  EXPECT_DOUBLE_EQ(sata.at("effective_bytes_per_s").as_double(), 240e6);
  EXPECT_NEAR(sata.at("ratio").as_double(), 200.0 / 300, 1e-9);
  const auto& loop = bus.at("disk:client:read:100000000");
  EXPECT_EQ(loop.at("kind").as_string(), "virtual");
  EXPECT_DOUBLE_EQ(loop.at("theoretical_bytes_per_s").as_double(), 0);
}

// A verdict left undecided because the files are too short for the path's round
// trips carries the file size that would settle it.
TEST(Report, JsonCarriesTheSuggestedFileSizeOfALatencyVerdict) {
  // 1 MB files: 8.5 ms at TCP's 117 MB/s, 16.7 ms over FTP: 26 round trips of 0.31 ms more.
  const RunRecord run = testing::SeedRun(3, "short files")
                            .stage("tcp", "server->client", "send", 0, {117, 117, 117})
                            .stage("ftp", "ram", "read", 1'000'000, {60, 60, 60})
                            .build();
  auto doc =
      boost::json::parse(run_json(stored::decode(run), analysis::analyze(stored::decode(run))))
          .as_object();
  const boost::json::object* f = nullptr;
  for (const auto& v : doc.at("verdict").at("findings").as_array())
    if (v.at("path").as_string() == "ftp ram read") f = &v.as_object();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->at("layer").as_string(), "undecided");
  EXPECT_EQ(f->at("undecided_reason").as_string(), "latency");
  ASSERT_TRUE(f->contains("suggested_size"));
  EXPECT_GT(f->at("suggested_size").to_number<uint64_t>(), 1'000'000u);
}

TEST(Report, JsonTracesEveryVerdictToSamples) {
  RunRecord run = testing::seed_run();
  analysis::Analysis a = analysis::analyze(stored::decode(run));
  auto doc = boost::json::parse(run_json(stored::decode(run), a)).as_object();
  // Every sample id a ladder row cites is a stored sample with that rate.
  std::map<int64_t, double> stored;
  for (const auto& st : doc.at("stages").as_array()) {
    for (const auto& s : st.at("samples").as_array()) {
      stored[s.at("id").as_int64()] = s.at("bytes_per_s").as_double();
    }
  }
  std::set<std::string> keys;
  for (const auto& r : doc.at("ladder").as_array()) {
    keys.insert(std::string(r.at("key").as_string()));
    const auto& ids = r.at("sample_ids").as_array();
    const auto& rates = r.at("samples_bytes_per_s").as_array();
    ASSERT_EQ(ids.size(), rates.size());
    ASSERT_EQ(ids.size(), r.at("n").to_number<size_t>());
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_TRUE(stored.count(ids[i].as_int64()));
      EXPECT_DOUBLE_EQ(stored[ids[i].as_int64()], rates[i].as_double());
    }
  }
  // Findings name the rows they rest on, the cap, the ratio and the hints.
  bool smb = false;
  for (const auto& f : doc.at("verdict").at("findings").as_array()) {
    for (const auto& k : f.at("rows").as_array()) {
      EXPECT_TRUE(keys.count(std::string(k.as_string()))) << k;
    }
    if (f.at("path").as_string() != "smb ram read") continue;
    smb = true;
    EXPECT_EQ(f.at("cap").as_string(), "smb:ram:read:100000000");
    EXPECT_NEAR(f.at("ratio").as_double(), 49.6 / 117, 1e-3);
    ASSERT_EQ(f.at("hints").as_array().size(), 1u);
    ASSERT_EQ(f.at("hint_ids").as_array().size(), 1u);
    EXPECT_EQ(f.at("hint_ids").as_array()[0].as_string(), "server.request_limit");
  }
  EXPECT_TRUE(smb);
}

TEST(Report, HistoryCarriesEachRunsVerdict) {
  RunListRow r;
  r.id = 3;
  r.label = "after";
  r.status = kComplete;
  r.server = "nas";
  r.client = "mac";
  analysis::Headline h;
  h.path = "smb disk read";
  h.layer = "server disk";
  h.stored_cap = "server disk read, 100 MB files";
  h.cap_bytes_per_s = 52.1e6;
  EXPECT_NE(history_text({r}, {h}).find(r.label), std::string::npos);  // its line names it
  auto j = boost::json::parse(history_json({r}, {h})).as_object();
  const auto& run = j.at("runs").as_array()[0].as_object();
  EXPECT_EQ(run.at("id").as_int64(), 3);
  EXPECT_EQ(run.at("verdict").at("layer").as_string(), "server disk");
  EXPECT_DOUBLE_EQ(run.at("verdict").at("cap_bytes_per_s").as_double(), 52.1e6);
  EXPECT_EQ(run.at("label").as_string(), "after");
  EXPECT_TRUE(boost::json::parse(history_json({}, {})).at("runs").as_array().empty());
}

}  // namespace
}  // namespace cp::report

namespace cp::report {
namespace {

TEST(Report, SweepCellsGetTheirOwnTableAndNoVerdict) {
  RunRecord run = sample_run();
  StageRecord sweep;
  sweep.layer = "smb";
  sweep.where = "ram";
  sweep.status = kComplete;
  const std::pair<const char*, uint64_t> cells[] = {
      {"sweep-seqread", 4096}, {"sweep-randread", 4096}, {"sweep-seqread", 1u << 20}};
  for (const auto& [op, size] : cells) {
    SampleRecord s;
    s.op = op;
    s.size = size;
    s.bytes = 16u << 20;
    s.seconds = size == 4096 ? 1.6 : 0.16;
    sweep.samples.push_back(s);
  }
  run.stages.push_back(sweep);
  analysis::Analysis a = analysis::analyze(stored::decode(run));
  // No finding judges or cites a sweep cell: they are not layers of the ladder.
  for (const auto& f : a.findings) {
    for (const auto& key : f.rows) {
      const analysis::Row* r = analysis::find_row(a, key);
      ASSERT_NE(r, nullptr) << key;
      EXPECT_FALSE(analysis::is_size_scan(*r)) << f.rule << " cites " << key;
    }
    if (!f.subject.empty()) {
      EXPECT_FALSE(analysis::is_size_scan(*analysis::find_row(a, f.subject.key))) << f.rule;
    }
  }
  // The scan adds no path verdict: the run without it has the same paths.
  auto paths = [](const analysis::Analysis& x) {
    std::vector<std::string> out;
    for (const auto& v : analysis::path_verdicts(x)) out.push_back(v.path);
    return out;
  };
  EXPECT_FALSE(paths(a).empty());
  EXPECT_EQ(paths(a), paths(analysis::analyze(stored::decode(sample_run()))));
  std::string t = run_text(stored::decode(run), a, {false});
  EXPECT_NE(t.find("Transfer-size scan, SMB from RAM (MB/s)"), std::string::npos) << t;
  EXPECT_NE(t.find("randwrite"), std::string::npos);
  // 16 MiB in 1.6 s = 10.5 MB/s at 4 KiB; 105 MB/s at 1 MiB; no randread at 1 MiB.
  EXPECT_NE(t.find("     4 KiB       10.5       10.5          -          -"), std::string::npos)
      << t;
  EXPECT_NE(t.find("     1 MiB      104.9          -          -          -"), std::string::npos)
      << t;
  // The sweep's cells are no ladder rows: no ladder line carries their labels.
  size_t sweeps = 0;
  for (const analysis::Row& r : a.rows) {
    if (!analysis::is_size_scan(r)) continue;
    ++sweeps;
    EXPECT_TRUE(ladder_columns(t, row_label(r)).empty()) << row_label(r);
  }
  EXPECT_GT(sweeps, 0u);
}

// A server agent without root lists what it measured another way; the report's
// JSON carries each entry with its host, and a host without the list adds none.
TEST(Report, DegradedFactsOfEachHostAreListedWithThePrivilegeThatRestoresThem) {
  RunRecord run = sample_run();
  run.hosts[0].facts_json =
      R"({"hostname":"nas","euid":1000,"degraded":[)"
      R"({"fact":"process_netns","method":"counted here","privilege":"root"},)"
      R"({"fact":"smb_negotiated","method":"not recorded","privilege":"root, smbstatus"}]})";
  const std::vector<DegradedFact> d = degraded_facts(stored::decode(run));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].role, "server");
  EXPECT_EQ(d[0].fact, "process_netns");
  EXPECT_EQ(d[1].fact, "smb_negotiated");
  EXPECT_EQ(d[1].privilege, "root, smbstatus");
  analysis::Analysis a = analysis::analyze(stored::decode(run));
  auto doc = boost::json::parse(run_json(stored::decode(run), a)).as_object();
  const auto& list = doc.at("degraded").as_array();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].at("role").as_string(), "server");
  EXPECT_EQ(list[1].at("fact").as_string(), "smb_negotiated");
  EXPECT_EQ(list[1].at("method").as_string(), "not recorded");
  EXPECT_TRUE(degraded_facts(stored::decode(sample_run())).empty());
}

}  // namespace
}  // namespace cp::report
