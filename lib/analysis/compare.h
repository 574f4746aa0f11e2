// Two runs held against each other, to answer "did my change help, and what
// did I change": per ladder row both measured, the medians, the change and
// whether it is real (a two-sided Mann-Whitney U test on the samples at
// p < kSignificance, else "no change", as Go's benchstat does); and every
// difference between the runs' host facts and plans (kernel, MTU,
// readahead, TCP sysctls, Samba config hash and parameters, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/stats.h"

namespace cp::analysis {

constexpr double kSignificance = 0.05;

struct RowDelta {
  std::string key;    // ladder row key, e.g. "tcp:server->client:send"
  std::string label;  // "TCP server -> client"
  std::string layer;
  Summary a, b;                              // bytes/s over each run's successful samples
  std::vector<double> a_samples, b_samples;  // bytes/s
  std::vector<int64_t> a_ids, b_ids;         // the samples' ids in the store
  double delta = 0;                          // (b.median - a.median) / a.median; 0 if a.median is 0
  UTest test;                                // U of A's samples against B's
  std::string verdict;           // "faster" | "slower" | "no change" | "too few samples"
  std::string note;              // why a change could not be shown, or ""
  bool cache_suspected = false;  // in either run (see Row::cache_suspected)
};

struct EnvDiff {
  std::string where;  // "run" | "plan" | "server" | "client"
  std::string what;   // flattened key: "kernel", "net.mtu", "samba.global.smb2 max read"
  std::string a, b;   // values as text; kAbsent when one run lacks it
};

inline constexpr const char* kAbsent = "(absent)";

struct RunSide {
  int64_t id = 0;
  std::string label;
  double started_at = 0;
  std::string status;
  std::string headline;  // its verdict
};

struct Comparison {
  RunSide a, b;
  std::vector<RowDelta> rows;               // rows both runs measured, in A's order
  std::vector<std::string> only_a, only_b;  // labels of rows only one run measured
  std::vector<EnvDiff> env;                 // what differs, run and plan first, then hosts
};

// Throws Error(kUsage) when the runs have no measured row in common, naming
// the rows each one has.
Comparison compare_runs(const RunRecord& a, const RunRecord& b);

// The verdict of one row from its test and delta (exposed for tests).
void judge_delta(RowDelta& d);

}  // namespace cp::analysis
