#include "analysis/compare.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/testing/run_records.h"

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

// A disk stage (layer "disk", where "server"/"client") or a protocol stage
// (layer = driver, where = "ram"/"disk"): files of `size` bytes at `mbps`.
StageRecord file_stage(const std::string& layer, const std::string& where, const std::string& op,
                       uint64_t size, const std::vector<double>& mbps) {
  StageRecord st;
  st.layer = layer;
  st.where = where;
  st.status = kComplete;
  for (double v : mbps) st.samples.push_back(cp::testing::file_sample(op, size, v));
  return st;
}

StageRecord disk_stage(const std::string& where, const std::string& op, uint64_t size,
                       const std::vector<double>& mbps) {
  return file_stage("disk", where, op, size, mbps);
}

// `mbps` scaled by `factor`: the same spread at another level.
std::vector<double> times(const std::vector<double>& mbps, double factor) {
  std::vector<double> out;
  for (double v : mbps) out.push_back(v * factor);
  return out;
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
  static_cast<RunHead&>(r) = cp::testing::complete_run(id, label, "local");
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

// Server facts as run() has them, with other TCP buffers.
std::string bigger_rmem_facts() {
  return facts("6.1.0-18-amd64", 1500, 128, "4096 131072 33554432",
               R"("smb2 max read":"65536","max xmit":"65535")", "aaaa");
}

// Server facts as run() has them, with one more Samba parameter.
std::string samba_changed_facts() {
  return facts("6.1.0-18-amd64", 1500, 128, "4096 131072 6291456",
               R"("smb2 max read":"65536","max xmit":"65535","aio read size":"1")", "bbbb");
}

TEST(Compare, TuningThatHelpedIsFaster) {
  RunRecord a = run(1, "before", {tcp_stage("server->client", {50, 51, 49, 49.5, 52})});
  RunRecord b = run(2, "after", {tcp_stage("server->client", {100, 101, 99, 100.5, 98})});
  b.hosts[0].facts_json = bigger_rmem_facts();  // a TCP change: it can touch the TCP row
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
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
  EXPECT_TRUE(d.affected_by_change);
  EXPECT_EQ(d.affected_by, std::vector<std::string>{"server tcp_sysctls.net.ipv4.tcp_rmem"});
  EXPECT_EQ(d.family, 1u);
  EXPECT_NEAR(d.p_corrected, 2.0 / 252, 1e-12);  // alone in its family
  EXPECT_EQ(d.verdict, DeltaVerdict::kFaster);
  EXPECT_EQ(d.a_samples.size(), 5u);
  EXPECT_EQ(d.b_ids[0], 1000);  // the stored sample behind the first figure
  // Swapped, the same runs read as slower.
  EXPECT_EQ(compare_runs(stored::decode(b), stored::decode(a)).rows[0].verdict,
            DeltaVerdict::kSlower);
  // No control row: no drift measured, the change is held against its spread only.
  EXPECT_TRUE(c.drift.controls.empty());
  EXPECT_FALSE(c.drift.nothing_recorded);
}

TEST(Compare, NoiseIsNoChange) {
  RunRecord a = run(1, "", {tcp_stage("server->client", {100, 101, 99, 100, 102})});
  RunRecord b = run(2, "", {tcp_stage("server->client", {101, 99, 100, 102, 100.5})});
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, DeltaVerdict::kNoChange);
  EXPECT_GT(c.rows[0].test.p, 0.05);
  EXPECT_TRUE(c.rows[0].note.empty());
}

TEST(Compare, FewSamplesCannotShowAChange) {
  RunRecord a = run(
      1, "", {tcp_stage("server->client", {50, 51, 49}), tcp_stage("client->server", {50, 51})});
  RunRecord b =
      run(2, "",
          {tcp_stage("server->client", {100, 101, 99}), tcp_stage("client->server", {100, 101})});
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  const RowDelta* three = row(c, "tcp:server->client:send");
  ASSERT_NE(three, nullptr);
  // 3 vs 3, fully separated: p = 0.1 at best.
  EXPECT_EQ(three->verdict, DeltaVerdict::kNoChange);
  EXPECT_NEAR(three->test.p, 0.1, 1e-12);
  EXPECT_EQ(three->note, "cannot_show");
  EXPECT_EQ(three->note_numbers.at("n1"), 3);
  EXPECT_EQ(three->note_numbers.at("n2"), 3);
  const RowDelta* two = row(c, "tcp:client->server:send");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->verdict, DeltaVerdict::kTooFew);
  EXPECT_EQ(two->note, "too_few");
  EXPECT_EQ(two->note_numbers.at("n1"), 2);
  EXPECT_EQ(two->note_numbers.at("n2"), 2);
  // Nothing differs: both rows are controls, but 2 vs 2 cannot measure drift.
  EXPECT_TRUE(c.drift.nothing_recorded);
  EXPECT_EQ(c.drift.controls, std::vector<std::string>{"tcp:server->client:send"});
  EXPECT_EQ(c.drift.too_few, 1u);
}

