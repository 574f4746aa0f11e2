#include "app/verdict_summary.h"

#include <unistd.h>

#include "analysis/version.h"
#include "core/error.h"
#include "report/finding_text.h"
#include "report/row_text.h"

namespace cp::app {

VerdictSummary summarize_verdicts(const analysis::Analysis& a) {
  VerdictSummary v;
  v.analysis_version = analysis::kAnalysisVersion;
  v.headline = report::headline_text(a);
  for (size_t i = 0; i < a.findings.size(); ++i) {
    const analysis::Finding& f = a.findings[i];
    PathVerdict p;
    p.path = f.path;
    p.layer = f.layer;
    p.cap = f.cap;
    if (const analysis::Row* r = analysis::find_row(a, f.cap)) {
      p.cap_label = report::row_label(*r);
      p.figure = r->rate.median;
    }
    p.ratio = f.ratio;
    p.ratio_lo = f.ratio_lo;
    p.ratio_hi = f.ratio_hi;
    p.reason = f.layer == "undecided" ? f.undecided_reason : "";
    p.lower_bound = f.lower_bound;
    p.headline = static_cast<int>(i) == a.headline_finding;
    v.paths.push_back(std::move(p));
  }
  return v;
}

void record_verdicts(Store& store, int64_t id) {
  store.put_verdicts(id, summarize_verdicts(analysis::analyze(store.load(id))));
}

analysis::Headline headline_of(const RunListRow& row) {
  analysis::Headline h;
  h.stored_text = row.headline;
  h.path = row.head.path;
  h.layer = row.head.layer;
  h.stored_cap = row.head.cap_label;
  h.cap_bytes_per_s = row.head.figure;
  return h;
}

VerdictRefresher::~VerdictRefresher() = default;

bool VerdictRefresher::stale(int analysis_version) const {
  return analysis_version < analysis::kAnalysisVersion;
}

Store* VerdictRefresher::writer() {
  if (tried_writer_) return writer_.get();
  tried_writer_ = true;
  // Only a file this user may write is opened for writing (root: any).
  if (::access(reader_.path().c_str(), W_OK) != 0) return nullptr;
  try {
    writer_ = std::make_unique<Store>(reader_.path());
  } catch (const Error&) {
    // Locked, or a directory that takes no WAL: the summaries stay derived.
  }
  return writer_.get();
}

VerdictSummary VerdictRefresher::derive(int64_t id, const std::string& status) {
  VerdictSummary v = summarize_verdicts(analysis::analyze(reader_.load(id)));
  if (status == kRunning) return v;
  if (Store* w = writer()) {
    try {
      w->put_verdicts(id, v);
    } catch (const Error&) {
      // Busy with another writer: derived again next time.
    }
  }
  return v;
}

void VerdictRefresher::refresh(std::vector<RunListRow>& rows) {
  for (RunListRow& r : rows) {
    if (!stale(r.analysis_version) && r.status != kRunning) continue;
    const VerdictSummary v = derive(r.id, r.status);
    r.analysis_version = v.analysis_version;
    r.headline = v.headline;
    r.head = {};
    for (const PathVerdict& p : v.paths)
      if (p.headline) r.head = p;
  }
}

}  // namespace cp::app
