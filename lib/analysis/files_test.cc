// The small-file rows of each end's disk in the ladder (ops/s, Row::unit) and
// their run-wide notes files.disk_cpu and files.disk_latency (files_rules.cc),
// from stored samples shaped as pipeline/stages/files.cc stores them.
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
using testing::names_layer;

// The first finding made by `rule` ("files.disk" ...), or nullptr.
const Finding* finding(const Analysis& a, const std::string& rule) {
  return testing::finding_by_rule(a, rule);
}

struct Phase {
  std::string op;  // "files-create" ..
  uint64_t ops;
  double seconds;
  double median_us, p99_us, max_us;
};

// One stored small-file stage, its phases a sample each: on an end's disk
// (`where` "server" | "client", `driver` "") or over a share (`where` its
// medium, `driver` its protocol, as files_share_stage stores it); `cpu`: each
// sample's CPU record (JSON) or ""; `cache_possible`: its reads flagged so;
// `in_flight`: the mean kept; `extra`: more details members (",\"k\":v").
void add_stage(RunRecord& run, const std::string& where, const std::string& order,
               const std::string& driver, const std::vector<Phase>& phases, const std::string& cpu,
               bool cache_possible, double in_flight = 1, const std::string& extra = "") {
  StageRecord st;
  st.layer = "files";
  st.where = where;
  st.status = "complete";
  for (const Phase& p : phases) {
    SampleRecord s;
    s.op = p.op;
    s.size = 4096;
    s.bytes = p.op == "files-create" || p.op == "files-read" ? p.ops * 4096 : 0;
    s.seconds = p.seconds;
    s.cache_possible = cache_possible && p.op == "files-read";
    s.id = int64_t(run.stages.size() * 100 + st.samples.size() + 1);
    const std::string share =
        driver.empty() ? ""
                       : fmt::format(R"(,"share":"{}-{}","driver":"{}")", driver, where, driver);
    s.details_json =
        fmt::format(R"({{"count":1000,"ops":{},"dirs":10,"order":"{}","in_flight_mean":{},)"
                    R"("latency_us":{{"median":{},"p99":{},"max":{}}},"fs_type":"ext4"{}{}{}}})",
                    p.ops, order, in_flight, p.median_us, p.p99_us, p.max_us, share,
                    s.cache_possible ? R"(,"cache_reason":"zfs: the ARC keeps them")" : "", extra);
    s.cpu_json = cpu;
    st.samples.push_back(s);
  }
  run.stages.push_back(st);
}

void add_files(RunRecord& run, const std::string& where, const std::string& order,
               const std::vector<Phase>& phases, const std::string& cpu = "") {
  add_stage(run, where, order, "", phases, cpu, false);
}

void add_share_files(RunRecord& run, const std::string& driver, const std::string& medium,
                     const std::vector<Phase>& phases, const std::string& cpu = "",
                     bool cache_possible = false) {
  add_stage(run, medium, "sequential", driver, phases, cpu, cache_possible);
}

// A TCP stage whose samples saw an idle RTT of `rtt_us`.
void add_tcp(RunRecord& run, double rtt_us) {
  StageRecord st;
  st.layer = "tcp";
  st.where = "server->client";
  st.status = "complete";
  for (int i = 0; i < 3; ++i) {
    SampleRecord s;
    s.op = "send";
    s.bytes = 1'000'000'000;
    s.seconds = 10;
    s.id = 900 + i;
    s.details_json = fmt::format(
        R"({{"tcp_info":{{"available":true,"busy_s":10,"rtt_us":{},"rtt_idle_us":{}}}}})",
        rtt_us * 2, rtt_us);
    st.samples.push_back(s);
  }
  run.stages.push_back(st);
}

TEST(FilesRows, EachPhaseAndOrderIsARowInOperationsPerSecond) {
  RunRecord run;
  add_files(run, "server", "sequential",
            {{"files-create", 1000, 0.5, 400, 900, 2000},
             {"files-stat", 1000, 0.01, 8, 20, 40},
             {"files-read", 1000, 0.25, 200, 500, 900},
             {"files-delete", 1000, 0.125, 100, 300, 600}});
  add_files(run, "server", "random", {{"files-create", 640, 0.8, 900, 2000, 5000}});
  const Analysis a = analyzed(run);
  const Row* create = find_row(a, "files:server:create:4096");
  ASSERT_NE(create, nullptr);
  EXPECT_EQ(create->unit, RowUnit::kOps);
  EXPECT_EQ(create->layer, "files");
  EXPECT_DOUBLE_EQ(create->rate.median, 2000);  // 1000 ops / 0.5 s, not bytes/s
  EXPECT_DOUBLE_EQ(create->latency_median_us, 400);
  EXPECT_DOUBLE_EQ(create->latency_max_us, 2000);
  const Row* del = find_row(a, "files:server:delete:4096");
  ASSERT_NE(del, nullptr);
  EXPECT_DOUBLE_EQ(del->rate.median, 8000);
  // The random pass is a row of its own, its figure the ops it reached.
  const Row* random = find_row(a, "files:server:random-create:4096");
  ASSERT_NE(random, nullptr);
  EXPECT_DOUBLE_EQ(random->rate.median, 800);
  // Not a protocol: no protocol verdict judges it.
  EXPECT_FALSE(is_protocol_row(*create));
  for (const auto& f : a.findings) EXPECT_NE(f.rule.rfind("protocol.", 0), 0u) << f.rule;
}

