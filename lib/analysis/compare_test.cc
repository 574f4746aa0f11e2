#include "analysis/compare.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.h"

namespace cp::analysis {
namespace {

StageRecord tcp_stage(const std::string& where, const std::vector<double>& mbps) {
  StageRecord st;
  st.layer = "tcp";
  st.where = where;
  st.status = kComplete;
  for (double v : mbps) {
    SampleRecord s;
    s.id = static_cast<int64_t>(v * 10);
    s.op = "send";
    s.seconds = 2;
    s.bytes = static_cast<uint64_t>(v * 1e6 * 2);
    st.samples.push_back(s);
  }
  return st;
}

StageRecord disk_stage(const std::string& where, const std::string& op, uint64_t size,
                       const std::vector<double>& mbps) {
  StageRecord st;
  st.layer = "disk";
  st.where = where;
  st.status = kComplete;
  for (double v : mbps) {
    SampleRecord s;
    s.op = op;
    s.size = size;
    s.bytes = size;
    s.seconds = double(size) / (v * 1e6);
    st.samples.push_back(s);
  }
  return st;
}

std::string facts(const std::string& kernel, int mtu, int read_ahead_kb, const std::string& rmem,
                  const std::string& samba_globals, const std::string& sha) {
  return fmt::format(
      R"({{"hostname":"nas","kernel":"{}","net":{{"name":"eth0","mtu":{},"speed_mbit":1000}},)"
      R"("disk_dir":{{"path":"/srv","avail_bytes":{},"device":{{"disk":"sda","read_ahead_kb":{}}}}},)"
      R"("tcp_sysctls":{{"net.ipv4.tcp_rmem":"{}"}},)"
      R"("samba":{{"sha256":"{}","global":{{{}}}}},"agent_max_rss_kb":{}}})",
      kernel, mtu, mtu * 1000, read_ahead_kb, rmem, sha, samba_globals, mtu);
}

RunRecord run(int64_t id, const std::string& label, std::vector<StageRecord> stages) {
  RunRecord r;
  r.id = id;
  r.label = label;
  r.status = kComplete;
  r.server = "nas";
  r.client = "local";
  r.version = "0.1.0";
  r.plan_json = R"({"tcp":{"seconds":2,"count":5,"buffer":131072}})";
  r.hosts.push_back({"server", "nas",
                     facts("6.1.0-18-amd64", 1500, 128, "4096 131072 6291456",
                           R"("smb2 max read":"65536","max xmit":"65535")", "aaaa")});
  r.hosts.push_back({"client", "local", R"({"hostname":"mac","net":{"mtu":1500}})"});
  r.stages = std::move(stages);
  return r;
}

const RowDelta* row(const Comparison& c, const std::string& key) {
  for (const auto& d : c.rows)
    if (d.key == key) return &d;
  return nullptr;
}

TEST(Compare, TuningThatHelpedIsFaster) {
  RunRecord a = run(1, "before", {tcp_stage("server->client", {50, 51, 49, 49.5, 52})});
  RunRecord b = run(2, "after", {tcp_stage("server->client", {100, 101, 99, 100.5, 98})});
  Comparison c = compare_runs(a, b);
  EXPECT_EQ(c.a.id, 1);
  EXPECT_EQ(c.b.label, "after");
  ASSERT_EQ(c.rows.size(), 1u);
  const RowDelta& d = c.rows[0];
  EXPECT_EQ(d.key, "tcp:server->client:send");
  EXPECT_NEAR(d.a.median, 50e6, 1);
  EXPECT_NEAR(d.b.median, 100e6, 1);
  EXPECT_NEAR(d.delta, 1.0, 1e-9);
  // No overlap and no ties, 5 vs 5: the exact p = 2/252.
  EXPECT_NEAR(d.test.p, 2.0 / 252, 1e-12);
  EXPECT_EQ(d.verdict, "faster");
  EXPECT_EQ(d.a_samples.size(), 5u);
  EXPECT_EQ(d.b_ids[0], 1000);  // the stored sample behind the first figure
  // Swapped, the same runs read as slower.
  EXPECT_EQ(compare_runs(b, a).rows[0].verdict, "slower");
}

TEST(Compare, NoiseIsNoChange) {
  RunRecord a = run(1, "", {tcp_stage("server->client", {100, 101, 99, 100, 102})});
  RunRecord b = run(2, "", {tcp_stage("server->client", {101, 99, 100, 102, 100.5})});
  Comparison c = compare_runs(a, b);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, "no change");
  EXPECT_GT(c.rows[0].test.p, 0.05);
  EXPECT_TRUE(c.rows[0].note.empty());
}

TEST(Compare, FewSamplesCannotShowAChange) {
  RunRecord a = run(
      1, "", {tcp_stage("server->client", {50, 51, 49}), tcp_stage("client->server", {50, 51})});
  RunRecord b =
      run(2, "",
          {tcp_stage("server->client", {100, 101, 99}), tcp_stage("client->server", {100, 101})});
  Comparison c = compare_runs(a, b);
  const RowDelta* three = row(c, "tcp:server->client:send");
  ASSERT_NE(three, nullptr);
  // 3 vs 3, fully separated: p = 0.1 at best.
  EXPECT_EQ(three->verdict, "no change");
  EXPECT_NEAR(three->test.p, 0.1, 1e-12);
  EXPECT_NE(three->note.find("3 vs 3 samples cannot show a change"), std::string::npos);
  const RowDelta* two = row(c, "tcp:client->server:send");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->verdict, "too few samples");
  EXPECT_NE(two->note.find("2 vs 2 samples"), std::string::npos);
}

