// Two runs held against each other, to answer "did my change help, and what
// did I change": per ladder row both measured, the medians, the change and
// whether the change is real; and every difference between the runs' host
// facts and plans (kernel, MTU, readahead, TCP sysctls, Samba config hash and
// parameters, ...).
//
// Machines drift between runs (other load, thermal state, a disk's cache,
// the network), so a row can move without any change touching it. Each
// difference between the runs is mapped, by kChangeRules, to the parts of the
// setup it can affect; rows that no recorded difference can touch are
// controls, and their movement measures the drift. A row counts as "faster"
// or "slower" only when all of these hold:
//   - a two-sided Mann-Whitney U test on its samples gives p < kSignificance
//     after Holm's correction over its family (the rows a recorded change
//     can touch; the controls are a second family);
//   - the change exceeds the samples' own spread (the mean of the two runs'
//     IQR/median);
//   - a recorded change can touch it, and, when there are controls, the
//     change lies outside the drift band and further from the drift's
//     median than its own spread. The band is taken on ratios B/A (a
//     halving and a doubling are moves of one size): the controls' median
//     ratio times or divided by the largest factor by which a control that
//     moved (verdict kDrift) lies away from it.
// A row that moves by the first two tests but fails the last is "drift".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/ladder.h"
#include "core/model.h"
#include "core/stats.h"

