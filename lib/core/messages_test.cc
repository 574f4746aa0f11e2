#include "core/messages.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/testing/error_of.h"
#include "core/testing/sample_messages.h"

namespace cp::msg {
namespace {

namespace json = boost::json;

// Encodes, serialises, parses and decodes as the peer would: every field survives.
template <class T>
T round_trip(const T& m) {
  return decode<T>(json::parse(json::serialize(to_json(m))), "test");
}

using testing::sample_cpu;
using testing::sample_tcp_info;

// Decodes `j` as a T from the peer, which must refuse it as the peer's error;
// returns the error's message ("" after a failure when it was accepted).
template <class T>
std::string peer_error(const json::value& j, const char* name) {
  return cp::testing::error_of([&] { decode<T>(j, name); }, ErrorKind::kPeer);
}

// The small-file pass a files request asks for (FilesRequest, FilesShareRequest
// alike): count, size, dirs, order, seed and budget.
template <class Request>
auto pass_of(const Request& r) {
  return std::tie(r.count, r.size, r.dirs, r.order, r.seed, r.budget);
}

ShareRef some_share() {
  return {"s1", "smb://h/share", "smb", "u", "secret", {{"connections", "2"}, {"seal", "no"}}};
}

// cpu_start's hint of the sample's server connection; none at all is {} (an
// older orchestrator's), and a port that is no number is a peer's error.
TEST(Messages, CpuStartRequestRoundTrip) {
  const CpuStartRequest q2 = round_trip(CpuStartRequest{445, "198.18.0.2"});
  EXPECT_EQ(q2.port, 445);
  EXPECT_EQ(q2.peer, "198.18.0.2");
  EXPECT_TRUE(to_json(CpuStartRequest{}).empty());
  EXPECT_THROW(decode<CpuStartRequest>(boost::json::parse(R"({"port":"445"})"), "cpu_start"),
               Error);
}

TEST(Messages, DiskRequestAndResultRoundTrip) {
  DiskRequest q{"/d", "write", "f.dat", 4096 * 3, 8192, false};
  DiskRequest q2 = round_trip(q);
  EXPECT_EQ(q2.dir, "/d");
  EXPECT_EQ(q2.op, "write");
  EXPECT_EQ(q2.name, "f.dat");
  EXPECT_EQ(q2.size, 4096u * 3);
  EXPECT_EQ(q2.block, 8192u);
  DiskRequest r{"/d", "read", "f.dat", 0, 1u << 20, true};
  EXPECT_TRUE(round_trip(r).delete_after);

  DiskResult d{123, 0.5, true, true, "O_DIRECT", true, sample_cpu()};
  DiskResult d2 = round_trip(d);
  EXPECT_EQ(d2.bytes, 123u);
  EXPECT_DOUBLE_EQ(d2.seconds, 0.5);
  EXPECT_TRUE(d2.direct);
  EXPECT_TRUE(d2.cache_possible);
  EXPECT_EQ(d2.method, "O_DIRECT");
  EXPECT_TRUE(d2.huge_page);
  EXPECT_DOUBLE_EQ(d2.cpu.seconds, 2.5);
  ASSERT_EQ(d2.cpu.top.size(), 1u);
  EXPECT_EQ(d2.cpu.top[0].comm, "smbd");

  DiskDetails s{"f.dat", "fsync+fadvise", false, true, 1u << 20};
  DiskDetails s2 = read_stored<DiskDetails>(json::serialize(to_json(s)));
  EXPECT_EQ(s2.file, "f.dat");
  EXPECT_EQ(s2.method, "fsync+fadvise");
  EXPECT_FALSE(s2.direct);
  EXPECT_TRUE(s2.huge_page);
  EXPECT_EQ(s2.block, 1u << 20);
}

TEST(Messages, FilesMessagesRoundTrip) {
  const FilesRequest q{"/disk", "files-1", 2000, 512, 20, "random", 99, 12.5};
  const FilesRequest q2 = round_trip(q);
  EXPECT_EQ(q2.dir, "/disk");
  EXPECT_EQ(q2.name, "files-1");
  EXPECT_EQ(pass_of(q2), pass_of(q));

  files::PhaseStats st{files::Phase::remove, 1500, 0, 0.75, {30, 80, 900}, 1, 1, true, ""};
  files::PhaseStats made{files::Phase::create, 1500, 0, 0.5};
  made.sync_seconds = 0.125;  // of its 0.5 s: the syncfs
  const FilesResult r2 =
      round_trip(FilesResult{{{st, sample_cpu()}, {made, sample_cpu()}}, "ext4", true, "zfs: ARC"});
  ASSERT_EQ(r2.phases.size(), 2u);
  EXPECT_DOUBLE_EQ(r2.phases[1].stats.sync_seconds, 0.125);
  EXPECT_DOUBLE_EQ(r2.phases[0].stats.sync_seconds, 0);
  EXPECT_EQ(r2.phases[0].stats.phase, files::Phase::remove);
  EXPECT_EQ(r2.phases[0].stats.ops, 1500u);
  EXPECT_DOUBLE_EQ(r2.phases[0].stats.seconds, 0.75);
  EXPECT_DOUBLE_EQ(r2.phases[0].stats.latency.p99_us, 80);
  EXPECT_DOUBLE_EQ(r2.phases[0].stats.latency.max_us, 900);
  EXPECT_TRUE(r2.phases[0].stats.budget_hit);
  EXPECT_EQ(r2.phases[0].cpu.core_busy_pct, sample_cpu().core_busy_pct);
  EXPECT_EQ(r2.fs_type, "ext4");
  EXPECT_TRUE(r2.cache_possible);
  EXPECT_EQ(r2.cache_reason, "zfs: ARC");

  FilesDetails d;
  d.count = 1000;
  d.ops = 640;
  d.dirs = 10;
  d.order = "sequential";
  d.latency_us = {12, 40, 537000};
  d.budget_hit = true;
  d.fs_type = "ext4";
  d.share = "smb-disk";
  d.driver = "smb";
  d.in_flight_note = "one at a time, as asked";
  d.sync_seconds = 0.25;
  const auto d2 = read_stored<FilesDetails>(json::serialize(to_json(d)));
  EXPECT_EQ(d2.share, "smb-disk");
  EXPECT_EQ(d2.driver, "smb");
  EXPECT_EQ(d2.in_flight_note, d.in_flight_note);
  EXPECT_DOUBLE_EQ(d2.sync_seconds, 0.25);
  EXPECT_EQ(d2.ops, 640u);
  EXPECT_EQ(d2.count, 1000u);
  EXPECT_DOUBLE_EQ(d2.latency_us.max_us, 537000);
  EXPECT_TRUE(d2.budget_hit);
  EXPECT_EQ(d2.order, "sequential");
}

TEST(Messages, FilesPhaseOfAnUnknownNameIsAPeerError) {
  json::object o = to_json(FilesResult{{{files::PhaseStats{}, sample_cpu()}}, "ext4", false, ""});
  o["phases"].as_array()[0].as_object()["phase"] = "rename";
  peer_error<FilesResult>(o, "files");
}

TEST(Messages, TcpMessagesRoundTrip) {
  EXPECT_EQ(round_trip(TcpListenRequest{"::"}).bind, "::");
  EXPECT_EQ(round_trip(TcpListenResult{40001}).port, 40001u);
  TcpRunRequest run{"198.18.0.1", 40001, "up-1-9", "send", 2.5, 65536};
  TcpRunRequest run2 = round_trip(run);
  EXPECT_EQ(run2.host, "198.18.0.1");
  EXPECT_EQ(run2.port, 40001u);
  EXPECT_EQ(run2.token, "up-1-9");
  EXPECT_EQ(run2.mode, "send");
  EXPECT_DOUBLE_EQ(run2.seconds, 2.5);
  EXPECT_EQ(run2.buffer, 65536u);
  TcpResultRequest res{"tok", 12.5};
  EXPECT_EQ(round_trip(res).token, "tok");
  EXPECT_DOUBLE_EQ(round_trip(res).timeout, 12.5);

  TcpResult t{1000, 1.5, true, sample_tcp_info(), sample_cpu()};
  TcpResult t2 = round_trip(t);
  EXPECT_EQ(t2.bytes, 1000u);
  EXPECT_DOUBLE_EQ(t2.seconds, 1.5);
  EXPECT_TRUE(t2.sender);
  const TcpInfo& i = t2.tcp_info;
  EXPECT_TRUE(i.available);
  EXPECT_EQ(i.retransmits, 12u);
  EXPECT_EQ(i.rtt_us, 250u);
  EXPECT_EQ(i.rttvar_us, 30u);
  EXPECT_EQ(i.snd_cwnd, 40u);
  EXPECT_EQ(i.snd_mss, 1448u);
  EXPECT_EQ(i.pmtu, 1500u);
  EXPECT_DOUBLE_EQ(i.busy_s, 1.25);
  EXPECT_DOUBLE_EQ(i.rwnd_limited_s, 0.5);
  EXPECT_DOUBLE_EQ(i.sndbuf_limited_s, 0.25);
  EXPECT_EQ(i.delivery_rate, 117000000u);
  EXPECT_EQ(i.rtt_idle_us, 90u);
  EXPECT_EQ(t2.cpu.core_busy_pct.size(), 2u);

  TcpDetails d{"client", 1000, 1.4, sample_tcp_info(), TcpInfo{}};
  TcpDetails d2 = read_stored<TcpDetails>(json::serialize(to_json(d)));
  EXPECT_EQ(d2.sender, "client");
  EXPECT_EQ(d2.sender_bytes, 1000u);
  EXPECT_DOUBLE_EQ(d2.sender_seconds, 1.4);
  EXPECT_EQ(d2.tcp_info.retransmits, 12u);
  EXPECT_FALSE(d2.receiver_tcp_info.available);
}

// Several streams: the requests' tokens, each stream's figure in the result
// and the stored details; one stream writes none of them (older agents' form).
TEST(Messages, TcpStreamsRoundTripAndOneStreamWritesNone) {
  TcpRunRequest run{"198.18.0.1", 40001, "a", "send", 2, 65536, {"a", "b", "c"}};
  EXPECT_EQ(round_trip(run).tokens, (std::vector<std::string>{"a", "b", "c"}));
  TcpResultRequest res{"a", 10, {"a", "b"}};
  EXPECT_EQ(round_trip(res).tokens, (std::vector<std::string>{"a", "b"}));
  TcpResult t{3000, 2, true, sample_tcp_info(), sample_cpu(), {}};
  EXPECT_FALSE(to_json(t).contains("streams"));
  t.streams = {{1000, 2, sample_tcp_info()}, {2000, 1.9, TcpInfo{}}};
  const TcpResult t2 = round_trip(t);
  ASSERT_EQ(t2.streams.size(), 2u);
  EXPECT_EQ(t2.streams[1].bytes, 2000u);
  EXPECT_DOUBLE_EQ(t2.streams[1].seconds, 1.9);
  EXPECT_EQ(t2.streams[0].tcp_info.rtt_us, 250u);
  TcpDetails d{"server", 3000, 2, sample_tcp_info(), TcpInfo{}, t.streams};
  const TcpDetails d2 = read_stored<TcpDetails>(json::serialize(to_json(d)));
  ASSERT_EQ(d2.streams.size(), 2u);
  EXPECT_EQ(d2.streams[0].bytes, 1000u);
  // A stream without its figure is refused from a peer.
  json::object bad = to_json(t);
  bad["streams"].as_array()[0].as_object().erase("bytes");
  EXPECT_THROW(decode<TcpResult>(bad, "tcp_run"), Error);
}

TEST(Messages, FileMessagesRoundTrip) {
  FileRequest f{"/srv", "a.dat", 5000, 65536, true, true};
  FileRequest f2 = round_trip(f);
  EXPECT_EQ(f2.dir, "/srv");
  EXPECT_EQ(f2.name, "a.dat");
  EXPECT_EQ(f2.size, 5000u);
  EXPECT_EQ(f2.block, 65536u);
  EXPECT_TRUE(f2.evict);
  EXPECT_TRUE(f2.shared);
  FileResult r{5000, 0.1, "abcdef0123456789"};
  FileResult r2 = round_trip(r);
  EXPECT_EQ(r2.bytes, 5000u);
  EXPECT_DOUBLE_EQ(r2.seconds, 0.1);
  EXPECT_EQ(r2.checksum, "abcdef0123456789");
  EXPECT_FALSE(r2.cache_possible);
  // An evicted file a filesystem cache may still serve (ZFS's ARC) says so.
  FileResult z{5000, 0.1, "abcdef0123456789", true, "ZFS ARC"};
  FileResult z2 = round_trip(z);
  EXPECT_TRUE(z2.cache_possible);
  EXPECT_EQ(z2.cache_reason, "ZFS ARC");
}

TEST(Messages, FilesShareRoundTripsAndRefusesAMissingField) {
  FilesShareRequest q;
  q.share = some_share();
  q.root = "run-x/files";
  q.count = 500;
  q.size = 0;
  q.dirs = 5;
  q.order = "random";
  q.seed = 9;
  q.budget = 12.5;
  q.in_flight = 8;
  const FilesShareRequest q2 = round_trip(q);
  EXPECT_EQ(q2.share.driver, "smb");
  EXPECT_EQ(q2.root, "run-x/files");
  EXPECT_EQ(pass_of(q2), pass_of(q));
  EXPECT_EQ(q2.in_flight, 8u);

  FilesShareResult r;
  files::PhaseStats create{files::Phase::create, 500, 2048000, 1.5, {80, 900, 1200}, 3.5, 4, true};
  files::PhaseStats stat{files::Phase::stat, 3, 0, 0.01, {50, 60, 70}};
  stat.error = "denied";
  r.phases.push_back({create, sample_cpu()});
  r.phases.push_back({stat, sample_cpu()});
  r.in_flight = 4;
  r.in_flight_note = "4 sessions";
  r.created = 500;
  r.leftover = "d0003 not empty";
  r.properties = {{"version", "4"}};
  const FilesShareResult r2 = round_trip(r);
  ASSERT_EQ(r2.phases.size(), 2u);
  EXPECT_EQ(r2.phases[0].stats.phase, files::Phase::create);
  EXPECT_EQ(r2.phases[0].stats.ops, 500u);
  EXPECT_EQ(r2.phases[0].stats.bytes, 2048000u);
  EXPECT_DOUBLE_EQ(r2.phases[0].stats.latency.p99_us, 900);
  EXPECT_DOUBLE_EQ(r2.phases[0].stats.in_flight_mean, 3.5);
  EXPECT_EQ(r2.phases[0].stats.in_flight_max, 4u);
  EXPECT_TRUE(r2.phases[0].stats.budget_hit);
  EXPECT_DOUBLE_EQ(r2.phases[0].cpu.seconds, 2.5);
  EXPECT_EQ(r2.phases[1].stats.error, "denied");
  EXPECT_EQ(r2.in_flight, 4u);
  EXPECT_EQ(r2.created, 500u);
  EXPECT_EQ(r2.leftover, "d0003 not empty");
  EXPECT_EQ(r2.properties.at("version"), "4");

  json::object o = to_json(q);
  o.erase("root");
  peer_error<FilesShareRequest>(o, "files_share");
}

TEST(Messages, TransferAndSweepRoundTrip) {
  TransferRequest t{some_share(), "read", "run-x/a.dat", "/ram", "a.dat", 1u << 20, 65536, true};
  TransferRequest t2 = round_trip(t);
  EXPECT_EQ(t2.share.name, "s1");
  EXPECT_EQ(t2.share.url, "smb://h/share");
  EXPECT_EQ(t2.share.driver, "smb");
  EXPECT_EQ(t2.share.user, "u");
  EXPECT_EQ(t2.share.password, "secret");
  EXPECT_EQ(t2.share.options, some_share().options);
  EXPECT_EQ(t2.op, "read");
  EXPECT_EQ(t2.remote, "run-x/a.dat");
  EXPECT_EQ(t2.dir, "/ram");
  EXPECT_EQ(t2.name, "a.dat");
  EXPECT_EQ(t2.size, 1u << 20);
  EXPECT_EQ(t2.block, 65536u);
  EXPECT_TRUE(t2.delete_after);

  TransferResult r{1u << 20, 0.2, "cafe", {{"dialect", "SMB3_11"}}, sample_cpu()};
  TransferResult r2 = round_trip(r);
  EXPECT_EQ(r2.bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(r2.seconds, 0.2);
  EXPECT_EQ(r2.checksum, "cafe");
  EXPECT_EQ(r2.properties.at("dialect"), "SMB3_11");
  EXPECT_EQ(r2.cpu.top.size(), 1u);

  TransferDetails d{"a.dat", "s1", "cafe", {{"io_size", "65536"}}, "tmpfs", "sda"};
  TransferDetails d2 = read_stored<TransferDetails>(json::serialize(to_json(d)));
  EXPECT_EQ(d2.server_fs, "tmpfs");
  EXPECT_EQ(d2.server_disk, "sda");
  EXPECT_EQ(d2.file, "a.dat");
  EXPECT_EQ(d2.share, "s1");
  EXPECT_EQ(d2.checksum, "cafe");
  EXPECT_EQ(d2.properties.at("io_size"), "65536");

  SizeScanRequest s{some_share(), "run-x/s.dat", "randread", 4096, 1u << 20, 2u << 20};
  SizeScanRequest s2 = round_trip(s);
  EXPECT_EQ(s2.share.driver, "smb");
  EXPECT_EQ(s2.remote, "run-x/s.dat");
  EXPECT_EQ(s2.pattern, "randread");
  EXPECT_EQ(s2.request, 4096u);
  EXPECT_EQ(s2.bytes, 1u << 20);
  EXPECT_EQ(s2.file_size, 2u << 20);
  SizeScanResult sr{1u << 20, 0.3, "", sample_cpu()};
  SizeScanResult sr2 = round_trip(sr);
  EXPECT_EQ(sr2.bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(sr2.seconds, 0.3);
  EXPECT_DOUBLE_EQ(sr2.cpu.seconds, 2.5);
  SizeScanDetails sd{"s1", "seqwrite", 65536};
  SizeScanDetails sd2 = read_stored<SizeScanDetails>(json::serialize(to_json(sd)));
  EXPECT_EQ(sd2.share, "s1");
  EXPECT_EQ(sd2.pattern, "seqwrite");
  EXPECT_EQ(sd2.request, 65536u);
}

TEST(Messages, RunDirectoryMessagesRoundTrip) {
  const PrepareRequest q = round_trip(PrepareRequest{{"/ram", "/disk"}, true, 42});
  EXPECT_EQ(q.dirs, (std::vector<std::string>{"/ram", "/disk"}));
  EXPECT_TRUE(q.shared);
  EXPECT_EQ(q.run, 42);
  EXPECT_FALSE(round_trip(PrepareRequest{{"/x"}, false, 0}).shared);

  PrepareResult p;
  p.dirs = {{"/ram", "/ram/chokepoint-run-a"}};
  p.swept = {{"/ram/chokepoint-run-old", "its agent (pid 9, run 3) is gone", ""}};
  const PrepareResult p2 = round_trip(p);
  EXPECT_EQ(p2.dirs.at("/ram"), "/ram/chokepoint-run-a");
  ASSERT_EQ(p2.swept.size(), 1u);
  EXPECT_EQ(p2.swept[0].path, "/ram/chokepoint-run-old");
  EXPECT_EQ(p2.swept[0].reason, "its agent (pid 9, run 3) is gone");

  EXPECT_EQ(round_trip(CleanOrphansRequest{{"/a", "/b"}}).dirs.size(), 2u);
  CleanOrphansResult o;
  o.removed = {{"/a/chokepoint-run-1", "ran before the last reboot", ""}};
  o.kept = {{"/a/chokepoint-run-2", "", ""}, {"/a/chokepoint-run-3", "", "Permission denied"}};
  const CleanOrphansResult o2 = round_trip(o);
  ASSERT_EQ(o2.removed.size(), 1u);
  EXPECT_EQ(o2.removed[0].reason, "ran before the last reboot");
  ASSERT_EQ(o2.kept.size(), 2u);
  EXPECT_EQ(o2.kept[0].error, "");
  EXPECT_EQ(o2.kept[1].error, "Permission denied");

  const OwnerRecord w{1234, 5678, "boot-1", "host-a", "pid:[4026531836]", 7, 1.7e9};
  const OwnerRecord w2 = read_stored<OwnerRecord>(json::serialize(to_json(w)));
  EXPECT_EQ(w2.pid, 1234);
  EXPECT_EQ(w2.start_ticks, 5678);
  EXPECT_EQ(w2.boot_id, "boot-1");
  EXPECT_EQ(w2.host, "host-a");
  EXPECT_EQ(w2.pid_ns, "pid:[4026531836]");
  EXPECT_EQ(w2.run, 7);
  EXPECT_DOUBLE_EQ(w2.started_at, 1.7e9);

  const CheckSpaceRequest c = round_trip(CheckSpaceRequest{"/srv", 1u << 30, "free some"});
  EXPECT_EQ(c.dir, "/srv");
  EXPECT_EQ(c.bytes, 1u << 30);
  EXPECT_EQ(c.hint, "free some");
  const CheckSpaceResult f = round_trip(CheckSpaceResult{100, 60, "ext4", "sda"});
  EXPECT_EQ(f.total, 100u);
  EXPECT_EQ(f.avail, 60u);
  EXPECT_EQ(f.fs_type, "ext4");
  EXPECT_EQ(f.disk, "sda");
  // No disk under it (tmpfs) goes as null and comes back empty.
  EXPECT_TRUE(to_json(CheckSpaceResult{1, 1, "tmpfs", ""}).at("disk").is_null());
  EXPECT_EQ(round_trip(CheckSpaceResult{1, 1, "tmpfs", ""}).disk, "");
}

TEST(Messages, AgentMessagesRoundTrip) {
  const Hello h = round_trip(
      Hello{"1.0", "abc", 1, 4321, "cp-server", "Linux", "aarch64", "full", {"null", "smb"}});
  EXPECT_EQ(h.version, "1.0");
  EXPECT_EQ(h.build, "abc");
  EXPECT_EQ(h.proto, 1);
  EXPECT_EQ(h.pid, 4321);
  EXPECT_EQ(h.hostname, "cp-server");
  EXPECT_EQ(h.os, "Linux");
  EXPECT_EQ(h.arch, "aarch64");
  EXPECT_EQ(h.role, "full");
  EXPECT_EQ(h.drivers, (std::vector<std::string>{"null", "smb"}));

  EXPECT_EQ(round_trip(AgentStats{5120}).max_rss_kb, 5120u);
  EXPECT_EQ(round_trip(SmbStatusRequest{"/etc/samba/smb.conf"}).conf, "/etc/samba/smb.conf");
  EXPECT_EQ(round_trip(SmbStatusRequest{}).conf, "");
  SmbStatusResult st;
  st.sessions = {{"ipv4:198.18.0.2:41234", "SMB3_11", "AES-128-GMAC", "partial", "-", "none"}};
  const SmbStatusResult st2 = round_trip(st);
  ASSERT_EQ(st2.sessions.size(), 1u);
  EXPECT_EQ(st2.sessions[0].client, "ipv4:198.18.0.2:41234");
  EXPECT_EQ(st2.sessions[0].dialect, "SMB3_11");
  EXPECT_EQ(st2.sessions[0].signing, "AES-128-GMAC");
  EXPECT_EQ(st2.sessions[0].signing_degree, "partial");
  EXPECT_EQ(st2.sessions[0].encryption, "-");
  EXPECT_EQ(st2.sessions[0].encryption_degree, "none");
  EXPECT_TRUE(round_trip(RemoveFileResult{true}).removed);

  const Progress g = round_trip(Progress{1u << 20, 0.75});
  EXPECT_EQ(g.bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(g.seconds, 0.75);
  const ErrorInfo e = round_trip(ErrorInfo{"config", "no such dir", "create it"});
  EXPECT_EQ(e.kind, "config");
  EXPECT_EQ(e.message, "no such dir");
  EXPECT_EQ(e.hint, "create it");
}

TEST(Messages, TuneMessagesRoundTrip) {
  TuneRequest q;
  q.knob = "server.mtu";
  q.value = "9000";
  q.disk_dir = "/d";
  q.samba_conf = "/etc/samba/smb.conf";
  q.data_address = "198.18.0.1";
  q.console = true;
  q.afp_conf = "/etc/netatalk/afp.conf";
  q.afp_restart = "systemctl restart netatalk";
  q.confirm_s = 7;
  const TuneRequest q2 = round_trip(q);
  EXPECT_EQ(q2.knob, "server.mtu");
  EXPECT_EQ(q2.value, "9000");
  EXPECT_EQ(q2.disk_dir, "/d");
  EXPECT_EQ(q2.samba_conf, "/etc/samba/smb.conf");
  EXPECT_EQ(q2.data_address, "198.18.0.1");
  EXPECT_TRUE(q2.console);
  EXPECT_EQ(q2.afp_conf, "/etc/netatalk/afp.conf");
  EXPECT_EQ(q2.afp_restart, "systemctl restart netatalk");
  EXPECT_EQ(q2.confirm_s, 7u);
  // Without confirm_s the agent's default holds.
  EXPECT_EQ(decode<TuneRequest>(json::parse(R"({"knob":"k","value":"v"})"), "tune_plan").confirm_s,
            20u);

  const TunePlanResult p = round_trip(TunePlanResult{"eth0",
                                                     "1500",
                                                     {"ip link set eth0 mtu 9000"},
                                                     {"ip link set eth0 mtu 1500"},
                                                     "/var/lib/j",
                                                     true,
                                                     20});
  EXPECT_EQ(p.target, "eth0");
  EXPECT_EQ(p.original, "1500");
  EXPECT_EQ(p.apply, (std::vector<std::string>{"ip link set eth0 mtu 9000"}));
  EXPECT_EQ(p.revert, (std::vector<std::string>{"ip link set eth0 mtu 1500"}));
  EXPECT_EQ(p.journal, "/var/lib/j");
  EXPECT_TRUE(p.cuts_ssh);
  EXPECT_EQ(p.watchdog_s, 20u);
  EXPECT_FALSE(to_json(TunePlanResult{}).contains("watchdog_s"));  // none armed

  EXPECT_TRUE(round_trip(TuneConfirmResult{true}).confirmed);
  const TuneRevertResult r = round_trip(TuneRevertResult{
      {{"server.mtu", "eth0", "1500", ""}}, {{"samba.x", "smb.conf", "1", "busy"}}, "", "/j"});
  ASSERT_EQ(r.reverted.size(), 1u);
  EXPECT_EQ(r.reverted[0].knob, "server.mtu");
  EXPECT_EQ(r.reverted[0].target, "eth0");
  EXPECT_EQ(r.reverted[0].original, "1500");
  ASSERT_EQ(r.reverted_at_start.size(), 1u);
  EXPECT_EQ(r.reverted_at_start[0].error, "busy");
  EXPECT_EQ(r.journal, "/j");
}

// An array field holding the wrong kind, from the peer, is the peer's error.
TEST(Messages, PeerArrayOfTheWrongKindIsAPeerError) {
  for (const char* text : {R"({"dirs":["/a",3]})", R"({"dirs":"/a"})"}) {
    SCOPED_TRACE(text);
    peer_error<PrepareRequest>(json::parse(text), "prepare");
  }
  // An entry without its path.
  peer_error<CleanOrphansResult>(json::parse(R"({"removed":[{"reason":"x"}],"kept":[]})"),
                                 "sweep_orphans");
}

TEST(Messages, FactsRoundTrip) {
  FactsRequest q{"/ram", "/disk", "198.18.0.2", "/etc/lab/smb.conf"};
  FactsRequest q2 = round_trip(q);
  EXPECT_EQ(q2.ram_dir, "/ram");
  EXPECT_EQ(q2.disk_dir, "/disk");
  EXPECT_EQ(q2.peer_address, "198.18.0.2");
  EXPECT_EQ(q2.samba_conf, "/etc/lab/smb.conf");
  EXPECT_TRUE(q2.samba);  // absent on the wire: the server's default
  FactsRequest client{"/ram", "/disk", "198.18.0.1", "", false};
  EXPECT_FALSE(round_trip(client).samba);
}

TEST(Messages, PeerMessageMissingARequiredFieldIsAPeerError) {
  json::value v = json::parse(R"({"dir":"/d","name":"f"})");
  peer_error<DiskRequest>(v, "disk");  // no op
}

// A disk write says how much to write; a read needs no size.
TEST(Messages, DiskWriteWithoutASizeIsAPeerError) {
  peer_error<DiskRequest>(json::parse(R"({"dir":"/d","op":"write","name":"f"})"), "disk");
  EXPECT_EQ(decode<DiskRequest>(json::parse(R"({"dir":"/d","op":"read","name":"f"})"), "disk").size,
            0u);
}

TEST(Messages, PeerMessageWithAMistypedFieldIsAPeerError) {
  json::value v = json::parse(R"({"bytes":"many","seconds":1,"checksum":"x"})");
  EXPECT_THROW(decode<FileResult>(v, "file_info"), Error);
  json::value nested = json::parse(R"({"bytes":1,"seconds":1,"sender":true,
      "tcp_info":{"available":"yes"},"cpu":{}})");
  EXPECT_THROW(decode<TcpResult>(nested, "tcp_run"), Error);
  EXPECT_THROW(decode<TcpResult>(json::value(3), "tcp_run"), Error);
}

TEST(Messages, StoredDetailsThatAreDamagedReadAsDefaults) {
  EXPECT_EQ(read_stored<DiskDetails>("").file, "");
  EXPECT_EQ(read_stored<TcpDetails>("{not json").sender_bytes, 0u);
  TcpDetails d = read_stored<TcpDetails>(R"({"sender_bytes":"x","tcp_info":{"rtt_us":5}})");
  EXPECT_EQ(d.sender_bytes, 0u);
  EXPECT_EQ(d.tcp_info.rtt_us, 5u);
  EXPECT_FALSE(d.tcp_info.available);
}

// What `chokepoint clean` prints of each removed directory: a reply whose
// entry lacks its reason is the peer's error naming the field (it was an
// uncaught std::out_of_range, exit 134).
TEST(SecurityMessages, ASweepReplyWithoutAReasonIsAPeerErrorNamingIt) {
  const std::string e = peer_error<CleanOrphansResult>(
      json::parse(R"({"removed":[{"path":"/var/tmp/x"}],"kept":[]})"), "sweep_orphans");
  EXPECT_NE(e.find("'reason'"), std::string::npos) << e;
  // Kept entries need none.
  EXPECT_EQ(decode<CleanOrphansResult>(
                json::parse(R"({"removed":[],"kept":[{"path":"/var/tmp/x"}]})"), "sweep_orphans")
                .kept.size(),
            1u);
}

// Every field a reply's codec reads, missing or of the wrong type, is the
// peer's error naming that field: never another exception.
TEST(SecurityMessages, EveryMissingOrMistypedFieldOfAReplyNamesTheField) {
  const json::object good = to_json(TransferResult{5, 1.5, "abc", {{"dialect", "3.1.1"}}, {}});
  for (const auto& [key, value] : good) {
    SCOPED_TRACE(std::string(key));
    for (const json::value& bad : {json::value(nullptr), json::value(json::array{1, 2}),
                                   json::value(json::object{{"x", 1}})}) {
      json::object o = good;
      o[key] = bad;
      try {
        decode<TransferResult>(o, "transfer");
        if (!bad.is_null()) ADD_FAILURE() << "a mistyped field was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kPeer);
        EXPECT_NE(std::string(e.what()).find(std::string(key)), std::string::npos) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a cp::Error: " << e.what();
      }
    }
  }
}

TEST(SecurityMessages, AHugeStringFromThePeerIsRefusedNamingTheField) {
  json::object o = to_json(FileResult{1, 1, "abc", false, ""});
  o["checksum"] = std::string(kMaxPeerString + 1, 'a');
  const std::string e = peer_error<FileResult>(o, "file_info");
  EXPECT_NE(e.find("'checksum'"), std::string::npos) << e;
  // Stored text is read as it is.
  EXPECT_EQ(read_stored<DiskDetails>(
                json::serialize(json::object{{"file", std::string(kMaxPeerString + 1, 'f')}}))
                .file.size(),
            kMaxPeerString + 1);
}

// A CPU summary nested in a reply is read strictly too.
TEST(SecurityMessages, AMistypedCpuFieldInAReplyNamesIt) {
  json::object o = to_json(SizeScanResult{1, 1, "", {}});
  o["cpu"].as_object()["top"] = json::array{json::object{{"pid", "1"}}};
  const std::string e = peer_error<SizeScanResult>(o, "sweep");
  EXPECT_NE(e.find("top[0].pid"), std::string::npos) << e;
}

}  // namespace
}  // namespace cp::msg
