// TCP with several streams (streams.cc): a row per stream count, and each
// protocol over RAM held against one stream or the total of its connections'.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "analysis/judge.h"
#include "analysis/ladder.h"
#include "analysis/testing/findings.h"

namespace cp::analysis {
namespace {

using testing::analyzed;
using testing::finding;

const std::string kFacts =
    R"({"hostname":"h","net":{"name":"eth0","mtu":1500,"speed_mbit":25000}})";

// TCP samples as the stage stores them: `streams` > 1 lists each stream's
// figure in the details, the sample's bytes their sum.
void add_tcp(RunRecord& run, const std::string& where, int streams, std::vector<double> mbps) {
  StageRecord* st = nullptr;
  for (auto& s : run.stages)
    if (s.layer == "tcp" && s.where == where) st = &s;
  if (!st) {
    run.stages.push_back({});
    st = &run.stages.back();
    st->layer = "tcp";
    st->where = where;
    st->status = "complete";
  }
  for (double v : mbps) {
    SampleRecord s;
    s.op = "send";
    s.seconds = 2;
    s.bytes = static_cast<uint64_t>(v * 2e6);
    std::string each;
    for (int i = 0; streams > 1 && i < streams; ++i) {
      each += fmt::format(R"({}{{"bytes":{},"seconds":2,"tcp_info":{{"available":true}}}})",
                          i ? "," : "", s.bytes / static_cast<uint64_t>(streams));
    }
    s.details_json = fmt::format(R"({{"sender":"server","tcp_info":{{"available":true}}{}}})",
                                 streams > 1 ? R"(,"streams":[)" + each + "]" : "");
    s.id = static_cast<int64_t>(run.stages.size() * 100 + st->samples.size() + 1);
    st->samples.push_back(s);
  }
}

void add_proto(RunRecord& run, const std::string& layer, const std::string& properties,
               std::vector<double> mbps) {
  StageRecord st;
  st.layer = layer;
  st.where = "ram";
  st.status = "complete";
  for (double v : mbps) {
    SampleRecord s;
    s.op = "read";
    s.size = 100'000'000;
    s.bytes = s.size;
    s.seconds = double(s.size) / (v * 1e6);
    s.details_json = fmt::format(R"({{"properties":{}}})", properties);
    s.id = static_cast<int64_t>(run.stages.size() * 100 + st.samples.size() + 1);
    st.samples.push_back(s);
  }
  run.stages.push_back(st);
}

// One stream carries 1100 MB/s, two at once 2100 MB/s (a 25 GbE link).
RunRecord two_stream_run() {
  RunRecord run;
  run.hosts.push_back({"server", "server", kFacts});
  run.hosts.push_back({"client", "client", kFacts});
  add_tcp(run, "server->client", 1, {1100, 1105, 1098});
  add_tcp(run, "server->client", 2, {2100, 2110, 2095});
  return run;
}

TEST(TcpStreams, EachStreamCountIsItsOwnRowWithItsTotal) {
  const Analysis a = analyzed(two_stream_run());
  const Row* one = find_row(a, "tcp:server->client:send");
  const Row* two = find_row(a, "tcp:server->client:send:2");
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(one->streams, 1);
  EXPECT_EQ(two->streams, 2);
  EXPECT_NEAR(two->rate.median, 2100e6, 1e6);
  EXPECT_EQ(two->below, "link");
}

TEST(TcpStreams, ProtocolOverOneConnectionIsHeldAgainstOneStream) {
  RunRecord run = two_stream_run();
  add_proto(run, "ftp", "{}", {1000, 1010, 995});
  const Analysis a = analyzed(run);
  const Row* ftp = find_row(a, "ftp:ram:read:100000000");
  ASSERT_NE(ftp, nullptr);
  EXPECT_EQ(ftp->below, "tcp:server->client:send");
  const Finding* f = finding(a, "ftp ram read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->numbers.at("tcp_streams"), 1);
  EXPECT_EQ(f->numbers.at("connections"), 1);
}

TEST(TcpStreams, SmbWithTwoConnectionsIsHeldAgainstTwoStreams) {
  RunRecord run = two_stream_run();
  add_proto(run, "smb", R"({"connections":"2"})", {1500, 1510, 1495});
  const Analysis a = analyzed(run);
  const Row* smb = find_row(a, "smb:ram:read:100000000");
  ASSERT_NE(smb, nullptr);
  EXPECT_EQ(smb->below, "tcp:server->client:send:2");
  EXPECT_NEAR(smb->ratio, 1500.0 / 2100, 0.01);
  const Finding* f = finding(a, "smb ram read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->numbers.at("tcp_streams"), 2);
  EXPECT_EQ(f->numbers.at("connections"), 2);
  EXPECT_EQ(f->beneath.key, "tcp:server->client:send:2");
}

TEST(TcpStreams, KernelNfsMountWithNconnectIsHeldAgainstTheStreamsItOpens) {
  RunRecord run = two_stream_run();
  add_proto(run, "path", R"({"mount_options":"rw,vers=4.2,rsize=1048576,nconnect=4"})",
            {1500, 1510});
  const Analysis a = analyzed(run);
  // Four connections, two streams measured: the most streams up to four.
  EXPECT_EQ(find_row(a, "path:ram:read:100000000")->below, "tcp:server->client:send:2");
}

TEST(TcpStreams, SmbWithOneConnectionIsHeldAgainstOneStream) {
  RunRecord run = two_stream_run();
  add_proto(run, "smb", R"({"connections":"1"})", {900, 905});
  const Analysis a = analyzed(run);
  EXPECT_EQ(find_row(a, "smb:ram:read:100000000")->below, "tcp:server->client:send");
}

TEST(TcpStreams, WithoutSeveralStreamsMeasuredTheFindingSaysNothingOfThem) {
  RunRecord run;
  run.hosts.push_back({"server", "server", kFacts});
  run.hosts.push_back({"client", "client", kFacts});
  add_tcp(run, "server->client", 1, {1100, 1105, 1098});
  add_proto(run, "smb", R"({"connections":"2"})", {900, 905});
  const Analysis a = analyzed(run);
  EXPECT_EQ(find_row(a, "smb:ram:read:100000000")->below, "tcp:server->client:send");
  EXPECT_EQ(finding(a, "smb ram read")->numbers.count("tcp_streams"), 0u);
}

TEST(TcpStreams, ProtocolConnectionsFromDriverPropertiesAndMountOptions) {
  Row r;
  EXPECT_EQ(protocol_connections(r), 1);
  r.properties = {{"connections", "3"}};
  EXPECT_EQ(protocol_connections(r), 3);
  r.properties = {{"mount_options", "rw,multichannel,max_channels=4"}};
  EXPECT_EQ(protocol_connections(r), 4);
  r.properties = {{"mount_options", "rw,max_channels=4"}};  // without multichannel: one
  EXPECT_EQ(protocol_connections(r), 1);
  r.properties = {{"depth", "16"}};  // libnfs: requests in flight on one connection
  EXPECT_EQ(protocol_connections(r), 1);
}

}  // namespace
}  // namespace cp::analysis
