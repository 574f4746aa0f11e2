// The packed form of a sample's CPU record (samples.cpu_packed, schema 2):
// the same content as the JSON text `{"server":{...},"client":{...}}` that
// the pipeline stores (core/cpu_message.h's codec per end), with each
// process's identity (pid, comm, role, other namespace) stored once per run
// (table cpu_procs) and numbers in their shortest exact decimal form. About
// a sixth of the JSON's bytes.
//
// Packing is exact or not done: pack_cpu() gives up (std::nullopt) unless
// unpack_cpu() of its result is the very text it was given, so a reader sees
// byte for byte what the writer stored, whichever form holds it.
//
// Grammar (ASCII; no separator can occur inside a number):
//   packed := end (';' end)*
//   end    := ('S' | 'C') fields '|' cores '|' maxes '|' procs   (S: "server", C: "client")
//   fields := 9 numbers joined by ',': seconds, total_busy, sys, softirq,
//             agent, server, kernel, other, own_wait (CpuSummary's order)
//   cores, maxes := numbers joined by ','   (core_busy_pct, core_busy_max_pct)
//   procs  := proc ('/' proc)*  or empty
//   proc   := idx ',' cpu ',' limit ',' top_thread ',' threads ',' wait ',' throttled
//             (idx: the process's row in cpu_procs)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace cp::store {

// Who a process is, as stored once per run.
struct ProcIdentity {
  int pid = 0;
  std::string comm;
  std::string role;
  bool other_netns = false;
  auto tie() const { return std::tie(pid, comm, role, other_netns); }
  bool operator<(const ProcIdentity& o) const { return tie() < o.tie(); }
  bool operator==(const ProcIdentity& o) const { return tie() == o.tie(); }
};

// A run's process identities: index -> identity, and back.
class ProcTable {
 public:
  // The index of `p`, adding it when new (then listed in fresh()).
  int intern(const ProcIdentity& p);
  // Known identity `idx` (from the database); indexes are dense from 0.
  void load(int idx, const ProcIdentity& p);
  const ProcIdentity* at(int idx) const;
  // Identities added by intern() since the last clear_fresh(), with their index.
  const std::vector<std::pair<int, ProcIdentity>>& fresh() const { return fresh_; }
  void clear_fresh() { fresh_.clear(); }
  // Takes back the identities added after the first `keep` of fresh().
  void forget_fresh(size_t keep);

 private:
  std::vector<ProcIdentity> by_idx_;
  std::map<ProcIdentity, int> idx_of_;
  std::vector<std::pair<int, ProcIdentity>> fresh_;
};

// The packed form of `cpu_json`, interning its processes in `procs`; nullopt
// (and `procs` unchanged) when it cannot be packed exactly: not the shape the
// pipeline writes, an end other than server/client, a number not a double.
std::optional<std::string> pack_cpu(const std::string& cpu_json, ProcTable& procs);

// The JSON text back. A packed text this module did not write, or an index
// missing from `procs`, is a damaged database: Error(kIo).
std::string unpack_cpu(const std::string& packed, const ProcTable& procs);

// A sample's details_json whose last member is "properties" (a protocol
// driver's, nearly the same for every sample of a stage): the text without
// it and that member's value, stored once per run (table sample_props).
// nullopt when join_props() of the two would not give `details` back exactly.
struct SplitDetails {
  std::string rest, props;
};
std::optional<SplitDetails> split_props(const std::string& details);
std::string join_props(const std::string& rest, const std::string& props);

}  // namespace cp::store
