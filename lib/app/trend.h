// `chokepoint history --trend PATH`: one path's capping layer and figure over
// the runs between the same two hosts, with what changed between neighbours
// (the differences `compare` names), as text or a self-contained HTML page.
#pragma once

#include <string>
#include <vector>

#include "analysis/compare.h"
#include "app/verdict_summary.h"
#include "store/store.h"

namespace cp::app {

struct TrendEntry {
  TrendPoint point;                        // the run and its verdict of the path
  std::vector<analysis::EnvDiff> changes;  // against the entry before ("" for the first)
};

struct Trend {
  std::string path;  // "smb ram read"
  std::string server, client;
  std::vector<TrendEntry> entries;  // oldest first; runs with a verdict of the path only
};

// The trend of `path` between the hosts of the newest run whose verdicts name
// it (among runs whose server or client contains `host`, "" any).
// Error(kUsage) when no run has that path, naming the paths there are.
Trend build_trend(const Store& store, VerdictRefresher& refresher, const std::string& path,
                  const std::string& host);

std::string trend_text(const Trend& t);
std::string trend_html(const Trend& t);

}  // namespace cp::app
