#include "report/report.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace cp::report {
namespace {

RunRecord sample_run() {
  RunRecord run;
  run.id = 7;
  run.label = "before";
  run.status = kComplete;
  run.server = "nas";
  run.client = "local";
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

TEST(Report, TextHasLadderAndVerdict) {
  RunRecord run = sample_run();
  std::string t = run_text(run, analysis::analyze(run), {false});
  EXPECT_NE(t.find("chokepoint run 7"), std::string::npos);
  EXPECT_NE(t.find("label \"before\""), std::string::npos);
  EXPECT_NE(t.find("TCP server -> client"), std::string::npos);
  EXPECT_NE(t.find("117.0"), std::string::npos);
  EXPECT_NE(t.find("94 % of link"), std::string::npos);
  EXPECT_NE(t.find("disk server failed: no space"), std::string::npos);
  EXPECT_NE(t.find("Verdict"), std::string::npos);
  EXPECT_EQ(t.find("\033["), std::string::npos);  // no colour when not asked
  std::string c = run_text(run, analysis::analyze(run), {true});
  EXPECT_NE(c.find("\033["), std::string::npos);
}

TEST(Report, JsonCarriesSamplesBehindTheVerdict) {
  RunRecord run = sample_run();
  auto doc = boost::json::parse(run_json(run, analysis::analyze(run))).as_object();
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

TEST(Report, HistoryTextAndJson) {
  RunListRow r;
  r.id = 3;
  r.label = "after";
  r.status = kComplete;
  r.server = "nas";
  r.client = "mac";
  r.headline = {{"tcp:server->client:send", 117e6}};
  std::string t = history_text({r});
  EXPECT_NE(t.find("after"), std::string::npos);
  EXPECT_NE(t.find("tcp:server->client:send 117.0"), std::string::npos);
  auto j = boost::json::parse(history_json({r})).as_object();
  EXPECT_EQ(j.at("runs").as_array()[0].at("id").as_int64(), 3);
  EXPECT_NE(history_text({}).find("No runs"), std::string::npos);
}

}  // namespace
}  // namespace cp::report