TEST(FilesRows, AWorstOperationFarAboveTheMedianIsADiskLatencyNote) {
  RunRecord run;
  // seed 002's NAS SSD: 224 creates/s with a 537 ms worst case.
  add_files(run, "server", "sequential", {{"files-create", 224, 1.0, 3000, 9000, 537000}});
  add_files(run, "client", "sequential", {{"files-create", 1000, 0.1, 90, 200, 900}});
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "files.disk_latency");
  ASSERT_TRUE(names_layer(f, "server disk"));
  EXPECT_EQ(f->rows, std::vector<std::string>{"files:server:create:4096"});
  EXPECT_DOUBLE_EQ(f->numbers.at("max_us"), 537000);
  EXPECT_DOUBLE_EQ(f->numbers.at("median_us"), 3000);
  int notes = 0;
  for (const auto& x : a.findings) notes += x.rule == "files.disk_latency";
  EXPECT_EQ(notes, 1);  // the client's 10x tail under 50 ms is no stall
}

TEST(FilesRows, APhaseWithTheAgentThreadAtACoreIsADiskCpuNoteNotACpuBoundOne) {
  RunRecord run;
  const std::string cpu =
      R"({"server":{"seconds":2,"core_busy_pct":[99,3],"core_busy_max_pct":[100,5],)"
      R"("total_busy_pct":51,"agent_pct":99,"top":[{"pid":9,"comm":"chokepoint-agen",)"
      R"("cpu_pct":99,"top_thread_pct":99,"role":"agent"}]}})";
  add_files(run, "server", "sequential", {{"files-stat", 100000, 2, 15, 30, 90}}, cpu);
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "files.disk_cpu");
  ASSERT_TRUE(names_layer(f, "cpu"));
  EXPECT_EQ(f->cpu.host, "server");
  EXPECT_TRUE(f->lower_bound);  // chokepoint's own agent at a core
  EXPECT_EQ(finding(a, "cpu.bound"), nullptr);
  EXPECT_FALSE(a.has_verdict());  // a note, not a path's verdict
}

// A share's small files are rows of their own, keyed by protocol and
// medium, apart from the end's disk rows and from the protocol's big files.
TEST(FilesShares, EachShareAndPhaseIsARowKeyedByProtocolAndMedium) {
  RunRecord run;
  add_share_files(
      run, "smb", "disk",
      {{"files-create", 1000, 2, 900, 3000, 9000}, {"files-read", 1000, 4, 1800, 5000, 9000}});
  add_files(run, "server", "sequential", {{"files-create", 1000, 0.5, 400, 900, 2000}});
  const Analysis a = analyzed(run);
  const Row* create = find_row(a, "files:smb:disk:create:4096");
  ASSERT_NE(create, nullptr);
  EXPECT_EQ(create->driver, "smb");
  EXPECT_EQ(create->where, "disk");
  EXPECT_EQ(create->unit, RowUnit::kOps);
  EXPECT_DOUBLE_EQ(create->rate.median, 500);
  EXPECT_DOUBLE_EQ(create->in_flight_mean, 1);
  EXPECT_FALSE(is_protocol_row(*create));
  ASSERT_NE(find_row(a, "files:server:create:4096"), nullptr);
}

