#include "analysis/ladder.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace cp::analysis {
namespace {

// Builds runs from figures in MB/s, like the hand method reported them.
class RunBuilder {
 public:
  RunBuilder& host(const std::string& role, int mtu, double speed_mbit, double shaped_bits = 0) {
    std::string shaped = shaped_bits > 0 ? fmt::format("{}", shaped_bits) : "null";
    run_.hosts.push_back(
        {role, role,
         fmt::format(R"({{"hostname":"{}","net":{{"name":"eth0","mtu":{},"speed_mbit":{},)"
                     R"("shaped_rate_bit":{}}}}})",
                     role, mtu, speed_mbit, shaped)});
    return *this;
  }
  RunBuilder& disk(const std::string& where, const std::string& op, uint64_t size,
                   std::vector<double> mbps, bool cache = false) {
    StageRecord& st = stage("disk", where);
    for (double v : mbps) {
      SampleRecord s;
      s.op = op;
      s.size = size;
      s.bytes = size;
      s.seconds = double(size) / (v * 1e6);
      s.cache_possible = cache;
      s.cpu_json =
          fmt::format(R"({{"{}":{{"seconds":1,"core_busy_pct":[20,10],"top":[]}}}})", where);
      st.samples.push_back(s);
    }
    return *this;
  }
  RunBuilder& tcp(const std::string& where, std::vector<double> mbps, double core_pct = 30,
                  double rwnd_frac = 0, uint64_t retrans = 0) {
    StageRecord& st = stage("tcp", where);
    for (double v : mbps) {
      SampleRecord s;
      s.op = "send";
      s.seconds = 2;
      s.bytes = static_cast<uint64_t>(v * 1e6 * 2);
      s.details_json = fmt::format(
          R"({{"tcp_info":{{"available":true,"busy_s":2,"rwnd_limited_s":{},"sndbuf_limited_s":0,)"
          R"("retransmits":{}}}}})",
          2 * rwnd_frac, retrans);
      s.cpu_json = fmt::format(R"({{"server":{{"seconds":{},"core_busy_pct":[{},5],)"
                               R"("top":[{{"comm":"chokepoint-agen","cpu_pct":{}}}]}},)"
                               R"("client":{{"seconds":2,"core_busy_pct":[10,5],"top":[]}}}})",
                               cpu_window_s_, core_pct, core_pct);
      st.samples.push_back(s);
    }
    return *this;
  }
  RunBuilder& proto(const std::string& layer, const std::string& medium, const std::string& op,
                    std::vector<double> mbps, double server_core = 30,
                    const std::string& process = "smbd") {
    StageRecord& st = stage(layer, medium);
    for (double v : mbps) {
      SampleRecord s;
      s.op = op;
      s.size = 100'000'000;
      s.bytes = s.size;
      s.seconds = double(s.size) / (v * 1e6);
      s.cpu_json = fmt::format(
          R"({{"server":{{"seconds":2,"core_busy_pct":[{},3],"top":[{{"comm":"{}","cpu_pct":{}}}]}}}})",
          server_core, process, server_core);
      st.samples.push_back(s);
    }
    return *this;
  }
  RunBuilder& cpu_window(double s) {
    cpu_window_s_ = s;
    return *this;
  }
  RunRecord build() { return run_; }