TEST(Compare, RowsInOnlyOneRunAreListed) {
  RunRecord a = run(1, "",
                    {tcp_stage("server->client", {50, 51, 49, 50}),
                     disk_stage("server", "read", 100'000'000, {70, 71, 72, 73})});
  RunRecord b = run(2, "",
                    {tcp_stage("server->client", {50, 51, 49, 50}),
                     disk_stage("client", "write", 10'000'000, {90, 91, 92, 93})});
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  ASSERT_EQ(c.rows.size(), 1u);
  ASSERT_EQ(c.only_a.size(), 1u);
  EXPECT_EQ(c.only_a[0].layer, "disk");
  EXPECT_EQ(c.only_a[0].where, "server");
  EXPECT_EQ(c.only_a[0].op, "read");
  EXPECT_EQ(c.only_a[0].size, 100'000'000u);
  ASSERT_EQ(c.only_b.size(), 1u);
  EXPECT_EQ(c.only_b[0].layer, "disk");
  EXPECT_EQ(c.only_b[0].where, "client");
  EXPECT_EQ(c.only_b[0].op, "write");
  EXPECT_EQ(c.only_b[0].size, 10'000'000u);
}

// Runs with no measured row in common leave no row to compare: each run's
// rows are listed as its own (report/compare_report.h refuses the pair).
TEST(Compare, RunsWithNothingInCommonHaveNoRows) {
  RunRecord a = run(3, "", {tcp_stage("server->client", {50, 51, 49, 50})});
  RunRecord b = run(5, "", {disk_stage("server", "read", 100'000'000, {70, 71, 72, 73})});
  const Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  EXPECT_TRUE(c.rows.empty());
  ASSERT_EQ(c.only_a.size(), 1u);
  EXPECT_EQ(c.only_a[0].layer, "tcp");
  ASSERT_EQ(c.only_b.size(), 1u);
  EXPECT_EQ(c.only_b[0].layer, "disk");
  // A run without samples has nothing to compare either.
  RunRecord empty = run(6, "", {});
  const Comparison none = compare_runs(stored::decode(a), stored::decode(empty));
  EXPECT_TRUE(none.rows.empty());
  EXPECT_TRUE(none.only_b.empty());
}

TEST(Compare, EnvironmentDifferencesAreListed) {
  RunRecord a = run(1, "before", {tcp_stage("server->client", {50, 51, 49, 50})});
  RunRecord b = run(2, "after", {tcp_stage("server->client", {50, 51, 49, 50})});
  b.hosts[0].facts_json = facts("6.1.0-21-amd64", 9000, 4096, "4096 131072 33554432",
                                R"("smb2 max read":"1048576","aio read size":"16384")", "bbbb");
  b.plan_json = R"({"tcp":{"seconds":2,"count":5,"buffer":262144}})";
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
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
  Comparison c = compare_runs(stored::decode(a), stored::decode(a));
  EXPECT_EQ(c.rows[0].verdict, DeltaVerdict::kNoChange);
  EXPECT_DOUBLE_EQ(c.rows[0].delta, 0);
  EXPECT_TRUE(c.env.empty());
}

TEST(Compare, JudgeDeltaUsesTheCorrectedTest) {
  RowDelta d;
  d.a.median = 100;
  d.b.median = 90;
  d.delta = -0.1;
  d.spread = 0.02;
  d.affected_by_change = true;
  d.test.n1 = d.test.n2 = 10;
  d.test.p = 0.01;
  d.p_corrected = 0.01;
  d.family = 1;
  const Drift none;
  judge_delta(d, none);
  EXPECT_EQ(d.verdict, DeltaVerdict::kSlower);
  d.p_corrected = 0.06;  // the same p among 6 rows
  d.family = 6;
  judge_delta(d, none);
  EXPECT_EQ(d.verdict, DeltaVerdict::kNoChange);
  EXPECT_EQ(d.note, "not_significant");
  EXPECT_DOUBLE_EQ(d.note_numbers.at("p"), 0.01);
  EXPECT_DOUBLE_EQ(d.note_numbers.at("family"), 6);
}

