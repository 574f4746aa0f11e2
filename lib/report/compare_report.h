// Renders a comparison of two runs (analysis/compare.h) for people and
// programs.
#pragma once

#include <string>
#include <vector>

#include "analysis/compare.h"
#include "report/report.h"

namespace cp::report {

// Refuses two runs with no measured row in common: Error(kUsage) naming the
// rows each one has.
void require_common_rows(const analysis::Comparison& c);

// Per row: both medians with min-max, the change and its verdict
// ("+98.0 % faster (p=0.008, n=5+5) Holm p=0.016", "~ no change (p=0.690,
// n=5+5) Holm p=1.000", "+20.1 % drift ..."), whether a recorded change can
// touch it or it is a control; the drift the controls show; the rows only
// one run measured, what differs between the runs (and what each difference
// can affect), and both verdicts.
std::string compare_text(const analysis::Comparison& c, const TextOptions& opt);
// The same as one JSON document, with every sample and its id.
std::string compare_json(const analysis::Comparison& c);

// A row's verdict: "faster" | "slower" | "no change" | "too few samples" | "drift".
const char* delta_verdict_name(analysis::DeltaVerdict v);

// Why a row's change was not counted (RowDelta::note) in words, with its
// figures: "3 vs 3 samples cannot show a change at p < 0.05 (4 or more on each
// side can)"; "" when there is no note.
std::string delta_note_text(const analysis::RowDelta& d);

// What a change can affect (EnvDiff::parts) in words: "SMB, mounted path",
// "server disk", "every row", "nothing measured".
std::string parts_text(const std::vector<std::string>& parts);

// The drift paragraph of text and HTML: how many controls, their median
// change and spread, how many moved; or why there is no drift figure.
std::string drift_text(const analysis::Drift& drift, size_t rows);

}  // namespace cp::report
