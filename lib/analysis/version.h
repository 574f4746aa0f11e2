// The version of the verdict rules: stored with each run's verdict summary
// (lib/store, table verdicts) so `history` re-derives summaries that an older
// analysis wrote. Bump it in any change that can alter a finding's path,
// layer, capping row, figure, ratio or reason.
#pragma once

namespace cp::analysis {

inline constexpr int kAnalysisVersion = 1;

}  // namespace cp::analysis