TEST(Compare, JudgeDeltaWantsAChangeBeyondTheSamplesSpread) {
  RowDelta d;
  d.delta = 0.10;
  d.affected_by_change = true;
  d.test.n1 = d.test.n2 = 30;
  d.test.p = d.p_corrected = 1e-6;
  d.family = 1;
  d.spread = 0.25;  // IQR/median 25 %: a 10 % move is inside it
  judge_delta(d, Drift{});
  EXPECT_EQ(d.verdict, DeltaVerdict::kNoChange);
  d.spread = 0.05;
  judge_delta(d, Drift{});
  EXPECT_EQ(d.verdict, DeltaVerdict::kFaster);
}

TEST(Compare, JudgeDeltaHoldsAChangeAgainstTheDriftBand) {
  Drift drift;
  drift.controls = {"disk:server:read:100000000", "disk:client:read:100000000"};
  drift.median = 0.0;
  drift.spread = 1.25;
  drift.low = -0.2;
  drift.high = 0.25;
  RowDelta d;
  d.affected_by_change = true;
  d.test.n1 = d.test.n2 = 10;
  d.test.p = d.p_corrected = 1e-4;
  d.family = 1;
  d.spread = 0.02;
  d.delta = 0.15;  // inside the controls' -20 % .. +25 %
  judge_delta(d, drift);
  EXPECT_EQ(d.verdict, DeltaVerdict::kDrift);
  d.delta = -0.35;
  judge_delta(d, drift);
  EXPECT_EQ(d.verdict, DeltaVerdict::kSlower);
  // A control that moves is drift whatever its size.
  d.affected_by_change = false;
  judge_delta(d, drift);
  EXPECT_EQ(d.verdict, DeltaVerdict::kDrift);
  // With a band of width 0 (one control), a change within its own spread
  // of the drift's median is drift too.
  Drift one;
  one.controls = {"tcp:server->client:send"};
  one.median = one.low = one.high = 0.30;
  d.affected_by_change = true;
  d.delta = 0.31;
  judge_delta(d, one);
  EXPECT_EQ(d.verdict, DeltaVerdict::kDrift);
  d.delta = 0.60;
  judge_delta(d, one);
  EXPECT_EQ(d.verdict, DeltaVerdict::kFaster);
}

