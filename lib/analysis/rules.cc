// The verdict as a rule set: one ordered table of every rule, and analyze(),
// which runs the steps below in order. Within a chain the first rule that
// applies makes the finding, so a rule's place in the table is its precedence.
#include <algorithm>
#include <atomic>
#include <span>
#include <string>
#include <vector>

#include "analysis/judge.h"
#include "core/error.h"

namespace cp::analysis {
namespace {

constexpr unsigned kProtocolChains = kProtocolRamChain | kProtocolDiskChain;

// clang-format off
constexpr Rule kRules[] = {
  // Run-wide, before any verdict: figures a verdict must not rest on (trust.cc).
  {"trust.page_cache", kRunRule, "a figure a cache may have served: samples without O_DIRECT on files that fit in RAM, or a protocol from disk faster than the disk or the RAM share beyond both rows' spread (a read of a file the server evicted: over 25 % faster than the disk, as readahead and a throttle's burst can beat the disk probe by less)"},
  {"trust.cache_ruled_out", kRunRule, "samples without O_DIRECT on files larger than the host's RAM: the page cache cannot have served most of them"},
  {"trust.anomaly", kRunRule, "a protocol over RAM faster than TCP beyond both rows' spread where no cache can explain it: the TCP figure is no ceiling"},
  {"trust.medium", kRunRule, "a row not over the medium it claims (a disk_dir on tmpfs, a RAM share on a disk, a client ram_dir on a disk)"},

  // Why TCP is where it is (tcp_rules.cc).
  {"tcp.cpu", kTcpChain, "a thread of the endpoint at a core or a process at its quota caps TCP (every core busy does not take a TCP at the link's rate)", rules::tcp_cpu},
  {"tcp.window", kTcpChain, "tcp_info shows the receive window or send buffer limited > 20 % of the time, or tcp_rmem max is below the bandwidth-delay product", rules::tcp_window},
  {"tcp.link_unknown", kTcpChain, "no link or interface speed is known and no window, buffer or CPU limit shows: cannot tell (network, tcp, cpu), with the fix ([link] nominal)", rules::tcp_link_unknown},
  {"tcp.above_link", kTcpChain, "a sample beyond the nominal speed: that speed is no ceiling (a virtual link), and no window, buffer or CPU limit shows: cannot tell (tcp, cpu)", rules::tcp_above_link},
  {"tcp.busy_near_link", kTcpChain, "within 80 % of the link while every core was busy and the samples swing: cannot tell the network from the CPU", rules::tcp_busy_near_link},
  {"tcp.at_link", kTcpChain, "at >= 80 % of the link: the network is at its ceiling", rules::tcp_at_link},
  {"tcp.load", kTcpChain, "short of the link while other processes kept every core busy and the samples swing: cannot tell", rules::tcp_load},
  {"tcp.path", kTcpChain, "short of both interfaces with no window, buffer or CPU limit: the network path between the hosts", rules::tcp_path},

  // Disk to disk, each way: the slowest layer (path_rules.cc).
  {"path.medium", kPathChain, "a disk row that measured RAM: the real disk is unmeasured, cannot tell", rules::path_medium},
  {"path.noise", kPathChain, "the two slowest layers within each other's noise: cannot tell, with the count that would settle it", rules::path_noise},
  {"path.tcp", kPathChain, "TCP is the slowest layer: what caps TCP (the TCP rules) caps the path", rules::path_tcp},
  {"path.cpu", kPathChain, "the slowest disk row is CPU-bound: the CPU caps the path", rules::path_cpu},
  {"path.bus", kPathChain, "the slowest layer is a disk at >= 80 % of its bus's payload ceiling (the bus's effective ceiling): the bus caps the path", rules::path_bus},
  {"path.slowest", kPathChain, "the slowest layer caps the path", rules::path_slowest},

  // Each protocol's biggest files, over RAM against TCP and from disk against
  // min(the protocol over RAM, the server disk) (protocol_rules.cc).
  {"protocol.untrusted", kProtocolChains, "the row or the one beneath may come from a cache, is faster than beneath, or is not over its medium: cannot tell", rules::protocol_untrusted},
  {"protocol.rate_cap", kProtocolChains, "at a per-session rate limit the server's config sets (vsftpd's local_max_rate, proftpd's TransferRate): from 80 % to 200 % of it (limiters overshoot), whatever the CPU: that setting caps it", rules::protocol_rate_cap},
  {"protocol.cpu", kProtocolChains, "a process at its quota or a thread at a core (or every core busy, below the layer beneath): the CPU caps it", rules::protocol_cpu},
  {"protocol.unmeasured", kProtocolChains, "the layer beneath was not measured: cannot tell", rules::protocol_unmeasured},
  {"protocol.noise", kProtocolChains, "within the noise of the layer beneath: cannot tell, with the count that would settle it", rules::protocol_noise},
  {"protocol.at_tcp_ceiling", kProtocolRamChain, "over RAM within 10 % of TCP: what caps TCP (the TCP rules) caps it", rules::protocol_at_tcp_ceiling},
  {"protocol.turn_taking", kProtocolRamChain, "one request in flight, client and server threads together at a core: a lower bound limited by chokepoint's client", rules::protocol_turn_taking},
  {"protocol.client_size_limit", kProtocolRamChain, "chokepoint's client held to smaller requests than the server takes: a lower bound", rules::protocol_client_size_limit},
  {"protocol.client_drain", kProtocolRamChain, "the client idles a round trip after each call for >= 10 % of its time: a lower bound", rules::protocol_client_drain},
  {"protocol.client_window", kProtocolRamChain, "at >= 80 % of what the client's bytes in flight allow over the RTT: a lower bound", rules::protocol_client_window},
  {"protocol.disk_cpu", kProtocolDiskChain, "from disk at the server disk's ceiling, the disk CPU-bound: the CPU caps it", rules::protocol_disk_cpu},
  {"protocol.disk_bus", kProtocolDiskChain, "from disk within 10 % of the server disk, the disk at >= 80 % of its bus's payload ceiling: the server's bus caps it", rules::protocol_disk_bus},
  {"protocol.disk_ceiling", kProtocolDiskChain, "from disk within 10 % of the server disk: the server disk caps it", rules::protocol_disk_ceiling},
  {"protocol.at_ram_ceiling", kProtocolDiskChain, "from disk within 10 % of the protocol over RAM: what caps the protocol over RAM caps it", rules::protocol_at_ram_ceiling},
  {"protocol.disk_medium", kProtocolDiskChain, "from disk, below RAM, with the server disk measured on RAM: cannot tell", rules::protocol_disk_medium},
  {"protocol.disk_unmeasured", kProtocolDiskChain, "from disk, below RAM, with the server disk unmeasured: cannot tell", rules::protocol_disk_unmeasured},
  {"protocol.latency", kProtocolChains, "each file takes at most 30 round trips longer than the layer beneath allows: cannot tell the protocol from the path's latency", rules::protocol_latency},
  {"protocol.load", kProtocolChains, "every core busy, mostly with other processes: cannot tell", rules::protocol_load},
  {"protocol.short_cpu", kProtocolChains, "CPU sampled over less than 0.5 s: nothing rules the CPU out, cannot tell", rules::protocol_short_cpu},
  {"protocol.layer", kProtocolRamChain, "over RAM, below TCP, nothing else explains it: the protocol layer caps it", rules::protocol_layer},
  {"protocol.plus_disk", kProtocolDiskChain, "from disk below both the protocol over RAM and the server disk: the two together cost more than either alone", rules::protocol_plus_disk},

  // Small files on each end's disk, run-wide notes (files_rules.cc).
  {"files.disk_cpu", kRunRule, "a small-file phase on an end's disk with a thread at a core or a process at its quota: the CPU, not the disk, sets its operations/s (chokepoint's agent: a lower bound)"},
  {"files.disk_latency", kRunRule, "a small-file phase on an end's disk whose worst operation took >= 50x its median and >= 50 ms: the device or the journal stalled"},

  // Small files over each share, create and read, against the same phase on
  // the server's disk and what the round trips allow (files_rules.cc).
  {"files.untrusted", kFilesChain, "a read the server could not drop from its cache (or a cache of the filesystem's own may serve): cannot tell", rules::files_untrusted},
  {"files.cpu", kFilesChain, "a thread at a core, a process at its quota or every core busy (below what the round trips allow) on either end during the phase: the CPU caps it (chokepoint's agent: a lower bound)", rules::files_cpu},
  {"files.round_trips", kFilesChain, "at >= 80 % of in flight / (round trips per operation x the idle RTT), or of 1 / (the round trips that take turns on the connection x the RTT) when lower: the round trips cap it", rules::files_round_trips},
  {"files.disk", kFilesChain, "from a disk share at >= 90 % of the same phase on the server's disk: the disk's own metadata rate caps it", rules::files_disk},
  {"files.client", kFilesChain, "below both ceilings while chokepoint's client agent spent >= half of each operation's time on its own CPU: its client paces it (a lower bound)", rules::files_client},
  {"files.layer", kFilesChain, "below both ceilings with nothing else to explain it: the protocol's per-operation cost (its server, its client) caps it", rules::files_layer},

  // Run-wide, after the verdicts (this file).
  {"cpu.bound", kRunRule, "a CPU-bound row no verdict judged: who burns the CPU"},
  {"load.competing", kRunRule, "rows measured while other processes kept every core busy: their figures may be low"},
  {"errors.failed_samples", kRunRule, "a row with failed samples: the figures use the rest"},
  {"network.mtu_mismatch", kRunRule, "different MTUs on the two ends of the data path"},
};
// clang-format on

// Where a step's findings go in the report, in this order.
enum class Section { kPath, kTcp, kCpu, kFiles, kLoad, kTrust, kErrors, kMtu, kProtocol };

struct Judging {
  Analysis& a;
  Judged judged;
  std::vector<std::pair<Section, Finding>> out;
  void add(Section s, Finding f) { out.emplace_back(s, std::move(f)); }
};

Finding run_finding(const char* rule, std::string path, std::string layer,
                    std::vector<std::string> rows = {}) {
  Finding f;
  f.rule = rule;
  f.path = std::move(path);
  f.layer = std::move(layer);
  f.rows = std::move(rows);
  return f;
}

void step_trust(Judging& j) {
  for (Finding& f : judge_trust(j.a)) j.add(Section::kTrust, std::move(f));
}

void step_paths(Judging& j) {
  const Analysis& a = j.a;
  const auto& rows = a.rows;
  for (auto f :
       {path_finding(a, j.judged, "server -> client", disk_row(rows, "server", "read"),
                     tcp_row(rows, "server->client"), disk_row(rows, "client", "write")),
        path_finding(a, j.judged, "client -> server", disk_row(rows, "client", "read"),
                     tcp_row(rows, "client->server"), disk_row(rows, "server", "write"))}) {
    if (f) j.add(Section::kPath, std::move(*f));
  }
}

// TCP against the link, where no path verdict already said it.
void step_tcp(Judging& j) {
  for (const auto& r : j.a.rows) {
    if (r.layer != "tcp" || r.rate.n == 0 || j.judged.tcp.count(r.key)) continue;
    j.judged.tcp.insert(r.key);
    Finding f = explain_tcp(r, j.a);
    if (f.layer == "cpu") j.judged.cpu.insert(r.key);
    f.ratio = r.ratio;
    if (find_row(j.a, "link")) f.rows.push_back("link");
    f.rows.push_back(r.key);
    j.add(Section::kTcp, std::move(f));
  }
}

// The biggest files of each protocol, medium and op.
void step_protocols(Judging& j) {
  for (const auto& r : j.a.rows) {
    if (is_protocol_row(r) && r.rate.n > 0 && proto_row(j.a.rows, r.layer, r.where, r.op) == &r) {
      j.judged.protocol.insert(r.key);
      j.add(Section::kProtocol, protocol_finding(j.a, r, true));
    }
  }
}

// The small-file rows of each end's disk: their CPU and latency notes.
void step_files(Judging& j) {
  for (Finding& f : judge_files_disk(j.a, j.judged.cpu)) j.add(Section::kFiles, std::move(f));
  for (Finding& f : judge_files_shares(j.a, j.judged.cpu)) j.add(Section::kFiles, std::move(f));
}

// A CPU-bound row that no verdict judged yet (a TCP or protocol verdict that
// did not name the CPU weighed it already: at its ceiling, or undecided).
void step_cpu(Judging& j) {
  for (const auto& r : j.a.rows) {
    if (r.layer == "link" || is_size_scan(r) || r.rate.n == 0 || r.cpu_bound.empty() ||
        j.judged.cpu.count(r.key) || j.judged.tcp.count(r.key) || j.judged.protocol.count(r.key)) {
      continue;
    }
    Finding f = run_finding("cpu.bound", "cpu", "cpu", {r.key});
    f.cap = r.key;
    f.subject = cite(r);
    f.cpu = r.cpu_bound;
    f.lower_bound = r.cpu_bound.role == "agent";
    j.add(Section::kCpu, std::move(f));
  }
}

// Rows measured while other processes kept every core busy: one note.
void step_load(Judging& j) {
  Finding f = run_finding("load.competing", "load", "competing load");
  double most = 0;
  std::string busiest;
  for (const auto& r : j.a.rows) {
    if (r.competing_load_pct <= 0) continue;
    f.rows.push_back(r.key);
    f.context.push_back(cite(r));
    if (r.competing_load_pct > most) {
      most = r.competing_load_pct;
      busiest = r.competing_process;
    }
  }
  if (f.rows.empty()) return;
  f.numbers["competing_load_pct"] = most;
  if (!busiest.empty()) f.words["competing_process"] = busiest;
  j.add(Section::kLoad, std::move(f));
}

void step_errors(Judging& j) {
  for (const auto& r : j.a.rows) {
    if (r.failed == 0) continue;
    Finding f = run_finding("errors.failed_samples", "errors", "error", {r.key});
    f.subject = cite(r);
    f.numbers["failed"] = double(r.failed);
    j.add(Section::kErrors, std::move(f));
  }
}

void step_mtu(Judging& j) {
  const Analysis& a = j.a;
  if (a.server_mtu <= 0 || a.client_mtu <= 0 || a.server_mtu == a.client_mtu) return;
  Finding f = run_finding("network.mtu_mismatch", "mtu", "network");
  f.numbers["server_mtu"] = a.server_mtu;
  f.numbers["client_mtu"] = a.client_mtu;
  f.hints.push_back(*mtu_hint(a));
  j.add(Section::kMtu, std::move(f));
}

// The steps of analyze(), in the order they run: the trust checks mark rows
// every verdict reads; path and TCP verdicts mark the rows they judged, which
// the CPU step then leaves alone.
struct Step {
  const char* what;
  void (*run)(Judging&);
};
constexpr Step kSteps[] = {
    {"trust checks", step_trust},
    {"disk-to-disk paths", step_paths},
    {"TCP rows", step_tcp},
    {"protocol rows", step_protocols},
    {"small files on disk", step_files},
    {"CPU-bound rows", step_cpu},
    {"competing load", step_load},
    {"failed samples", step_errors},
    {"MTU", step_mtu},
};

bool known_rule(std::string_view id) {
  return std::any_of(std::begin(kRules), std::end(kRules),
                     [&](const Rule& r) { return r.id == id; });
}

void check_rules(const Finding& f) {
  CP_CHECK(known_rule(f.rule));
  for (const Finding& b : f.because) check_rules(b);
}

}  // namespace

std::span<const Rule> rule_table() { return kRules; }

bool run_chain(Chain chain, const Case& c, Finding& f) {
  for (const Rule& r : kRules) {
    if (!(r.chains & chain) || !r.judge) continue;
    if (r.judge(c, f)) {
      f.rule = std::string(r.id);
      return true;
    }
  }
  return false;
}

std::vector<RuleInfo> verdict_rules() {
  std::vector<RuleInfo> out;
  for (const Rule& r : kRules) {
    std::string_view chain = r.chains == kRunRule            ? "run"
                             : r.chains == kTcpChain         ? "tcp"
                             : r.chains == kPathChain        ? "path"
                             : r.chains == kProtocolChains   ? "protocol"
                             : r.chains == kProtocolRamChain ? "protocol over RAM"
                             : r.chains == kFilesChain       ? "small files over a share"
                                                             : "protocol from disk";
    out.push_back({r.id, chain, r.summary});
  }
  return out;
}

namespace {
std::atomic<uint64_t> g_analyses{0};  // analyze() calls in this process
}  // namespace

uint64_t analyses_run() { return g_analyses.load(); }

Analysis analyze(const stored::Run& run) {
  g_analyses.fetch_add(1);
  Analysis a;
  a.stages_ran = !run.stages.empty();
  detect_link(run, a);
  a.rows = build_rows(run, a);
  attach_buses(a);
  judge_cpu_evidence(a);
  Judging j{a, {}, {}};
  for (const Step& s : kSteps) s.run(j);
  std::stable_sort(j.out.begin(), j.out.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [section, f] : j.out) {
    check_rules(f);
    a.findings.push_back(std::move(f));
  }
  mark_untrusted(a);
  judge_confidence(a);
  pick_headline(a);
  return a;
}

}  // namespace cp::analysis