 private:
  StageRecord& stage(const std::string& layer, const std::string& where) {
    for (auto& s : run_.stages)
      if (s.layer == layer && s.where == where) return s;
    StageRecord s;
    s.layer = layer;
    s.where = where;
    s.status = kComplete;
    run_.stages.push_back(s);
    return run_.stages.back();
  }
  RunRecord run_;
  double cpu_window_s_ = 2;
};

const Finding* finding(const Analysis& a, const std::string& path) {
  for (const auto& f : a.findings)
    if (f.path == path) return &f;
  return nullptr;
}

// ../shared/seeds/README.md: Linux RAID server (read 71.7/75.6, write
// 104.9/99.8 MB/s), Mac SSD client (read 163/183, write 121/93), iperf 117 MB/s
// on 1 GbE. The author's conclusion: the network is at its ceiling for TCP;
// the server's disks are what a disk-to-disk copy waits on.
RunRecord seed_run() {
  return RunBuilder()
      .host("server", 1500, 1000)
      .host("client", 1500, 1000)
      .disk("server", "write", 10'000'000, {104.9})
      .disk("server", "write", 100'000'000, {99.8})
      .disk("server", "read", 10'000'000, {71.7})
      .disk("server", "read", 100'000'000, {75.6})
      .disk("client", "write", 10'000'000, {121})
      .disk("client", "write", 100'000'000, {93})
      .disk("client", "read", 10'000'000, {163})
      .disk("client", "read", 100'000'000, {183})
      .tcp("server->client", {117, 117, 117})
      .tcp("client->server", {117, 116, 117})
      .build();
}

TEST(Ladder, SeedLadderRowsAndRatios) {
  Analysis a = analyze(seed_run());
  EXPECT_DOUBLE_EQ(a.link_bits, 1e9);
  const Row* tcp = find_row(a, "tcp:server->client:send");
  ASSERT_NE(tcp, nullptr);
  EXPECT_NEAR(tcp->rate.median, 117e6, 1);
  EXPECT_EQ(tcp->below, "link");
  EXPECT_NEAR(tcp->ratio, 0.936, 1e-3);
  const Row* sr = find_row(a, "disk:server:read:100000000");
  ASSERT_NE(sr, nullptr);
  EXPECT_NEAR(sr->rate.median, 75.6e6, 1);
}

TEST(Ladder, SeedVerdictReadsLikeTheAuthors) {
  Analysis a = analyze(seed_run());
  const Finding* down = finding(a, "server -> client");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->layer, "server disk");
  EXPECT_NE(down->text.find("it reads 75.6 MB/s (100 MB files)"), std::string::npos) << down->text;
  EXPECT_NE(down->text.find("TCP carries 117 MB/s"), std::string::npos) << down->text;
  const Finding* up = finding(a, "client -> server");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->layer, "server disk");
  EXPECT_NE(up->text.find("writes 99.8 MB/s"), std::string::npos) << up->text;
  EXPECT_EQ(a.headline, down->text);
  const Finding* tcp = finding(a, "tcp");
  ASSERT_NE(tcp, nullptr);
  EXPECT_EQ(tcp->layer, "network");
  EXPECT_NE(tcp->text.find("reaches 94 % of the 1 Gbit/s link"), std::string::npos) << tcp->text;
}

// The seed's protocol ladder: TCP 117, FTP 100, AFP 67, Samba 50 over RAM;
// from the RAID: Samba 38, AFP 50. "CIFS has a lot of overhead."
RunRecord seed_protocol_run() {
  RunRecord run = seed_run();
  RunRecord p = RunBuilder()
                    .proto("smb", "ram", "read", {49.1, 50.2})
                    .proto("ftp", "ram", "read", {99.1, 101.6})
                    .proto("afp", "ram", "read", {67.0, 67.4})
                    .proto("smb", "disk", "read", {37.4, 39.2})
                    .proto("afp", "disk", "read", {46.1, 53.3})
                    .build();
  for (auto& st : p.stages) run.stages.push_back(st);
  return run;
}