// The verdict issue: only Samba changed between the runs, yet the disks
// moved 20 % both ways. The disk and TCP rows are controls, their movement
// is drift, and an SMB change inside that band is drift too; one beyond it
// counts.
TEST(Compare, SambaOnlyChangeWithDisksMovingBothWaysIsDrift) {
  const std::vector<double> flat6 = {100, 101, 99, 100.5, 99.5, 100.2};
  const std::vector<double> flat5 = {100, 101, 99, 100.5, 99.5};
  auto stages = [&](double disk_w, double disk_r, double smb_ram, double smb_disk) {
    return std::vector<StageRecord>{
        disk_stage("server", "write", 100'000'000, times(flat6, 1.0 * disk_w)),
        disk_stage("server", "read", 100'000'000, times(flat6, 1.5 * disk_r)),
        disk_stage("client", "write", 100'000'000, times(flat6, 0.9 * disk_r)),
        disk_stage("client", "read", 100'000'000, times(flat6, 1.8 * disk_w)),
        tcp_stage("server->client", {117, 116.5, 117.2, 116.8, 117.1}),
        tcp_stage("client->server", {117, 116, 117.3, 116.6, 116.9}),
        file_stage("smb", "ram", "read", 100'000'000, times(flat5, 0.5 * smb_ram)),
        file_stage("smb", "disk", "read", 100'000'000, times(flat5, 0.4 * smb_disk)),
        file_stage("ftp", "disk", "read", 100'000'000, times(flat5, 0.7 * disk_r)),
    };
  };
  RunRecord a = run(1, "before", stages(1, 1, 1, 1));
  RunRecord b = run(2, "after", stages(0.8, 1.2, 1.15, 1.5));
  b.hosts[0].facts_json = samba_changed_facts();
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  ASSERT_EQ(c.rows.size(), 9u);
  for (const char* key :
       {"disk:server:write:100000000", "disk:server:read:100000000", "disk:client:write:100000000",
        "disk:client:read:100000000", "ftp:disk:read:100000000"}) {
    const RowDelta* d = row(c, key);
    ASSERT_NE(d, nullptr) << key;
    EXPECT_FALSE(d->affected_by_change) << key;
    EXPECT_NEAR(std::abs(d->delta), 0.2, 1e-9) << key;
    EXPECT_LT(d->p_corrected, kSignificance) << key;  // they did move
    EXPECT_EQ(d->verdict, DeltaVerdict::kDrift) << key;
  }
  for (const char* key : {"tcp:server->client:send", "tcp:client->server:send"}) {
    EXPECT_FALSE(row(c, key)->affected_by_change) << key;
    EXPECT_EQ(row(c, key)->verdict, DeltaVerdict::kNoChange) << key;
  }
  // Controls: 4 disks, 2 TCP, FTP from disk; their median change is 0.
  EXPECT_EQ(c.drift.controls.size(), 7u);
  EXPECT_FALSE(c.drift.nothing_recorded);
  EXPECT_NEAR(c.drift.median, 0, 0.01);
  // On ratios: the largest move is x0.8, so the band is /1.25 .. x1.25.
  EXPECT_NEAR(c.drift.spread, 1.25, 0.01);
  EXPECT_NEAR(c.drift.low, -0.2, 0.01);
  EXPECT_NEAR(c.drift.high, 0.25, 0.01);
  EXPECT_EQ(c.drift.moved, 5u);
  const RowDelta* smb_ram = row(c, "smb:ram:read:100000000");
  EXPECT_TRUE(smb_ram->affected_by_change);
  EXPECT_EQ(smb_ram->family, 2u);
  EXPECT_LT(smb_ram->p_corrected, kSignificance);
  EXPECT_EQ(smb_ram->verdict, DeltaVerdict::kDrift);  // +15 %: inside -20 % .. +20 %
  const RowDelta* smb_disk = row(c, "smb:disk:read:100000000");
  EXPECT_EQ(smb_disk->verdict, DeltaVerdict::kFaster);  // +50 %: beyond the drift
  // Every changed Samba parameter is listed, and touches only SMB (and
  // mounted-path) rows.
  std::vector<std::string> samba;
  for (const auto& e : c.env) {
    EXPECT_EQ(e.kind, "Samba configuration") << e.what;
    EXPECT_EQ(e.parts, (std::vector<std::string>{"smb", "path"})) << e.what;
    samba.push_back(e.what + ": " + e.a + " -> " + e.b);
  }
  EXPECT_EQ(samba, (std::vector<std::string>{"samba.sha256: aaaa -> bbbb",
                                             "samba.global.aio read size: (default) -> 1"}));
}

TEST(Compare, DoubledRowWithQuietControlsCounts) {
  RunRecord a =
      run(1, "before",
          {disk_stage("server", "read", 100'000'000, {70, 71, 72, 73, 70.5}),
           tcp_stage("server->client", {117, 116.5, 117.2, 116.8, 117.1}),
           file_stage("smb", "ram", "read", 100'000'000, {49.1, 50.2, 49.6, 50.0, 49.4})});
  RunRecord b =
      run(2, "after",
          {disk_stage("server", "read", 100'000'000, {71, 70.2, 72.5, 72.8, 71.9}),
           tcp_stage("server->client", {116.9, 117.1, 116.7, 117.0, 117.3}),
           file_stage("smb", "ram", "read", 100'000'000, {98.5, 100.1, 99.2, 99.9, 98.8})});
  b.hosts[0].facts_json = samba_changed_facts();
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  const RowDelta* smb = row(c, "smb:ram:read:100000000");
  ASSERT_NE(smb, nullptr);
  EXPECT_TRUE(smb->affected_by_change);
  EXPECT_NEAR(smb->delta, 1.0, 0.01);
  EXPECT_EQ(smb->verdict, DeltaVerdict::kFaster);
  EXPECT_EQ(c.drift.controls,
            (std::vector<std::string>{"disk:server:read:100000000", "tcp:server->client:send"}));
  EXPECT_LT(std::abs(c.drift.median), 0.01);
  EXPECT_EQ(c.drift.moved, 0u);
  EXPECT_EQ(row(c, "disk:server:read:100000000")->verdict, DeltaVerdict::kNoChange);
  EXPECT_EQ(row(c, "tcp:server->client:send")->verdict, DeltaVerdict::kNoChange);
}

