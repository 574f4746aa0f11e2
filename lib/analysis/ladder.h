// The ladder: each layer's measured throughput held against the layer
// beneath it, and the verdict naming the layer that caps each path. The
// rules live here, in one place; README.md "How the verdict is reached"
// documents them for users.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/stats.h"

namespace cp::analysis {

// Thresholds of the rules (fractions).
constexpr double kAtCeiling = 0.90;      // a layer within 10 % of the one beneath is at its ceiling
constexpr double kShortTcp = 0.80;       // TCP under 80 % of the link: the network stack is short
constexpr double kCoreSaturated = 90;    // % busy of one core: CPU-bound
constexpr double kWindowLimited = 0.20;  // tcp_info limited for > 20 % of busy time
constexpr double kMinCpuWindow = 0.5;    // s: shorter CPU windows are not evidence
constexpr double kFasterThanBeneath = 1.05;  // a layer > 5 % above the one beneath: cache suspected
constexpr double kAboveLink = 1.05;          // TCP > 5 % above the nominal link: no real ceiling
constexpr uint64_t kGoodReadaheadKb = 2048;  // readahead at or above this: no readahead hint
// A process at >= 90 % of its cgroup CPU limit is CPU-bound: starved by a
// quota (smbd at 20 % of a core), it never fills a core.
constexpr double kQuotaSaturated = 0.90;

struct Row {
  std::string key;    // "tcp:server->client:send", "disk:server:read:100000000", "link"
  std::string label;  // "TCP server -> client"
  std::string layer;  // "link" | "tcp" | "disk"
  std::string where;
  std::string op;
  uint64_t size = 0;          // disk file size
  Summary rate;               // bytes/s over the successful samples
  size_t failed = 0;          // failed samples
  size_t cache_possible = 0;  // samples flagged cache_possible
  std::string below;          // key of the layer beneath, or ""
  double ratio = 0;           // rate.median / below's median; 0 when none
  // CPU evidence: the busiest core (% busy, averaged over a sample) seen on
  // either end during this row's samples, where, and its top process.
  double max_core_pct = 0;
  std::string max_core_host;
  std::string max_core_process;
  // Quota evidence: a process that ran at >= kQuotaSaturated of its cgroup CPU
  // limit during one of this row's samples, on either end; the one closest to
  // its limit, a process in its agent's own network namespace first (in a lab
  // on one machine both agents see the same processes). Host "" when none.
  std::string quota_host;
  std::string quota_process;   // its comm
  double quota_cpu_pct = 0;    // its CPU, % of one core
  double quota_limit_pct = 0;  // its limit, % of one core
  bool quota_other_netns = false;
  // TCP evidence from the sender's tcp_info, summed over samples.
  double rwnd_limited_frac = -1;  // of busy time; -1 when unknown
  double sndbuf_limited_frac = -1;
  uint64_t retransmits = 0;
  double rtt_us = 0;  // median of the sender's smoothed RTT over samples, µs; 0 when unknown
  // The successful samples behind `rate`, in stored order: bytes/s and their
  // ids in the store (0 when not stored), so every figure can be traced.
  std::vector<double> samples;
  std::vector<int64_t> sample_ids;
  // The figure may come from a cache rather than the layer: why, or "".
  bool cache_suspected = false;
  std::string cache_reason;
  // Protocol rows: what the client driver recorded (first sample's
  // details "properties": requested dialect, max_read_size, mount options).
  std::map<std::string, std::string> properties;
};

struct Finding {
  std::string path;   // "server -> client" | "client -> server" | "tcp" | "cache" ...
  std::string layer;  // the capping layer: "network", "tcp", "cpu", "server disk", ...
  std::string text;   // one sentence with the numbers that show it (hints included)
  // The evidence, for charts and JSON: the keys of the rows on this path in
  // data order (a bar each), the row that caps it ("" when none), and the
  // ratio the verdict rests on (capping layer / layer beneath; 0: none).
  std::vector<std::string> rows;
  std::string cap;
  double ratio = 0;
  // Tuning hints that fit the evidence, each citing the number that triggered
  // it (they are also part of `text`).
  std::vector<std::string> hints;
};

// What the verdict cites from one host's facts (see lib/probe/sysinfo.h);
// empty/zero/-1 when the facts do not say.
struct HostFacts {
  std::string hostname;
  uint64_t memory_bytes = 0;
  int mtu = 0;
  std::string disk_device;  // the disk behind disk_dir: "sda"
  int64_t read_ahead_kb = -1;
  std::map<std::string, std::string> tcp_sysctls;  // "net.ipv4.tcp_rmem" -> "4096 131072 6291456"
  bool samba_known = false;                        // a Samba config was read
  std::map<std::string, std::string> samba;        // its [global] parameters
};

struct Analysis {
  double link_bits = 0;     // nominal link speed, bit/s; 0 when unknown
  std::string link_source;  // "plan", "tbf on cpd-c", "interface speed of eth0"
  int server_mtu = 0, client_mtu = 0;
  HostFacts server, client;
  std::vector<Row> rows;
  std::string headline;  // the verdict in one sentence
  std::vector<Finding> findings;
};

Analysis analyze(const RunRecord& run);

// Finds a row by key; nullptr when absent.
const Row* find_row(const Analysis& a, const std::string& key);

// A cell of the transfer-size sweep (op "sweep-seqread", size = request
// bytes): listed in its own table, not a layer of the ladder.
bool is_sweep(const Row& r);

// The facts of `role` ("server" | "client") that the rules cite.
const HostFacts& host_facts(const Analysis& a, const std::string& role);

// The largest value of "4096 131072 6291456" (tcp_rmem/wmem) or of a single
// number; 0 when `text` holds none.
uint64_t max_of_sysctl(const std::string& text);

}  // namespace cp::analysis