TEST(Ladder, SeedProtocolsAgainstTcp) {
  Analysis a = analyze(seed_protocol_run());
  const Row* smb = find_row(a, "smb:ram:read:100000000");
  ASSERT_NE(smb, nullptr);
  EXPECT_EQ(smb->below, "tcp:server->client:send");
  EXPECT_NEAR(smb->ratio, 49.65 / 117, 1e-3);
  const Finding* f = finding(a, "smb ram read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layer, "smb");
  EXPECT_NE(f->text.find("SMB from RAM read moves 49.6 MB/s = 42 % of TCP (117 MB/s): the SMB "
                         "layer caps it"),
            std::string::npos)
      << f->text;
  EXPECT_NE(f->text.find("smb2 max read"), std::string::npos);
  EXPECT_NE(f->text.find("`max xmit` only affects SMB1"), std::string::npos);
  // From disk: held against min(SMB from RAM 49.6, server disk 75.6).
  const Row* smb_disk = find_row(a, "smb:disk:read:100000000");
  ASSERT_NE(smb_disk, nullptr);
  EXPECT_EQ(smb_disk->below, "smb:ram:read:100000000");
  const Finding* d = finding(a, "smb disk read");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->text.find("SMB from RAM moves 49.6 MB/s, the server disk reads 75.6 MB/s"),
            std::string::npos)
      << d->text;
  // The headline is the user's real path: a file from the server's disk.
  EXPECT_EQ(a.headline, d->text);
}

TEST(Ladder, ProtocolAtTcpCeilingNamesTheLayerBeneath) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 1000)
                      .host("client", 1500, 1000)
                      .tcp("server->client", {117})
                      .proto("ftp", "ram", "read", {112})
                      .build();
  const Finding* f = finding(analyze(run), "ftp ram read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layer, "network");
  EXPECT_NE(f->text.find("at TCP's ceiling"), std::string::npos) << f->text;
}

TEST(Ladder, StarvedProtocolServerIsCpuBound) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 10000)
                      .host("client", 1500, 10000)
                      .tcp("server->client", {2000})
                      .proto("smb", "ram", "read", {300}, 100, "smbd")
                      .build();
  const Finding* f = finding(analyze(run), "smb ram read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layer, "smb (cpu)");
  EXPECT_NE(f->text.find("the SMB layer caps it; the server is CPU-bound: a core at 100 % (smbd at "
                         "100 %)"),
            std::string::npos)
      << f->text;
}

TEST(Ladder, ThrottledServerDiskCapsTheDiskShare) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 10000)
                      .host("client", 1500, 10000)
                      .tcp("server->client", {2000})
                      .disk("server", "read", 100'000'000, {52})
                      .proto("ftp", "ram", "read", {750})
                      .proto("ftp", "disk", "read", {51})
                      .build();
  Analysis a = analyze(run);
  const Finding* f = finding(a, "ftp disk read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layer, "server disk");
  EXPECT_NE(f->text.find("the server disk caps it"), std::string::npos) << f->text;
  EXPECT_NE(f->text.find("blockdev --setra"), std::string::npos);
  EXPECT_EQ(a.headline, f->text);
}

TEST(Ladder, ShapedLinkNamesTheNetwork) {
  // A 200 Mbit/s tbf: TCP 23.9 MB/s, disks far faster.
  RunRecord run = RunBuilder()
                      .host("server", 1500, 10000, 200e6)
                      .host("client", 1500, 10000, 200e6)
                      .disk("server", "read", 100'000'000, {1100})
                      .disk("client", "write", 100'000'000, {3000})
                      .tcp("server->client", {23.9, 23.8, 24.0})
                      .build();
  Analysis a = analyze(run);
  EXPECT_DOUBLE_EQ(a.link_bits, 200e6);
  EXPECT_NE(a.link_source.find("tc rate"), std::string::npos);
  const Finding* down = finding(a, "server -> client");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->layer, "network");
  EXPECT_NE(down->text.find("96 % of the 200 Mbit/s link"), std::string::npos) << down->text;
}

