// A finished run's status and diagnose's exit code: `complete` when every
// stage and sample succeeded, `partial` when some failed (or stalled) but a
// verdict stands on the rest, `failed` when there is no verdict
// (analysis::Analysis::has_verdict()).
#pragma once

#include <string>

#include "analysis/ladder.h"
#include "core/stored_run.h"

namespace cp::app {

// diagnose's exit codes (README, "Exit codes").
inline constexpr int kExitComplete = 0;
inline constexpr int kExitFailed = 1;  // no verdict, or the run could not start
inline constexpr int kExitUsage = 2;
inline constexpr int kExitPartial = 3;
inline constexpr int kExitInterrupted = 130;

struct RunOutcome {
  std::string status;  // kComplete | kPartial | kFailed
  std::string error;   // why it is not complete ("" when complete)
};

// For a run whose stages all ran (not interrupted, not failed before them),
// from its samples and its analysis (analysis::analyze(run), done once by the
// caller and passed on to the reports).
RunOutcome outcome_of(const stored::Run& run, const analysis::Analysis& a);

int exit_code_for(const std::string& run_status);

}  // namespace cp::app
