// Inside lib/analysis: what the rule files share. rows.cc decodes stored
// samples into rows, cpu_evidence.cc says who burns the CPU, trust.cc marks
// figures a cache or the wrong medium made, tcp_rules.cc, path_rules.cc and
// protocol_rules.cc hold the chains of rules, rules.cc the table that orders
// them, headline.cc the headline and confidence policies. No prose of a
// finding is written here: report/finding_text.cc renders it.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "analysis/ladder.h"
#include "core/model.h"
#include "core/units.h"

namespace cp::msg {
struct BlockDeviceFacts;
}

namespace cp::analysis {

// --- words the rows and hints use ----------------------------------------
inline std::string mbps(double bps) { return format_mbps(bps); }
// "smb" -> "SMB", "path" -> "mounted path": the driver's display name
// (transfer::protocol_display).
std::string protocol_name(const std::string& layer);
bool is_protocol(const std::string& layer);
// A protocol row of the ladder proper (not a size-scan cell).
bool is_protocol_row(const Row& r);
// The layer name a row stands for in a verdict ("server disk", "tcp", "smb").
std::string layer_name(const Row& r);

// --- rows.cc ---------------------------------------------------------------
// The link, the hosts' facts and whether both ends share one machine.
void detect_link(const stored::Run& run, Analysis& a);
std::vector<Row> build_rows(const stored::Run& run, const Analysis& a);
// The disk row of `where`/`op` with files of `size`, else the nearest size;
// size 0: the biggest files (the sustained figure).
const Row* disk_row(const std::vector<Row>& rows, const std::string& where, const std::string& op,
                    uint64_t size = 0);
// One stream's TCP row of `where` (tcp_total_row: several streams').
const Row* tcp_row(const std::vector<Row>& rows, const std::string& where);
// The row of `layer` over `medium` for `op` with files of `size`, else the
// nearest size (by ratio); size 0: the biggest files.
const Row* proto_row(const std::vector<Row>& rows, const std::string& layer,
                     const std::string& medium, const std::string& op, uint64_t size = 0);
// A row as a finding cites it.
Cited cite(const Row& r, CitedName named = CitedName::kNone);

// --- bus_rules.cc ----------------------------------------------------------
// The bus beneath a disk as the agent's facts give it (empty when they do not).
BusCeiling disk_bus_of(const msg::BlockDeviceFacts& device);
// Sets each disk row's bus and its ratio to the bus's theoretical ceiling.
void attach_buses(Analysis& a);
// The disk row is at its bus's effective ceiling (kBusEffective): the bus caps it.
bool at_bus_ceiling(const Row& disk);
// Fills a finding capped by `disk`'s bus: layer "server bus" | "client bus".
void set_bus(Finding& f, const Row& disk);

// --- streams.cc ------------------------------------------------------------
// TCP connections a protocol row used at once: SMB's `connections`, a kernel
// mount's nconnect / multichannel max_channels; else 1.
int protocol_connections(const Row& r);
// The TCP row of several streams in `where` with the highest median, of at
// most `at_most` streams (0: any); nullptr when none.
const Row* tcp_total_row(const std::vector<Row>& rows, const std::string& where, int at_most);
// The TCP row a protocol over RAM is held against: the total of several
// streams where it uses several connections and such a row exists, else one
// stream's.
const Row* tcp_beneath(const std::vector<Row>& rows, const Row& protocol);

// --- cpu_evidence.cc -------------------------------------------------------
// Sets each row's cpu_bound and, where other processes kept every core busy,
// its competing load.
void judge_cpu_evidence(Analysis& a);
// Whether `r`'s CPU evidence caps it (`at_ceiling`: it reaches the layer beneath).
bool cpu_caps(const Row& r, bool at_ceiling);
// Names the CPU the finding's cap (layer "cpu"), with the per-packet hint where
// it fits.
void set_cpu(Finding& f, const Row& r, const Analysis& a);

// --- noise -----------------------------------------------------------------
enum class Level { kBelow, kNoise, kCeiling, kFaster };
Level level_of(double ratio, double lo, double hi, double median, const Row& beneath);
Level level_of(const Row& r, const Row& beneath);
// Samples per row that would likely narrow the interval enough to decide.
int suggested_count(const Row& r);
// Two significant digits up, so advice reads as a size to type.
uint64_t round_size_up(double bytes);

// --- trust.cc --------------------------------------------------------------
// Rows a cache may have served or faster than beneath where none can
// (trust.page_cache, trust.cache_ruled_out, trust.anomaly), and rows not over
// the medium they claim (trust.medium): marks the rows, returns their findings.
std::vector<Finding> judge_trust(Analysis& a);
// The small-file rows of each end's disk (files_rules.cc): run-wide notes,
// files.disk_cpu (a phase CPU-bound: the keys go into `cpu_judged`) and
// files.disk_latency (a phase whose worst operation stalled).
std::vector<Finding> judge_files_disk(const Analysis& a, std::set<std::string>& cpu_judged);
// The small-file rows over each share, create and read (what copying a
// folder to and from it does), through the files chain; the keys go into
// `judged` (their CPU is weighed there).
std::vector<Finding> judge_files_shares(const Analysis& a, std::set<std::string>& judged);
// Verdicts resting on a figure a cache may have served list it (untrusted).
void mark_untrusted(Analysis& a);

// --- the chains (tcp_rules.cc, path_rules.cc, protocol_rules.cc) -----------
// Bits of Rule::chains.
enum Chain : unsigned {
  kTcpChain = 1,           // why a TCP row is where it is
  kPathChain = 2,          // disk to disk: the slowest layer of a path
  kProtocolRamChain = 4,   // a protocol over the server's RAM, held against TCP
  kProtocolDiskChain = 8,  // a protocol over its disk, against RAM and the disk
  kRunRule = 16,           // a run-wide rule, made by a step of analyze()
  kFilesChain = 32,        // small files over a share, against its disk and round trips
};

struct TcpCase;
struct PathCase;
struct ProtocolCase;
// A small-file row over a share (files_rules.cc): the same phase on the
// server's disk and what the round trips allow.
struct FilesCase {
  const Row& row;
  const Row* disk = nullptr;  // the server disk's row of the phase, order and size
  double rtt_us = 0;          // the path's idle RTT (the TCP stage's); 0 unknown
  // Per operation: the session's (else the driver table's); 0 unknown. Of
  // them, `serial_round_trips` take turns on the connection.
  uint64_t round_trips = 0;
  uint64_t serial_round_trips = 0;
  double in_flight = 1;  // operations the pass kept in flight (mean)
};
// What a chain's rules judge: the case of exactly one chain.
struct Case {
  const Analysis& a;
  const TcpCase* tcp = nullptr;
  const PathCase* path = nullptr;
  const ProtocolCase* protocol = nullptr;
  const FilesCase* files = nullptr;
};
// Applies when it fills `f` (layer, cap, evidence) and returns true.
using ChainRule = bool (*)(const Case& c, Finding& f);

struct Rule {
  std::string_view id;
  unsigned chains;  // Chain bits
  std::string_view summary;
  ChainRule judge = nullptr;  // nullptr: a run-wide rule (kRunRule)
};
// The table (rules.cc), in the order rules are tried.
std::span<const Rule> rule_table();
// Runs the rules of `chain` over `c` in table order: the first that applies
// makes `f` (its rule id set); false when none applies.
bool run_chain(Chain chain, const Case& c, Finding& f);

// The rules, for the table (each file defines its own).
namespace rules {
bool tcp_cpu(const Case&, Finding&);
bool tcp_window(const Case&, Finding&);
bool tcp_link_unknown(const Case&, Finding&);
bool tcp_above_link(const Case&, Finding&);
bool tcp_busy_near_link(const Case&, Finding&);
bool tcp_at_link(const Case&, Finding&);
bool tcp_load(const Case&, Finding&);
bool tcp_path(const Case&, Finding&);

bool path_medium(const Case&, Finding&);
bool path_noise(const Case&, Finding&);
bool path_tcp(const Case&, Finding&);
bool path_cpu(const Case&, Finding&);
bool path_bus(const Case&, Finding&);
bool path_slowest(const Case&, Finding&);

bool protocol_untrusted(const Case&, Finding&);
bool protocol_rate_cap(const Case&, Finding&);
bool protocol_cpu(const Case&, Finding&);
bool protocol_unmeasured(const Case&, Finding&);
bool protocol_noise(const Case&, Finding&);
bool protocol_at_tcp_ceiling(const Case&, Finding&);
bool protocol_turn_taking(const Case&, Finding&);
bool protocol_client_size_limit(const Case&, Finding&);
bool protocol_client_drain(const Case&, Finding&);
bool protocol_client_window(const Case&, Finding&);
bool protocol_disk_cpu(const Case&, Finding&);
bool protocol_disk_bus(const Case&, Finding&);
bool protocol_disk_ceiling(const Case&, Finding&);
bool protocol_at_ram_ceiling(const Case&, Finding&);
bool protocol_disk_medium(const Case&, Finding&);
bool protocol_disk_unmeasured(const Case&, Finding&);
bool protocol_latency(const Case&, Finding&);
bool protocol_load(const Case&, Finding&);
bool protocol_short_cpu(const Case&, Finding&);
bool protocol_layer(const Case&, Finding&);
bool protocol_plus_disk(const Case&, Finding&);

bool files_untrusted(const Case&, Finding&);
bool files_cpu(const Case&, Finding&);
bool files_round_trips(const Case&, Finding&);
bool files_disk(const Case&, Finding&);
bool files_client(const Case&, Finding&);
bool files_layer(const Case&, Finding&);
}  // namespace rules

// Why TCP is where it is: a finding of the TCP chain (path "tcp").
Finding explain_tcp(const Row& t, const Analysis& a);
// Takes TCP's explanation of row t as f's verdict (layer, cap, CPU,
// candidates, hints) and keeps the explanation as f's evidence.
void adopt_tcp_explanation(const Row& t, const Analysis& a, Finding& f);
// f takes e's verdict (FindingVerdict: layer, cap, CPU, candidates, undecided
// reason, hints) and keeps e as its evidence.
void adopt_verdict(Finding e, Finding& f);
// The row that stands for the capping layer of a TCP explanation: the link
// when the network is at its ceiling, else the TCP row.
std::string tcp_cap_key(const Analysis& a, const Row& t, const std::string& layer);
// Hint "mtu.mismatch" when both ends' MTUs are known and differ; none when they match.
std::optional<Hint> mtu_hint(const Analysis& a);

// Row keys a verdict already judged: no later rule names the CPU for them.
struct Judged {
  std::set<std::string> tcp, cpu;
  // Rows a protocol verdict of their own judged, CPU included.
  std::set<std::string> protocol;
};
// Disk to disk, each way (path_rules.cc).
std::optional<Finding> path_finding(const Analysis& a, Judged& judged, const std::string& name,
                                    const Row* src_disk, const Row* tcp, const Row* dst_disk);
// The verdict for one protocol row (its biggest files); `extras`: with the
// configuration hints (protocol_rules.cc).
Finding protocol_finding(const Analysis& a, const Row& r, bool extras);

// --- headline.cc -----------------------------------------------------------
// Sets each finding's confidence.
void judge_confidence(Analysis& a);
// Picks the headline finding: the user's usual path.
void pick_headline(Analysis& a);

}  // namespace cp::analysis
