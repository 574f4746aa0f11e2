// Renders runs for people (terminal text) and programs (JSON).
#pragma once

#include <string>
#include <vector>

#include "analysis/ladder.h"
#include "core/model.h"
#include "store/store.h"

namespace cp::report {

struct TextOptions {
  bool color = false;  // ANSI colour: only on a TTY
};

// The ladder table and the verdict.
std::string run_text(const RunRecord& run, const analysis::Analysis& a, const TextOptions& opt);
// The same content as one JSON document, with every sample, so each number
// of the verdict can be traced to stored samples.
std::string run_json(const RunRecord& run, const analysis::Analysis& a);

// `history`: each run with its verdict in brief (`verdicts[i]` is rows[i]'s).
std::string history_text(const std::vector<RunListRow>& rows,
                         const std::vector<analysis::Headline>& verdicts);
std::string history_json(const std::vector<RunListRow>& rows,
                         const std::vector<analysis::Headline>& verdicts);

}  // namespace cp::report