namespace cp::analysis {

constexpr double kSignificance = 0.05;

// What a row's change is (report/compare_report.h delta_verdict_name names
// it: "faster" | "slower" | "no change" | "too few samples" | "drift").
enum class DeltaVerdict { kNoChange, kFaster, kSlower, kTooFew, kDrift };

// A row both runs measured (RowIdentity: what it measures; report/row_text.h
// names it).
struct RowDelta : RowIdentity {
  std::string key;                           // ladder row key, e.g. "tcp:server->client:send"
  Summary a, b;                              // bytes/s over each run's successful samples
  std::vector<double> a_samples, b_samples;  // bytes/s
  std::vector<int64_t> a_ids, b_ids;         // the samples' ids in the store
  double delta = 0;                          // (b.median - a.median) / a.median; 0 if a.median is 0
  UTest test;                                // U of A's samples against B's
  // test.p after Holm's correction over the rows of its family (see above);
  // 1 when too few samples. `family` is how many rows that family has.
  double p_corrected = 1;
  size_t family = 0;
  // The samples' own spread: the mean of the two runs' IQR/median (fraction).
  double spread = 0;
  // A recorded difference between the runs can touch this row (else it is
  // a control), and which: "server samba.global.smb2 max read".
  bool affected_by_change = false;
  std::vector<std::string> affected_by;
  DeltaVerdict verdict = DeltaVerdict::kNoChange;
  // Why a change was not counted ("" when it was, or nothing to say), with its
  // figures; report/compare_report.cc renders the words (delta_note_text):
  //   "too_few"          numbers n1, n2, min_samples
  //   "cannot_show"      n1, n2, alpha (the sample counts cannot reach p < alpha)
  //   "not_significant"  p, family (not after Holm's correction over `family` rows)
  //   "within_spread"    spread (fraction, IQR/median)
  //   "nothing_recorded" (drift: nothing recorded differs between the runs)
  //   "unaffected"       (drift: no recorded change can touch the row)
  //   "within_drift"     low, high (the controls' band, fractions)
  std::string note;
  std::map<std::string, double> note_numbers;
  bool cache_suspected = false;  // in either run (see Row::cache_suspected)
};

struct EnvDiff {
  // "run" | "plan" | "server" | "client" | "negotiated" (what a protocol's
  // samples record of their session: kNegotiated)
  std::string where;
  // flattened key: "kernel", "net.mtu", "samba.global.smb2 max read";
  // negotiated: "DRIVER.PROPERTY" ("smb.smb_encryption")
  std::string what;
  std::string a, b;  // values as text; kAbsent when one run lacks it
  // What kind of change it is ("Samba configuration") and the parts of the
  // setup it can affect ("smb", "server.disk", "*" = all; see kChangeRules);
  // no parts: it changes nothing measured (the plan's file name).
  std::string kind;
  std::vector<std::string> parts;
  // The keys of the rows both runs measured that it can touch (compare_runs
  // fills them; env_diff alone leaves them empty).
  std::vector<std::string> rows;
};

inline constexpr const char* kAbsent = "(absent)";
// A Samba parameter the config leaves at its default (testparm -s omits
// those), and a value the facts of that run do not tell.
inline constexpr const char* kDefault = "(default)";
inline constexpr const char* kUnknown = "(unknown)";

// What a kind of change can affect, as data: the first rule whose `where`
// and key prefix match an EnvDiff applies. `where` is "run", "plan", "host"
// (either host's facts) or "negotiated" (kNegotiated). `parts` are
// space-separated names of the parts of the setup the change can touch; "{h}"
// stands for the host whose fact changed, "{driver}" for the driver whose
// session negotiated it, "{drivers}" for the drivers of the shares whose
// definition changed, "{samba}" for the drivers whose figures a Samba configuration can
// change (DriverSpec::hints.samba_config: smb, and path, which may be an SMB
// mount), "*" for every row, "" for none. A row depends on these parts:
//   disk row on host H:      H.disk H.host plan.disk
//   TCP row:                 net tcp server.host client.host plan.tcp
//   protocol row (driver D): D net tcp server.host client.host client.ram plan.protocol
//                            and server.ram (from RAM) or server.disk (from disk)
struct ChangeRule {
  const char* where;
  const char* prefix;  // the key itself or a dotted parent of it; "" matches any
  const char* kind;
  const char* parts;
};
inline constexpr ChangeRule kChangeRules[] = {
    {"run", "server", "server machine", "*"},
    {"run", "client", "client machine", "*"},
    {"run", "chokepoint version", "chokepoint version", "*"},
    {"run", "", "run", "*"},
    {"plan", "source", "plan file name", ""},
    {"plan", "link", "nominal link speed (the verdict's yardstick only)", ""},
    {"plan", "server.samba_conf", "Samba configuration", "{samba}"},
    {"plan", "server.disk_dir", "server disk directory", "server.disk"},
    {"plan", "client.disk_dir", "client disk directory", "client.disk"},
    {"plan", "server.ram_dir", "server RAM directory", "server.ram"},
    {"plan", "client.ram_dir", "client RAM directory", "client.ram"},
    {"plan", "disk", "disk stage plan", "plan.disk"},
    {"plan", "tcp.data_address", "data path address", "net"},
    {"plan", "tcp", "TCP stage plan", "plan.tcp"},
    {"plan", "protocol", "protocol stage plan", "plan.protocol"},
    {"plan", "shares", "share definitions", "{drivers}"},
    {"plan", "", "plan", "*"},
    {"host", "samba", "Samba configuration", "{samba}"},
    {"host", "disk_dir", "disk under test", "{h}.disk"},
    {"host", "ram_dir", "RAM directory", "{h}.ram"},
    {"host", "net", "network interface", "net"},
    {"host", "tcp_sysctls", "TCP sysctl", "tcp"},
    {"host", "", "host (kernel, CPU, memory, OS)", "{h}.host"},
    {"negotiated", "", "negotiated by the protocol's session", "{driver}"},
};

// What a protocol's session settles with the server, per driver: the
// properties its samples record (Row::properties) that compare diffs, each
// touching that driver's rows. The driver's other properties are the
// client's measurements (round trips, bytes in flight) and change every run.
struct NegotiatedProperty {
  const char* driver;
  const char* property;
};
inline constexpr NegotiatedProperty kNegotiated[] = {
    {"smb", "smb_dialect"},
    {"smb", "dialect"},
    {"smb", "smb_signing"},
    {"smb", "smb_encryption"},
    {"smb", "max_read_size"},
    {"smb", "max_write_size"},
    {"smb", "max_xmit"},
    {"smb", "io_size"},
    {"smb", "connections"},
    {"smb", "connections_chosen"},
    {"smb", "connections_reason"},
    {"nfs", "version"},
    {"nfs", "rsize"},
    {"nfs", "wsize"},
    {"nfs", "write_size_limit"},
    {"nfs", "request_size"},
    {"nfs", "depth_chosen"},
    {"afp", "afp_version"},
    {"afp", "uam"},
    {"afp", "quantum"},
    {"afp", "request_size"},
    {"ftp", "tls"},
    {"ftp", "greeting"},
    {"path", "fstype"},
    {"path", "mount_options"},
};

// The controls' movement between the runs, from the ratios B/A of the
// medians of the rows no recorded difference can touch (with enough samples
// for a test). Changes are fractions (B/A - 1). Empty `controls`: no drift
// measured.
struct Drift {
  std::vector<std::string> controls;  // their keys
  double median = 0;                  // their median change
  // The largest factor by which the ratio of a control that moved lies from
  // the median ratio (>= 1; 1 when none moved): the band is median ratio /
  // spread .. median ratio * spread.
  double spread = 1;
  double low = 0, high = 0;  // the band as changes: (1 + median) / spread - 1 .. * spread - 1
  size_t moved = 0;          // controls whose verdict is kDrift
  size_t too_few = 0;        // controls left out: too few samples for a test
  // No recorded difference touches any measured row: every row is a
  // control, so any movement is drift or a change nobody recorded.
  bool nothing_recorded = false;
};

struct RunSide {
  int64_t id = 0;
  std::string label;
  double started_at = 0;
  std::string status;
  Headline headline;  // its verdict (report/finding_text.h renders it)
};

struct Comparison {
  RunSide a, b;
  std::vector<RowDelta> rows;               // rows both runs measured, in A's order
  std::vector<RowIdentity> only_a, only_b;  // rows only one run measured
  std::vector<EnvDiff> env;                 // what differs, run and plan first, then hosts
  Drift drift;
};

// The p-value correction used, for reports.
inline constexpr const char* kCorrection = "holm";

// No measured row in common leaves `rows` empty (report/compare_report.h
// require_common_rows refuses it, naming the rows each run has).
Comparison compare_runs(const stored::Run& a, const stored::Run& b);

// What differs between the runs' plans and host facts (Comparison::env),
// classified by kChangeRules; needs no stages (Store::load_run_header).
// `smbd_a`/`smbd_b`: the pid of the smbd that served each run's SMB samples
// (Row::server_pid; 0 unknown): its config stands for the server's `samba`
// where the facts list several (samba_instances, left out of the diff: their
// pids change from run to run).
std::vector<EnvDiff> env_diff(const stored::Run& a, const stored::Run& b, int smbd_a = 0,
                              int smbd_b = 0);

// What the protocols' samples recorded differently (kNegotiated), per
// driver: a property's values over that driver's rows (distinct ones joined
// by " | "; kAbsent when a run has none). Only drivers both runs measured.
std::vector<EnvDiff> negotiated_diff(const Analysis& a, const Analysis& b);

// The verdict of one row from its corrected test, spread, delta and the
// drift (exposed for tests).
void judge_delta(RowDelta& d, const Drift& drift);

// The parts of the setup (kChangeRules) the row of `key` depends on.
std::vector<std::string> row_parts(const std::string& layer, const std::string& where);

}  // namespace cp::analysis
