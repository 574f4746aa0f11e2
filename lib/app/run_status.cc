#include "app/run_status.h"

#include <fmt/format.h>

namespace cp::app {

RunOutcome outcome_of(const stored::Run& run, const analysis::Analysis& a) {
  int failed_stages = 0, failed_samples = 0;
  std::string first;
  for (const auto& st : run.stages) {
    if (st.status == kFailed || st.status == kInterrupted) {
      ++failed_stages;
      if (first.empty()) {
        first =
            fmt::format("{} {}: {}", st.driver, st.where, st.error.empty() ? st.status : st.error);
      }
    }
    for (const auto& s : st.samples) {
      if (s.error.empty()) continue;
      ++failed_samples;
      if (first.empty())
        first = fmt::format("{} {} sample {}: {}", st.driver, st.where, s.seq, s.error);
    }
  }
  // A run of the small-file stage alone measured something, though no verdict judges it yet.
  if (!a.has_verdict() && !analysis::has_unjudged_figures(a)) {
    return {kFailed, first.empty() ? "no stage produced a verdict"
                                   : fmt::format("no verdict; first failure: {}", first)};
  }
  if (failed_stages == 0 && failed_samples == 0) return {kComplete, ""};
  return {kPartial, fmt::format("{} stage(s) and {} sample(s) failed; first: {}", failed_stages,
                                failed_samples, first)};
}

int exit_code_for(const std::string& s) {
  if (s == kComplete) return kExitComplete;
  if (s == kPartial) return kExitPartial;
  if (s == kInterrupted) return kExitInterrupted;
  return kExitFailed;
}

}  // namespace cp::app