TEST(Ladder, ShortTcpWithWindowEvidence) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 1000)
                      .host("client", 9000, 1000)
                      .tcp("server->client", {28.75, 29, 28.5}, 30, 0.8, 12)
                      .build();
  Analysis a = analyze(run);
  const Finding* down = finding(a, "server -> client");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->layer, "tcp");
  EXPECT_NE(down->text.find("reaches only 23 % of the 1 Gbit/s link"), std::string::npos)
      << down->text;
  EXPECT_NE(down->text.find("receive-window-limited 80 % of the time"), std::string::npos);
  // 12 retransmits in each of 3 samples.
  EXPECT_NE(down->text.find("36 retransmits"), std::string::npos);
  EXPECT_NE(down->text.find("MTU differs: server 1500 vs client 9000"), std::string::npos);
  EXPECT_NE(finding(a, "mtu"), nullptr);
}

TEST(Ladder, SaturatedCoreMeansCpuBound) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 10000)
                      .host("client", 1500, 10000)
                      .tcp("server->client", {400, 410, 390}, 99)
                      .build();
  Analysis a = analyze(run);
  const Finding* down = finding(a, "server -> client");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->layer, "cpu");
  EXPECT_NE(down->text.find("CPU-bound on the server"), std::string::npos) << down->text;
  EXPECT_NE(down->text.find("chokepoint-agen at 99 %"), std::string::npos) << down->text;
}

TEST(Ladder, ShortCpuWindowsAreNotEvidence) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 10000)
                      .host("client", 1500, 10000)
                      .cpu_window(0.01)
                      .tcp("server->client", {400}, 100)
                      .build();
  Analysis a = analyze(run);
  // Only the client's 2 s window (10 %) counts; the server's 0.01 s one does not.
  EXPECT_DOUBLE_EQ(find_row(a, "tcp:server->client:send")->max_core_pct, 10);
  EXPECT_NE(finding(a, "server -> client")->layer, "cpu");
}

TEST(Ladder, TcpVerdictIsNotRepeated) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 1000)
                      .host("client", 1500, 1000)
                      .tcp("server->client", {117})
                      .build();
  Analysis a = analyze(run);
  EXPECT_EQ(finding(a, "server -> client")->layer, "network");
  EXPECT_EQ(finding(a, "tcp"), nullptr);
}

TEST(Ladder, TcpAboveNominalLinkIsCalledOut) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 10000)
                      .host("client", 1500, 10000)
                      .tcp("server->client", {2400})
                      .build();
  Analysis a = analyze(run);
  const Finding* tcp = finding(a, "server -> client");
  ASSERT_NE(tcp, nullptr);
  EXPECT_NE(tcp->text.find("above the link's nominal 10 Gbit/s"), std::string::npos) << tcp->text;
}

TEST(Ladder, CacheAndFailuresAreFlagged) {
  RunRecord run = RunBuilder()
                      .host("server", 1500, 1000)
                      .host("client", 1500, 1000)
                      .disk("server", "read", 10'000'000, {900, 950}, /*cache=*/true)
                      .build();
  SampleRecord bad;
  bad.op = "read";
  bad.size = 10'000'000;
  bad.error = "disk full";
  run.stages[0].samples.push_back(bad);
  Analysis a = analyze(run);
  const Row* r = find_row(a, "disk:server:read:10000000");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->rate.n, 2u);
  EXPECT_EQ(r->failed, 1u);
  EXPECT_EQ(r->cache_possible, 2u);
  const Finding* cache = finding(a, "cache");
  ASSERT_NE(cache, nullptr);
  EXPECT_NE(cache->text.find("cache suspected: 2 of 2 samples"), std::string::npos);
  EXPECT_NE(finding(a, "errors"), nullptr);
}

TEST(Ladder, PlanLinkOverridesInterfaces) {
  RunRecord run = RunBuilder().host("server", 1500, 10000).host("client", 1500, 10000).build();
  run.plan_json = R"({"link":{"nominal_bits":1000000000}})";
  Analysis a = analyze(run);
  EXPECT_DOUBLE_EQ(a.link_bits, 1e9);
  EXPECT_EQ(a.link_source, "set in the plan");
  EXPECT_NE(a.headline.find("no verdict"), std::string::npos);
}

}  // namespace
}  // namespace cp::analysis
