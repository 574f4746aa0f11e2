// Self-contained HTML reports (`--html FILE`): one page, inline CSS and
// inline SVG drawn here, no script and no external URL, so it opens from a
// mail attachment or an archive years later.
//
// Charts are <svg class="chart" data-chart="..."> elements whose bars are
// <rect class="bar ..." data-key="ROW KEY">; the bar of the capping layer
// has class "cap", each successful sample is a <circle class="sample">, and
// the min-max spread a <line class="spread">. Compare charts mark the two
// runs' bars "a" and "b". Tests (and scripts) rely on these names.
#pragma once

#include <string>

#include "analysis/compare.h"
#include "analysis/ladder.h"
#include "core/stored_run.h"

namespace cp::report {

// The run's hosts, its verdict, one ladder chart per path (a bar per layer,
// the capping layer marked, the samples' spread), a chart of every
// measured row, the ladder table and every finding.
std::string run_html(const stored::Run& run, const analysis::Analysis& a);

// Both runs' verdicts, a before/after overlay chart per row both measured
// (with both runs' samples), the table of changes, the rows only one
// measured, and what differs between the runs.
std::string compare_html(const analysis::Comparison& c);

// Text made safe for HTML content and attribute values.
std::string html_escape(const std::string& s);

}  // namespace cp::report