// A control whose median doubles within its own noise (not significant)
// is noise, not drift: it does not widen the band, and a real doubling of an
// affected row still counts.
TEST(Compare, ANoisyControlThatDidNotMoveLeavesTheBandNarrow) {
  // Both runs' reads, MB/s: the server disk, the client disk, TCP and SMB from RAM.
  using Mbps = std::vector<double>;
  auto reads = [](int id, const std::string& label, Mbps server, Mbps client, Mbps tcp, Mbps smb) {
    return run(id, label,
               {disk_stage("server", "read", 100'000'000, server),
                disk_stage("client", "read", 100'000'000, client), tcp_stage("server->client", tcp),
                file_stage("smb", "ram", "read", 100'000'000, smb)});
  };
  RunRecord a = reads(1, "before", {70, 71, 72, 73, 70.5}, {40, 50, 60, 300, 320, 340},
                      {117, 116.5, 117.2, 116.8, 117.1}, {49.1, 50.2, 49.6, 50.0, 49.4});
  RunRecord b = reads(2, "after", {71, 70.2, 72.5, 72.8, 71.9}, {45, 55, 400, 420, 430, 440},
                      {116.9, 117.1, 116.7, 117.0, 117.3}, {98.5, 100.1, 99.2, 99.9, 98.8});
  b.hosts[0].facts_json = samba_changed_facts();
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  const RowDelta* noisy = row(c, "disk:client:read:100000000");
  EXPECT_GT(noisy->delta, 1.0);                        // its median more than doubled...
  EXPECT_EQ(noisy->verdict, DeltaVerdict::kNoChange);  // ...within its noise
  EXPECT_EQ(c.drift.controls.size(), 3u);
  EXPECT_EQ(c.drift.moved, 0u);
  EXPECT_DOUBLE_EQ(c.drift.spread, 1);
  EXPECT_EQ(row(c, "smb:ram:read:100000000")->verdict, DeltaVerdict::kFaster);
}

// A kernel change on the server can touch every row that involves the
// server: 8 rows in one family. A 4 vs 4 row apart (p = 2/70 = 0.029) would
// count alone; among 8 rows Holm makes it 8 x 0.029 = 0.23.
TEST(Compare, HolmDemotesAMarginalPAmongManyRows) {
  const std::vector<double> same = {70, 71, 72, 73};
  auto stages = [&](double smb) {
    return std::vector<StageRecord>{
        disk_stage("server", "write", 10'000'000, same),
        disk_stage("server", "read", 10'000'000, same),
        disk_stage("server", "write", 100'000'000, same),
        disk_stage("server", "read", 100'000'000, same),
        tcp_stage("server->client", same),
        tcp_stage("client->server", same),
        file_stage("ftp", "ram", "read", 100'000'000, same),
        file_stage("smb", "ram", "read", 100'000'000, times(same, smb)),
        disk_stage("client", "read", 100'000'000, same),  // the server's kernel cannot touch it
    };
  };
  RunRecord a = run(1, "before", stages(1));
  RunRecord b = run(2, "after", stages(1.3));
  b.hosts[0].facts_json = facts("6.1.0-21-amd64", 1500, 128, "4096 131072 6291456",
                                R"("smb2 max read":"65536","max xmit":"65535")", "aaaa");
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  const RowDelta* smb = row(c, "smb:ram:read:100000000");
  ASSERT_NE(smb, nullptr);
  EXPECT_NEAR(smb->test.p, 2.0 / 70, 1e-12);
  EXPECT_EQ(smb->family, 8u);
  EXPECT_NEAR(smb->p_corrected, 8 * 2.0 / 70, 1e-12);
  EXPECT_GT(std::abs(smb->delta), smb->spread);  // the spread is not what holds it back
  EXPECT_EQ(smb->verdict, DeltaVerdict::kNoChange);
  EXPECT_EQ(smb->affected_by, std::vector<std::string>{"server kernel"});
  EXPECT_FALSE(row(c, "disk:client:read:100000000")->affected_by_change);
  EXPECT_EQ(c.drift.controls, std::vector<std::string>{"disk:client:read:100000000"});
  // The same runs with the change touching only SMB: a family of one, it counts.
  b.hosts[0].facts_json = samba_changed_facts();
  const Comparison alone = compare_runs(stored::decode(a), stored::decode(b));
  EXPECT_EQ(row(alone, "smb:ram:read:100000000")->family, 1u);
  EXPECT_EQ(row(alone, "smb:ram:read:100000000")->verdict, DeltaVerdict::kFaster);
}

