// The verdict read in ten seconds: a line per path (what caps it, its figure,
// its share of the layer beneath, how sure), the headline in one short
// sentence, and each finding in brief (at most about 40 words, naming the
// finding it rests on by its path instead of quoting it). The full evidence
// is finding_text() (`--explain`, JSON, HTML).
#pragma once

#include <string>
#include <vector>

#include "analysis/ladder.h"

namespace cp::report {

// One path's line of the summary, as text cells (the text and HTML tables).
struct SummaryLine {
  std::string path;  // "smb ram read", "server -> client"
  std::string
      capped_by;  // "the SMB layer", "the server disk", "CPU (client agent)", "cannot tell (noise)"
  std::string figure;      // "872.5" (MB/s of the judged row), "-" when none
  std::string share;       // "40 % (38-46) of TCP", "" when there is no layer beneath
  std::string confidence;  // "certain" | "likely" | "cannot tell"; ", lower bound" appended
};
std::vector<SummaryLine> summary_lines(const analysis::Analysis& a);

// The capping layer in a few words: "the server disk", "TCP", "the SMB layer",
// "the CPU (smbd, server)", "cannot tell (noise)".
std::string capped_by(const analysis::Finding& f);

// The finding in brief: "smb ram read: the SMB layer caps it at 872.5 MB/s =
// 40 % of TCP." A finding resting on another names it: "(see tcp)".
std::string finding_brief(const analysis::Finding& f, const analysis::Analysis& a);

// Whether the brief says more than the finding's summary line (a verdict path
// whose brief only repeats its line is left out of the text's findings).
bool brief_adds_to_summary(const analysis::Finding& f);

// The headline in one short sentence; why there is none when there is none.
std::string headline_brief(const analysis::Analysis& a);

// The summary table and the headline, as the text report opens.
std::string summary_text(const analysis::Analysis& a, bool bold);

}  // namespace cp::report
