// Where a run is and when it will likely end: the plan's outline (the stages
// and their most samples, as `diagnose --dry-run` prints them) and the rates
// measured so far.
#pragma once

#include <string>
#include <vector>

#include "pipeline/plan.h"
#include "pipeline/runner.h"

namespace cp::pipeline {

class RunEta {
 public:
  explicit RunEta(const Plan& plan);

  // The runner began its next stage (stages begin in outline order).
  void stage_begun();
  // A sample finished (Progress::done): its bytes and seconds teach the rate.
  void sample_done(const Progress& p);

  int stage_no() const { return stage_ < 0 ? 0 : stage_ + 1; }  // 1-based; 0 before the first
  int stage_count() const { return static_cast<int>(stages_.size()); }
  std::string stage_name() const;  // "smb-ram", "disk server"; "" before the first
  // Seconds until the run likely ends, with `live` the sample under way (its
  // seconds so far are already spent); -1 before any rate is known.
  double remaining_s(const Progress& live) const;

 private:
  enum class Kind { kDisk, kTcp, kProtocol, kSizeScan, kFiles };
  struct Stage {
    StageOutline outline;
    Kind kind;
    int done = 0;  // samples finished
  };
  // Bytes/s the kind's samples moved so far (an earlier kind's when it has
  // none yet); 0 when nothing is known.
  double rate_of(Kind k) const;
  double stage_remaining_s(const Stage& s, int samples_left) const;

  std::vector<Stage> stages_;
  int stage_ = -1;
  double tcp_seconds_;
  double budget_s_;  // [protocol] budget: a series ends once past it (0: none)
  int series_;       // series per protocol stage (sizes x 2 directions)
  double settle_s_;  // disk stages wait this long per size
  int disk_sizes_;
  double bytes_[5] = {}, seconds_[5] = {};
  int done_[5] = {};  // samples done per kind
};

// "1 h 05 min", "4 min 10 s", "35 s"; "" for a negative figure.
std::string format_eta(double seconds);

}  // namespace cp::pipeline