// 20 samples a side spread evenly over +-20 % of the median, B 10 % up: the
// test finds the shift, but it is inside the samples' own spread.
TEST(Compare, OverlappingSpreadsAreNoChange) {
  std::vector<double> spread;
  for (int i = 0; i < 20; ++i) spread.push_back(40 + i * 20.0 / 19);
  RunRecord a = run(1, "", {file_stage("smb", "ram", "read", 100'000'000, spread)});
  RunRecord b = run(2, "", {file_stage("smb", "ram", "read", 100'000'000, times(spread, 1.1))});
  b.hosts[0].facts_json = samba_changed_facts();
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  ASSERT_EQ(c.rows.size(), 1u);
  const RowDelta& d = c.rows[0];
  EXPECT_TRUE(d.affected_by_change);
  EXPECT_NEAR(d.delta, 0.1, 1e-9);
  EXPECT_LT(d.p_corrected, kSignificance);  // significant...
  EXPECT_NEAR(d.spread, 0.2, 0.01);         // ...but IQR/median is 20 %
  EXPECT_EQ(d.verdict, DeltaVerdict::kNoChange);
  EXPECT_EQ(d.note, "within_spread");
  EXPECT_DOUBLE_EQ(d.note_numbers.at("spread"), d.spread);
}

TEST(Compare, NothingRecordedMakesEveryRowAControl) {
  RunRecord a = run(1, "",
                    {tcp_stage("server->client", {50, 51, 49, 49.5, 52}),
                     disk_stage("server", "read", 100'000'000, {70, 71, 72, 73, 70.5})});
  RunRecord b = run(2, "",
                    {tcp_stage("server->client", {100, 101, 99, 100.5, 98}),
                     disk_stage("server", "read", 100'000'000, {71, 70.2, 72.5, 72.8, 71})});
  b.plan_json = R"({"source":"other.ini","tcp":{"seconds":2,"count":5,"buffer":131072}})";
  Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  // The plan file's name differs, which changes nothing measured.
  ASSERT_EQ(c.env.size(), 1u);
  EXPECT_TRUE(c.env[0].parts.empty());
  EXPECT_TRUE(c.drift.nothing_recorded);
  EXPECT_EQ(c.drift.controls.size(), 2u);
  const RowDelta* tcp = row(c, "tcp:server->client:send");
  EXPECT_FALSE(tcp->affected_by_change);
  EXPECT_EQ(tcp->verdict, DeltaVerdict::kDrift);  // doubled, but nothing recorded explains it
  EXPECT_EQ(c.drift.moved, 1u);
  EXPECT_EQ(row(c, "disk:server:read:100000000")->verdict, DeltaVerdict::kNoChange);
}

// Which rows each kind of change can touch (kChangeRules).
TEST(Compare, EachKindOfChangeTouchesItsLayers) {
  const std::vector<double> s = {70, 71, 72, 73};
  RunRecord a = run(
      1, "",
      {disk_stage("server", "read", 100'000'000, s), disk_stage("client", "read", 100'000'000, s),
       tcp_stage("server->client", s), file_stage("smb", "ram", "read", 100'000'000, s),
       file_stage("smb", "disk", "read", 100'000'000, s),
       file_stage("ftp", "ram", "read", 100'000'000, s)});
  auto affected = [&](const RunRecord& b) {
    std::vector<std::string> keys;
    for (const auto& d : compare_runs(stored::decode(a), stored::decode(b)).rows)
      if (d.affected_by_change) keys.push_back(d.key);
    return keys;
  };
  RunRecord b = a;
  // Readahead of the server's disk: its disk rows and protocols from disk.
  b.hosts[0].facts_json = facts("6.1.0-18-amd64", 1500, 4096, "4096 131072 6291456",
                                R"("smb2 max read":"65536","max xmit":"65535")", "aaaa");
  EXPECT_EQ(affected(b),
            (std::vector<std::string>{"disk:server:read:100000000", "smb:disk:read:100000000"}));
  // MTU: everything over the network, no disk row.
  b.hosts[0].facts_json = facts("6.1.0-18-amd64", 9000, 128, "4096 131072 6291456",
                                R"("smb2 max read":"65536","max xmit":"65535")", "aaaa");
  EXPECT_EQ(affected(b),
            (std::vector<std::string>{"tcp:server->client:send", "smb:ram:read:100000000",
                                      "smb:disk:read:100000000", "ftp:ram:read:100000000"}));
  // A TCP sysctl: the same.
  b.hosts[0].facts_json = bigger_rmem_facts();
  EXPECT_EQ(affected(b).size(), 4u);
  // A share's options: that share's protocol only.
  b = a;
  a.plan_json = R"({"shares":[{"name":"smb-ram","driver":"smb","options":{}},)"
                R"({"name":"ftp-ram","driver":"ftp","options":{}}]})";
  b.plan_json = R"({"shares":[{"name":"smb-ram","driver":"smb","options":{"max_read":"1MiB"}},)"
                R"({"name":"ftp-ram","driver":"ftp","options":{}}]})";
  EXPECT_EQ(affected(b),
            (std::vector<std::string>{"smb:ram:read:100000000", "smb:disk:read:100000000"}));
  // The client's kernel: every row but the server's disk.
  b = a;
  b.hosts[1].facts_json = R"({"hostname":"mac","kernel":"24.1","net":{"mtu":1500}})";
  EXPECT_EQ(affected(b).size(), 5u);
  EXPECT_EQ(compare_runs(stored::decode(a), stored::decode(b)).drift.controls,
            std::vector<std::string>{"disk:server:read:100000000"});
  // Another chokepoint version: every row.
  b = a;
  b.version = "0.2.0";
  EXPECT_EQ(affected(b).size(), 6u);
}

