// The small-file rows of each end's disk (docs/small-files.md): the run-wide
// notes files.disk_cpu and files.disk_latency. The share's verdict (held
// against these rows and against the round trips) is a chain of its own.
#include <string>
#include <vector>

#include "analysis/judge.h"

namespace cp::analysis {

std::vector<Finding> judge_files_disk(const Analysis& a, std::set<std::string>& cpu_judged) {
  std::vector<Finding> out;
  for (const Row& r : a.rows) {
    if (r.layer != "files" || r.rate.n == 0) continue;
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
      f.subject = cite(r, r.where + " disk");
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
      f.subject = cite(r, r.where + " disk");
      f.numbers["median_us"] = r.latency_median_us;
      f.numbers["p99_us"] = r.latency_p99_us;
      f.numbers["max_us"] = r.latency_max_us;
      f.numbers["ops_per_s"] = r.rate.median;
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace cp::analysis
