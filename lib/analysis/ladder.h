// The ladder: each layer's measured throughput held against the layer
// beneath it, and the verdict naming the layer that caps each path. The
// rules live here, in one place; README.md "How the verdict is reached"
// documents them for users.
#pragma once

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
  // TCP evidence from the sender's tcp_info, summed over samples.
  double rwnd_limited_frac = -1;  // of busy time; -1 when unknown
  double sndbuf_limited_frac = -1;
  uint64_t retransmits = 0;
};

struct Finding {
  std::string path;   // "server -> client" | "client -> server" | "tcp" | "cache" ...
  std::string layer;  // the capping layer: "network", "tcp", "cpu", "server disk", ...
  std::string text;   // one sentence with the numbers that show it
};

struct Analysis {
  double link_bits = 0;     // nominal link speed, bit/s; 0 when unknown
  std::string link_source;  // "plan", "tbf on cpd-c", "interface speed of eth0"
  int server_mtu = 0, client_mtu = 0;
  std::vector<Row> rows;
  std::string headline;  // the verdict in one sentence
  std::vector<Finding> findings;
};

Analysis analyze(const RunRecord& run);

// Finds a row by key; nullptr when absent.
const Row* find_row(const Analysis& a, const std::string& key);

}  // namespace cp::analysis