TEST(Compare, RowsInOnlyOneRunAreListed) {
  RunRecord a = run(1, "",
                    {tcp_stage("server->client", {50, 51, 49, 50}),
                     disk_stage("server", "read", 100'000'000, {70, 71, 72, 73})});
  RunRecord b = run(2, "",
                    {tcp_stage("server->client", {50, 51, 49, 50}),
                     disk_stage("client", "write", 10'000'000, {90, 91, 92, 93})});
  Comparison c = compare_runs(a, b);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.only_a, std::vector<std::string>{"server disk read, 100 MB files"});
  EXPECT_EQ(c.only_b, std::vector<std::string>{"client disk write, 10 MB files"});
}

TEST(Compare, RefusesRunsWithNothingInCommon) {
  RunRecord a = run(3, "", {tcp_stage("server->client", {50, 51, 49, 50})});
  RunRecord b = run(5, "", {disk_stage("server", "read", 100'000'000, {70, 71, 72, 73})});
  try {
    compare_runs(a, b);
    FAIL() << "compared runs with no common stage";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_STREQ(e.what(),
                 "runs 3 and 5 measured nothing in common: only in run 3: TCP server -> client; "
                 "only in run 5: server disk read, 100 MB files");
    EXPECT_FALSE(e.hint().empty());
  }
  // A run without samples has nothing to compare either.
  RunRecord empty = run(6, "", {});
  EXPECT_THROW(compare_runs(a, empty), Error);
}

TEST(Compare, EnvironmentDifferencesAreListed) {
  RunRecord a = run(1, "before", {tcp_stage("server->client", {50, 51, 49, 50})});
  RunRecord b = run(2, "after", {tcp_stage("server->client", {50, 51, 49, 50})});
  b.hosts[0].facts_json = facts("6.1.0-21-amd64", 9000, 4096, "4096 131072 33554432",
                                R"("smb2 max read":"1048576","aio read size":"16384")", "bbbb");
  b.plan_json = R"({"tcp":{"seconds":2,"count":5,"buffer":262144}})";
  Comparison c = compare_runs(a, b);
  std::vector<std::string> got;
  for (const auto& e : c.env)
    got.push_back(fmt::format("{} {}: {} -> {}", e.where, e.what, e.a, e.b));
  const std::vector<std::string> want = {
      "plan tcp.buffer: 131072 -> 262144",
      "server kernel: 6.1.0-18-amd64 -> 6.1.0-21-amd64",
      "server net.mtu: 1500 -> 9000",
      "server disk_dir.device.read_ahead_kb: 128 -> 4096",
      "server tcp_sysctls.net.ipv4.tcp_rmem: 4096 131072 6291456 -> 4096 131072 33554432",
      "server samba.sha256: aaaa -> bbbb",
      "server samba.global.smb2 max read: 65536 -> 1048576",
      "server samba.global.max xmit: 65535 -> (default)",
      "server samba.global.aio read size: (default) -> 16384",
  };
  // avail_bytes and the agent's memory differ too, but nobody changed them.
  EXPECT_EQ(got, want);
}

TEST(Compare, SameRunHasNoChangeAndNoDifferences) {
  RunRecord a = run(1, "", {tcp_stage("server->client", {50, 51, 49, 50, 52})});
  Comparison c = compare_runs(a, a);
  EXPECT_EQ(c.rows[0].verdict, "no change");
  EXPECT_DOUBLE_EQ(c.rows[0].delta, 0);
  EXPECT_TRUE(c.env.empty());
}

TEST(Compare, JudgeDeltaUsesTheTest) {
  RowDelta d;
  d.a.median = 100;
  d.b.median = 90;
  d.test.n1 = d.test.n2 = 10;
  d.test.p = 0.01;
  judge_delta(d);
  EXPECT_EQ(d.verdict, "slower");
  d.test.p = 0.2;
  judge_delta(d);
  EXPECT_EQ(d.verdict, "no change");
}

}  // namespace
}  // namespace cp::analysis