// A run whose smbd config was not read (facts "samba": null) against one
// that has it: its parameters are not known, not at their defaults.
TEST(Compare, SambaParametersOfAnUnreadConfigAreAbsentNotDefault) {
  RunRecord a = run(1, "", {tcp_stage("server->client", {50, 51, 49, 50})});
  RunRecord b = a;
  a.hosts[0].facts_json = R"({"hostname":"nas","samba":null})";
  b.hosts[0].facts_json =
      R"({"hostname":"nas","samba":{"config_path":"/etc/samba/smb.conf","found_by":"default",)"
      R"("source":"testparm","sha256":"bbbb","global":{"smb2 max read":"1048576",)"
      R"("server multi channel support":"yes"}}})";
  std::vector<std::string> got;
  for (const auto& e : compare_runs(stored::decode(a), stored::decode(b)).env)
    got.push_back(fmt::format("{} {}: {} -> {}", e.where, e.what, e.a, e.b));
  EXPECT_EQ(
      got, (std::vector<std::string>{
               "server samba.config_path: (absent) -> /etc/samba/smb.conf",
               "server samba.found_by: (absent) -> default",
               "server samba.source: (absent) -> testparm", "server samba.sha256: (absent) -> bbbb",
               "server samba.global.smb2 max read: (absent) -> 1048576",
               "server samba.global.server multi channel support: (absent) -> yes"}));
}

// A protocol stage whose samples record `properties` (a JSON object's members).
StageRecord proto_stage(const std::string& layer, const std::string& where,
                        const std::vector<double>& mbps, const std::string& properties) {
  StageRecord st = file_stage(layer, where, "read", 100'000'000, mbps);
  for (auto& s : st.samples) s.details_json = R"({"properties":{)" + properties + "}}";
  return st;
}

// The second run's SMB sessions were encrypted (the server's config changed
// where its facts do not show): compare names what the samples recorded, and
// the SMB rows are the ones it touches; the client's own measurements (round
// trips) and the FTP row are no difference and no change.
TEST(Compare, WhatTheProtocolNegotiatedIsADifferenceTouchingItsRows) {
  const std::vector<double> s = {70, 71, 72, 73};
  auto smb = [&](const std::string& where, const char* encryption, const char* rtt) {
    return proto_stage("smb", where, s,
                       fmt::format(R"("smb_encryption":"{}","smb_dialect":"SMB3_11",)"
                                   R"("path_rtt_ms":"{}")",
                                   encryption, rtt));
  };
  RunRecord a = run(1, "",
                    {smb("ram", "none", "0.1"), smb("disk", "none", "0.1"),
                     proto_stage("ftp", "ram", s, R"("tls":"none")")});
  RunRecord b = run(2, "",
                    {smb("ram", "AES-128-GCM", "0.2"), smb("disk", "AES-128-GCM", "0.3"),
                     proto_stage("ftp", "ram", s, R"("tls":"none")")});
  const Comparison c = compare_runs(stored::decode(a), stored::decode(b));
  ASSERT_EQ(c.env.size(), 1u);
  EXPECT_EQ(c.env[0].where, "negotiated");
  EXPECT_EQ(c.env[0].what, "smb.smb_encryption");
  EXPECT_EQ(c.env[0].a, "none");
  EXPECT_EQ(c.env[0].b, "AES-128-GCM");
  EXPECT_EQ(c.env[0].parts, std::vector<std::string>{"smb"});
  EXPECT_EQ(c.env[0].rows,
            (std::vector<std::string>{"smb:ram:read:100000000", "smb:disk:read:100000000"}));
  std::vector<std::string> affected;
  for (const auto& d : c.rows)
    if (d.affected_by_change) affected.push_back(d.key);
  EXPECT_EQ(affected,
            (std::vector<std::string>{"smb:ram:read:100000000", "smb:disk:read:100000000"}));
  EXPECT_EQ(row(c, "smb:ram:read:100000000")->affected_by,
            std::vector<std::string>{"negotiated smb.smb_encryption"});
}

