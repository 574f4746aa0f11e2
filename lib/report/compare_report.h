// Renders a comparison of two runs (analysis/compare.h) for people and
// programs.
#pragma once

#include <string>

#include "analysis/compare.h"
#include "report/report.h"

namespace cp::report {

// Per row: both medians with min-max, the change and its verdict
// ("faster +98.0 % (p=0.008)", "~ no change (p=0.69)"), the rows only one run
// measured, what differs between the runs, and both verdicts.
std::string compare_text(const analysis::Comparison& c, const TextOptions& opt);
// The same as one JSON document, with every sample and its id.
std::string compare_json(const analysis::Comparison& c);

}  // namespace cp::report