// seed 000's complaint over a WAN: each create costs SMB's 3 round trips of
// 10 ms, so about 33 creates/s at most one at a time; at 30/s the round trips
// cap it, whatever the disk does.
TEST(FilesShares, CreatesNearWhatTheRoundTripsAllowAreCappedByTheRoundTrips) {
  RunRecord run;
  add_tcp(run, 10'000);
  add_share_files(run, "smb", "disk", {{"files-create", 300, 10, 33'000, 40'000, 60'000}});
  add_files(run, "server", "sequential", {{"files-create", 1000, 0.5, 400, 900, 2000}});
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "files.round_trips");
  ASSERT_TRUE(names_layer(f, "round trips"));
  EXPECT_EQ(f->path, "smb disk files create");
  EXPECT_DOUBLE_EQ(f->numbers.at("round_trips"), 3);
  EXPECT_NEAR(f->numbers.at("ceiling_ops_per_s"), 1 / 0.03, 1e-6);
  EXPECT_NEAR(f->ratio, 30 / (1 / 0.03), 1e-9);
  EXPECT_TRUE(a.has_verdict());
}

// A short path (50 us): the round trips allow thousands/s; a disk share
// within 10 % of the server disk's own create rate is capped by the disk.
// The round trips a share's sessions reported (here 8 a create, libnfs's
// path walk) are held, not the driver table's fewest: at 1 ms, 125/s at most
// one at a time, so 120/s is capped by them.
TEST(FilesShares, TheRoundTripsTheSessionsReportedOverrideTheDriverTable) {
  RunRecord run;
  add_tcp(run, 1000);
  add_stage(run, "ram", "sequential", "nfs", {{"files-create", 120, 1, 8300, 9000, 12000}}, "",
            false, 1, R"(,"round_trips":8)");
  add_files(run, "server", "sequential", {{"files-create", 20000, 1, 40, 90, 200}});
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "files.round_trips");
  ASSERT_TRUE(names_layer(f, "round trips"));
  EXPECT_DOUBLE_EQ(f->numbers.at("round_trips"), 8);
  EXPECT_NEAR(f->numbers.at("ceiling_ops_per_s"), 125, 1e-6);
  EXPECT_EQ(f->words.at("bound"), "in_flight");
}

// NFSv4.0: 5 round trips a create, 2 of them (OPEN, CLOSE) taking turns on the
// connection. With 8 in flight at 1 ms the overlapped bound is 1600/s, but the
// turns allow 500/s whatever is in flight: 480/s is capped by the turns. The
// same figures with no serial round trip are far below 1600/s: not capped.
TEST(FilesShares, RoundTripsThatTakeTurnsCapCreatesWhateverIsInFlight) {
  for (const int serial : {2, 0}) {
    RunRecord run;
    add_tcp(run, 1000);
    add_stage(run, "ram", "sequential", "nfs", {{"files-create", 480, 1, 16000, 20000, 30000}}, "",
              false, 8, fmt::format(R"(,"round_trips":5,"serial_round_trips":{})", serial));
    add_files(run, "server", "sequential", {{"files-create", 20000, 1, 40, 90, 200}});
    const Analysis a = analyzed(run);
    const Finding* f = finding(a, "files.round_trips");
    if (serial == 0) {
      EXPECT_EQ(f, nullptr);
      continue;
    }
    ASSERT_TRUE(names_layer(f, "round trips"));
    EXPECT_DOUBLE_EQ(f->numbers.at("serial_round_trips"), 2);
    EXPECT_NEAR(f->numbers.at("ceiling_ops_per_s"), 500, 1e-6);
    EXPECT_NEAR(f->ratio, 480.0 / 500, 1e-9);
    EXPECT_EQ(f->words.at("bound"), "turns");
  }
}

// Every core busy (other jobs beside the agent) while the creates run at what
// the round trips allow (30/s of 33/s at 10 ms): the round trips hold them,
// busy or not. Further below the ceiling (15/s) the busy cores are named.
TEST(FilesShares, EveryCoreBusyDoesNotOverrideCreatesAtTheRoundTripCeiling) {
  const std::string busy =
      R"({"server":{"seconds":2,"total_busy_pct":97,"agent_pct":60,"other_pct":120,)"
      R"("top":[{"comm":"chokepoint-agen","role":"agent","cpu_pct":60,"top_thread_pct":60}]}})";
  for (const uint64_t ops : {300, 150}) {
    RunRecord run;
    add_tcp(run, 10'000);
    add_share_files(run, "smb", "disk", {{"files-create", ops, 10, 33'000, 40'000, 60'000}}, busy);
    add_files(run, "server", "sequential", {{"files-create", 1000, 0.5, 400, 900, 2000}});
    const Analysis a = analyzed(run);
    const Finding* f = testing::finding(a, "smb disk files create");
    ASSERT_NE(f, nullptr) << ops;
    EXPECT_EQ(f->rule, ops == 300 ? "files.round_trips" : "files.cpu") << ops;
    if (ops == 150) EXPECT_EQ(f->cpu.kind, "all cores");
  }
}

TEST(FilesShares, ADiskShareAtTheServerDisksOwnRateIsCappedByTheDisk) {
  RunRecord run;
  add_tcp(run, 50);
  add_share_files(run, "nfs", "disk", {{"files-create", 1900, 1, 500, 900, 2000}});
  add_files(run, "server", "sequential", {{"files-create", 2000, 1, 400, 900, 2000}});
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "files.disk");
  ASSERT_TRUE(names_layer(f, "server disk"));
  EXPECT_EQ(f->cap, "files:server:create:4096");
  EXPECT_NEAR(f->ratio, 0.95, 1e-9);
}

// Below both ceilings and no CPU at a core: the protocol's own cost per
// operation; the finding names the protocol and cites the disk's rate.
TEST(FilesShares, BelowTheDiskAndTheRoundTripsTheProtocolLayerCapsIt) {
  RunRecord run;
  add_tcp(run, 50);
  add_share_files(run, "smb", "ram", {{"files-create", 500, 1, 1900, 3000, 5000}});
  add_share_files(run, "smb", "disk", {{"files-read", 400, 1, 2400, 3000, 5000}});
  add_files(run, "server", "sequential",
            {{"files-create", 2000, 1, 400, 900, 2000}, {"files-read", 3000, 1, 300, 900, 2000}});
  const Analysis a = analyzed(run);
  int layers = 0;
  for (const auto& f : a.findings) {
    if (f.rule != "files.layer") continue;
    ++layers;
    EXPECT_EQ(f.layer, "smb") << f.path;
    EXPECT_GT(f.numbers.at("disk_ops_per_s"), 0) << f.path;
    EXPECT_NEAR(f.numbers.at("latency_rtts"), f.numbers.at("latency_median_us") / 50, 1e-9);
  }
  EXPECT_EQ(layers, 2);  // the RAM share's create and the disk share's read
}

// A file server thread at a core during the phase: the CPU caps it, before
// any other rule.
TEST(FilesShares, ThePhasesCpuAtACoreIsTheCpu) {
  RunRecord run;
  add_tcp(run, 10'000);
  const std::string cpu =
      R"({"server":{"seconds":2,"core_busy_pct":[99,3],"core_busy_max_pct":[100,5],)"
      R"("total_busy_pct":51,"server_pct":99,"top":[{"pid":9,"comm":"smbd",)"
      R"("cpu_pct":99,"top_thread_pct":99,"role":"server"}]}})";
  add_share_files(run, "smb", "ram", {{"files-create", 300, 10, 33'000, 40'000, 60'000}}, cpu);
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "files.cpu");
  ASSERT_TRUE(names_layer(f, "cpu"));
  EXPECT_EQ(f->cpu.process, "smbd");
  EXPECT_EQ(finding(a, "files.round_trips"), nullptr);
  EXPECT_EQ(finding(a, "cpu.bound"), nullptr);  // judged once
}

// The client agent's own CPU on the client end, % of a core (no thread at a
// core: no CPU-bound row).
std::string client_agent_cpu(double pct) {
  return fmt::format(
      R"({{"client":{{"seconds":2,"core_busy_pct":[{0},3],"core_busy_max_pct":[{0},5],)"
      R"("total_busy_pct":{1},"agent_pct":{0},"top":[{{"pid":7,"comm":"chokepoint-agen",)"
      R"("cpu_pct":{0},"top_thread_pct":{0},"role":"agent"}}]}}}})",
      pct, pct / 2);
}

// Below both ceilings with chokepoint's client computing most of each
// operation: the client paces it (a lower bound); at a third, the protocol.
TEST(FilesShares, AClientAgentBusyMostOfEachOperationPacesItAsALowerBound) {
  for (const double pct : {70.0, 30.0}) {
    RunRecord run;
    add_tcp(run, 50);
    add_share_files(run, "ftp", "ram", {{"files-create", 500, 1, 1900, 3000, 5000}},
                    client_agent_cpu(pct));
    const Analysis a = analyze(stored::decode(run));
    const Finding* client = finding(a, "files.client");
    if (pct < 100 * kClientCpuShare) {
      EXPECT_EQ(client, nullptr) << pct;
      const Finding* layer = finding(a, "files.layer");
      ASSERT_NE(layer, nullptr) << pct;
      EXPECT_EQ(layer->layer, "ftp");
      continue;
    }
    ASSERT_NE(client, nullptr) << pct;
    EXPECT_EQ(client->layer, "probe");
    EXPECT_TRUE(client->lower_bound);
    EXPECT_NEAR(client->numbers.at("client_cpu_share"), pct / 100, 1e-9);
    // 0.7 of a core over 500 creates/s: 1400 us of CPU per create.
    EXPECT_NEAR(client->numbers.at("client_cpu_us_per_op"), pct / 100 / 500 * 1e6, 1e-6);
    EXPECT_EQ(finding(a, "files.layer"), nullptr);
  }
}

// Reads a cache may have served (the server could not drop them): cannot tell.
TEST(FilesShares, ReadsACacheMayHaveServedAreUndecided) {
  RunRecord run;
  add_tcp(run, 50);
  add_share_files(run, "nfs", "disk", {{"files-read", 5000, 1, 150, 400, 900}}, "", true);
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "files.untrusted");
  ASSERT_TRUE(names_layer(f, "undecided"));
  EXPECT_EQ(f->candidates, (std::vector<std::string>{"cache", "nfs"}));
}

}  // namespace
}  // namespace cp::analysis