// Rows of one driver that negotiated differently show every value; a driver
// only one run measured is no difference of its own (its rows are "only in").
TEST(Compare, NegotiatedValuesOfSeveralRowsAreListedOnce) {
  const std::vector<double> s = {70, 71, 72, 73};
  RunRecord a = run(1, "",
                    {proto_stage("nfs", "ram", s, R"("version":"3","wsize":"1048576")"),
                     proto_stage("nfs", "disk", s, R"("version":"3","wsize":"65536")"),
                     proto_stage("afp", "ram", s, R"("uam":"DHX2")")});
  RunRecord b = run(2, "",
                    {proto_stage("nfs", "ram", s, R"("version":"4","wsize":"1048576")"),
                     proto_stage("nfs", "disk", s, R"("version":"4","wsize":"1048576")")});
  std::vector<std::string> got;
  for (const auto& e : negotiated_diff(analyze(stored::decode(a)), analyze(stored::decode(b))))
    got.push_back(fmt::format("{}: {} -> {}", e.what, e.a, e.b));
  EXPECT_EQ(got, (std::vector<std::string>{"nfs.version: 3 -> 4",
                                           "nfs.wsize: 1048576 | 65536 -> 1048576"}));
}

// Two smbd on the server host (the facts' samba_instances), the SMB samples
// served by the second, whose config changed between the runs (and whose pid
// did: it restarted) while the host's default `samba` did not: compare names
// the serving instance's parameter as the server's `samba`, and not the
// instance list itself (pids differ from run to run).
TEST(Compare, TheSambaConfigDiffedIsThatOfTheSmbdServingTheSamples) {
  auto build = [](int64_t id, int pid, const char* max_read, const char* sha) {
    const std::string first =
        R"j({"config_path":"/etc/samba/smb.conf","found_by":"running smbd (pid 700)",)j"
        R"("source":"testparm","sha256":"aaaa","global":{"smb2 max read":"262144"}})";
    StageRecord st = file_stage("smb", "ram", "read", 100'000'000, {70, 71, 72, 73});
    for (auto& smp : st.samples) {
      smp.cpu_json = fmt::format(R"({{"server":{{"seconds":2,"server_pid":{}}}}})", pid);
    }
    RunRecord r = run(id, "", {st});
    r.hosts[0].facts_json = fmt::format(
        R"({{"hostname":"nas","samba":{},"samba_instances":[{},)"
        R"({{"pid":{},"config_path":"/nas/smb.conf","found_by":"running smbd","source":"testparm",)"
        R"("sha256":"{}","global":{{"smb2 max read":"{}"}}}}]}})",
        first, first.substr(0, first.size() - 1) + R"(,"pid":700})", pid, sha, max_read);
    return r;
  };
  const Comparison c = compare_runs(stored::decode(build(1, 900, "65536", "bbbb")),
                                    stored::decode(build(2, 901, "131072", "cccc")));
  std::vector<std::string> got;
  for (const auto& e : c.env)
    got.push_back(fmt::format("{} {}: {} -> {}", e.where, e.what, e.a, e.b));
  EXPECT_EQ(got, (std::vector<std::string>{"server samba.sha256: bbbb -> cccc",
                                           "server samba.global.smb2 max read: 65536 -> 131072"}));
}

}  // namespace
}  // namespace cp::analysis
