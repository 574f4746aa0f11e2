// The verdict summary stored per run (Store::put_verdicts), which `history`
// and `history --trend` read instead of analysing every run again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/ladder.h"
#include "store/store.h"

namespace cp::app {

// The summary of analysis `a`: one entry per finding, in the report's order,
// at analysis::kAnalysisVersion. (The one place that maps a Finding to its
// stored form.)
VerdictSummary summarize_verdicts(const analysis::Analysis& a);

// Analyses run `id` and stores its summary (`store` writable).
void record_verdicts(Store& store, int64_t id);

// The headline of a history row as report::history_text shows it.
analysis::Headline headline_of(const RunListRow& row);

// Summaries an older analysis wrote (or none) derived again, and stored when
// the database can be written: a read-only command's way to keep them current
// without writing a file it may not.
class VerdictRefresher {
 public:
  explicit VerdictRefresher(const Store& reader) : reader_(reader) {}
  ~VerdictRefresher();
  bool stale(int analysis_version) const;
  // The current summary of run `id` (status: a running run is not stored).
  VerdictSummary derive(int64_t id, const std::string& status);
  // Makes each stale row of `rows` current.
  void refresh(std::vector<RunListRow>& rows);

 private:
  Store* writer();
  const Store& reader_;
  std::unique_ptr<Store> writer_;
  bool tried_writer_ = false;
};

}  // namespace cp::app
