// Small files (docs/small-files.md): on each end's disk, the run-wide notes
// files.disk_cpu and files.disk_latency; over each share, the files chain,
// holding a phase's operations/s against the same phase on the server's disk
// and against what the round trips allow.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/judge.h"
#include "transfer/driver.h"

namespace cp::analysis {

std::vector<Finding> judge_files_disk(const Analysis& a, std::set<std::string>& cpu_judged) {
  std::vector<Finding> out;
  for (const Row& r : a.rows) {
    if (r.layer != "files" || !r.driver.empty() || r.rate.n == 0) continue;
    // The agent's own thread (or the kernel's) at a core, or a process at its
    // quota: the CPU, not the disk, sets the phase's rate (the agent's: a
    // lower bound). Every core busy is not the one-at-a-time probe's doing.
    if (!r.cpu_bound.empty() && r.cpu_bound.kind != "all cores") {
      Finding f;
      f.rule = "files.disk_cpu";
      f.path = "files";
      f.layer = "cpu";
      f.rows = {r.key};
      f.cap = r.key;
      f.subject = cite(r, CitedName::kLayer);
      f.cpu = r.cpu_bound;
      f.lower_bound = r.cpu_bound.role == "agent";
      f.numbers["ops_per_s"] = r.rate.median;
      cpu_judged.insert(r.key);
      out.push_back(std::move(f));
    }
    // The worst operation far above the median: a device stall or a journal
    // commit a user waits on, whatever the phase's rate.
    if (r.latency_median_us > 0 && r.latency_max_us >= kLatencyStallUs &&
        r.latency_max_us >= kLatencyTail * r.latency_median_us) {
      Finding f;
      f.rule = "files.disk_latency";
      f.path = "files";
      f.layer = r.where + " disk";
      f.rows = {r.key};
      f.subject = cite(r, CitedName::kLayer);
      f.numbers["median_us"] = r.latency_median_us;
      f.numbers["p99_us"] = r.latency_p99_us;
      f.numbers["max_us"] = r.latency_max_us;
      f.numbers["ops_per_s"] = r.rate.median;
      out.push_back(std::move(f));
    }
  }
  return out;
}

namespace {

// The finding's frame: the row judged and the disk row beside it.
void frame(const FilesCase& fc, Finding& f) {
  f.rows = {fc.row.key};
  if (fc.disk) f.rows.push_back(fc.disk->key);
  f.subject = cite(fc.row);
  if (fc.disk) f.beneath = cite(*fc.disk, CitedName::kLayer);
  f.numbers["ops_per_s"] = fc.row.rate.median;
  f.numbers["latency_median_us"] = fc.row.latency_median_us;
  f.numbers["in_flight"] = fc.in_flight;
  if (fc.rtt_us > 0) {
    f.numbers["rtt_ms"] = fc.rtt_us / 1000;
    // The round trips one operation's median time amounts to.
    f.numbers["latency_rtts"] = fc.row.latency_median_us / fc.rtt_us;
  }
  if (fc.round_trips > 0) f.numbers["round_trips"] = fc.round_trips;
  if (fc.serial_round_trips > 0) f.numbers["serial_round_trips"] = fc.serial_round_trips;
  if (fc.disk) f.numbers["disk_ops_per_s"] = fc.disk->rate.median;
}

// Operations/s the round trips allow, 0 when they or the RTT are unknown:
// in flight / (round trips x RTT), the operations overlapping; and at most
// 1 / (serial round trips x RTT), since those take turns on the connection
// whatever is in flight (NFSv4.0's OPEN and CLOSE).
// `turns`: the serial bound is the lower one.
struct Ceiling {
  double ops_per_s = 0;
  bool turns = false;
};
Ceiling round_trip_ceiling(const FilesCase& fc) {
  if (fc.rtt_us <= 0 || fc.round_trips == 0) return {};
  const double rtt_s = fc.rtt_us / 1e6;
  const double overlapped = std::max(1.0, fc.in_flight) / (fc.round_trips * rtt_s);
  const double serial =
      fc.serial_round_trips > 0 ? 1 / (fc.serial_round_trips * rtt_s) : overlapped;
  return serial < overlapped ? Ceiling{serial, true} : Ceiling{overlapped, false};
}

// The path's idle RTT from the TCP rows (the smaller direction's), µs.
double idle_rtt_us(const Analysis& a) {
  double best = 0;
  for (const Row& r : a.rows) {
    if (r.layer != "tcp") continue;
    const double rtt = r.rtt_idle_us > 0 ? r.rtt_idle_us : r.rtt_us;
    if (rtt > 0 && (best == 0 || rtt < best)) best = rtt;
  }
  return best;
}

// The server disk's small-file row of the same phase, order and size.
const Row* server_files_row(const Analysis& a, const Row& r) {
  for (const Row& d : a.rows) {
    if (d.layer == "files" && d.driver.empty() && d.where == "server" && d.op == r.op &&
        d.size == r.size && d.rate.n > 0) {
      return &d;
    }
  }
  return nullptr;
}

}  // namespace

namespace rules {

bool files_untrusted(const Case& c, Finding& f) {
  const FilesCase& fc = *c.files;
  if (fc.row.cache_possible == 0) return false;
  frame(fc, f);
  f.layer = "undecided";
  f.confidence = Confidence::kCannotTell;
  f.candidates = {"cache", fc.row.driver};
  f.undecided_reason = "cache";
  f.words["reason"] = fc.row.cache_possible_why;
  return true;
}

bool files_cpu(const Case& c, Finding& f) {
  const FilesCase& fc = *c.files;
  // Every core busy does not override a phase already at what its round trips
  // allow (as for TCP at the link): those hold it, busy or not.
  const double ceiling = round_trip_ceiling(fc).ops_per_s;
  const bool at_ceiling = ceiling > 0 && fc.row.rate.median >= kRoundTripBound * ceiling;
  if (!cpu_caps(fc.row, at_ceiling)) return false;
  frame(fc, f);
  f.layer = "cpu";
  f.cap = fc.row.key;
  f.cpu = fc.row.cpu_bound;
  f.lower_bound = fc.row.cpu_bound.role == "agent";
  return true;
}

bool files_round_trips(const Case& c, Finding& f) {
  const FilesCase& fc = *c.files;
  const Ceiling cap = round_trip_ceiling(fc);
  const double ceiling = cap.ops_per_s;
  if (ceiling <= 0 || fc.row.rate.median < kRoundTripBound * ceiling) return false;
  frame(fc, f);
  f.layer = "round trips";
  f.cap = fc.row.key;
  f.ratio = fc.row.rate.median / ceiling;
  f.numbers["ceiling_ops_per_s"] = ceiling;
  // Which bound it is: "turns" when the serial round trips set it (more in
  // flight cannot lift it), else "in_flight".
  f.words["bound"] = cap.turns ? "turns" : "in_flight";
  return true;
}

bool files_disk(const Case& c, Finding& f) {
  const FilesCase& fc = *c.files;
  if (fc.row.where != "disk" || !fc.disk || fc.disk->rate.median <= 0) return false;
  const double ratio = fc.row.rate.median / fc.disk->rate.median;
  if (ratio < kAtCeiling) return false;
  frame(fc, f);
  f.layer = "server disk";
  f.cap = fc.disk->key;
  f.ratio = ratio;
  return true;
}

bool files_client(const Case& c, Finding& f) {
  const FilesCase& fc = *c.files;
  const auto it = fc.row.cpu.find("client");
  if (it == fc.row.cpu.end() || it->second.seconds <= 0 || fc.row.rate.median <= 0) return false;
  // The client agent's CPU, in cores (agent_pct is % of one core), over the
  // operations in flight: the share of each operation's time it computed.
  const double cores = it->second.agent_pct / 100;
  const double share = cores / std::max(1.0, fc.in_flight);
  if (share < kClientCpuShare) return false;
  frame(fc, f);
  f.layer = "probe";
  f.cap = fc.row.key;
  f.lower_bound = true;
  f.words["driver"] = fc.row.driver;
  f.numbers["client_cpu_share"] = share;
  f.numbers["client_cpu_us_per_op"] = cores / fc.row.rate.median * 1e6;
  if (const double ceiling = round_trip_ceiling(fc).ops_per_s; ceiling > 0) {
    f.numbers["ceiling_ops_per_s"] = ceiling;
  }
  return true;
}

bool files_layer(const Case& c, Finding& f) {
  const FilesCase& fc = *c.files;
  frame(fc, f);
  f.layer = fc.row.driver;
  f.cap = fc.row.key;
  // From disk, its share of the disk's own rate (over RAM the disk is cited, not beneath).
  if (fc.row.where == "disk" && fc.disk && fc.disk->rate.median > 0) {
    f.ratio = fc.row.rate.median / fc.disk->rate.median;
  }
  if (const double ceiling = round_trip_ceiling(fc).ops_per_s; ceiling > 0) {
    f.numbers["ceiling_ops_per_s"] = ceiling;
  }
  return true;
}

}  // namespace rules

std::vector<Finding> judge_files_shares(const Analysis& a, std::set<std::string>& judged) {
  std::vector<Finding> out;
  const double rtt = idle_rtt_us(a);
  for (const Row& r : a.rows) {
    if (r.layer != "files" || r.driver.empty() || r.rate.n == 0) continue;
    if (r.op != "create" && r.op != "read") continue;  // what copying a folder does
    const transfer::DriverSpec* spec = transfer::find_driver_spec(r.driver);
    const size_t phase = r.op == "create" ? 0 : 2;
    FilesCase fc{.row = r, .disk = server_files_row(a, r), .rtt_us = rtt};
    fc.in_flight = r.in_flight_mean > 0 ? r.in_flight_mean : 1;
    // The round trips the run's sessions reported (what they negotiated),
    // else the driver table's (runs stored before they were reported).
    if (r.round_trips > 0) {
      fc.round_trips = r.round_trips;
      fc.serial_round_trips = std::min(r.serial_round_trips, r.round_trips);
    } else if (spec) {
      fc.round_trips = spec->caps.file_round_trips[phase];
    }
    Finding f;
    f.path = fmt::format("{} {} files {}", r.driver, r.where, r.op);
    if (!run_chain(kFilesChain, Case{a, nullptr, nullptr, nullptr, &fc}, f)) continue;
    judged.insert(r.key);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace cp::analysis
