// Renders runs for people (terminal text) and programs (JSON).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/ladder.h"
#include "core/facts_message.h"
#include "core/model.h"
#include "core/stored_run.h"
#include "store/store.h"

namespace cp::report {

struct TextOptions {
  bool color = false;    // ANSI colour: only on a TTY
  bool explain = false;  // each finding with its full evidence, not in brief
};

// A fact a host's agent measured with a lesser method for want of a
// privilege (the "degraded" list of its facts, probe/platform.h), and what
// would restore it.
struct DegradedFact {
  std::string role;       // "server" | "client"
  std::string fact;       // "process_netns", "smb_negotiated", "disk_cache_bypass", ...
  std::string method;     // what was done instead
  std::string privilege;  // what would restore the full method
};
// In host order, then the agent's order; empty for runs from before the list.
std::vector<DegradedFact> degraded_facts(const stored::Run& run);

// The ladder table and the verdict (and the degraded facts, under the hosts).
std::string run_text(const stored::Run& run, const analysis::Analysis& a, const TextOptions& opt);
// The same content as one JSON document, with every sample, so each number
// of the verdict can be traced to stored samples; "degraded": [{"role", "fact",
// "method", "privilege"}] lists degraded_facts(run).
std::string run_json(const stored::Run& run, const analysis::Analysis& a);

// `history`: each run with its verdict in brief (`verdicts[i]` is rows[i]'s).
std::string history_text(const std::vector<RunListRow>& rows,
                         const std::vector<analysis::Headline>& verdicts);
std::string history_json(const std::vector<RunListRow>& rows,
                         const std::vector<analysis::Headline>& verdicts);

}  // namespace cp::report
