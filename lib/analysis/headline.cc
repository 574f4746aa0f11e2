// The headline and confidence policies, and the verdict in brief.
#include <algorithm>
#include <set>
#include <string>

#include "analysis/judge.h"

namespace cp::analysis {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Fewer samples than this on the judged row or the one beneath: a verdict
// that holds, but on little.
constexpr size_t kFewSamples = kSteadySamples;

Confidence confidence_of(const Finding& f) {
  if (f.layer == "undecided") return Confidence::kCannotTell;
  // Notes that say "may": a cache may have served it, the load may have held it.
  if (f.rule == "trust.page_cache" || f.rule == "trust.anomaly" || f.rule == "load.competing") {
    return Confidence::kLikely;
  }
  if (!f.untrusted.empty() || f.lower_bound) return Confidence::kLikely;
  const bool few = (!f.subject.empty() && f.subject.n < kFewSamples) ||
                   (!f.beneath.empty() && f.beneath.n < kFewSamples) ||
                   (is_verdict_path(f.path) && !f.context.empty() &&
                    f.context.front().n < kFewSamples && f.rule.rfind("path.", 0) == 0);
  return few ? Confidence::kLikely : Confidence::kCertain;
}

}  // namespace

bool is_verdict_path(const std::string& path) {
  static const std::set<std::string> kOther = {"cache", "errors", "mtu",  "cpu",
                                               "tcp",   "config", "load", "files"};
  return !path.empty() && !kOther.count(path);
}

bool has_unjudged_figures(const Analysis& a) {
  for (const Row& r : a.rows) {
    if (r.unit == RowUnit::kOps && r.rate.n > 0) return true;
  }
  return false;
}

bool Analysis::has_verdict() const {
  for (const auto& f : findings)
    if (is_verdict_path(f.path)) return true;
  return false;
}

void judge_confidence(Analysis& a) {
  for (Finding& f : a.findings) f.confidence = confidence_of(f);
}

// The headline answers the user's usual path: reading from the server's disk
// through the protocol, else from its RAM, else disk/TCP.
void pick_headline(Analysis& a) {
  auto pick = [&](auto&& wanted) {
    for (size_t i = 0; i < a.findings.size() && a.headline_finding < 0; ++i) {
      if (wanted(a.findings[i].path)) a.headline_finding = static_cast<int>(i);
    }
  };
  for (const std::string want : {"disk read", "ram read"}) {
    pick([&](const std::string& path) { return ends_with(path, want); });
  }
  pick([](const std::string& path) {
    return path == "server -> client" || path == "client -> server";
  });
  // Copying a folder of small files to a share (its create phase) moving
  // more than kSmallFilesSlower times fewer bytes/s than the big files'
  // figure is the slowest thing a user meets there: the headline names the
  // slowest such share, and the big-file verdict follows it in the report.
  if (a.headline_finding < 0) return;
  const double big = a.findings[static_cast<size_t>(a.headline_finding)].subject.median;
  double slowest = 0;
  for (size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& f = a.findings[i];
    if (!ends_with(f.path, "files create") || f.subject.empty()) continue;
    const double bytes_per_s = f.subject.median * double(f.subject.size);  // ops/s x file size
    if (bytes_per_s * kSmallFilesSlower >= big) continue;
    if (slowest == 0 || bytes_per_s < slowest) {
      slowest = std::max(bytes_per_s, 1e-9);
      a.headline_finding = static_cast<int>(i);
    }
  }
}

Headline headline_of(const Analysis& a) {
  Headline h;
  h.stages_ran = a.stages_ran;
  h.figures_only = has_unjudged_figures(a);
  if (a.headline_finding < 0) return h;
  const Finding& f = a.findings[static_cast<size_t>(a.headline_finding)];
  h.path = f.path;
  h.layer = f.layer;
  h.finding = f;
  if (const Row* r = find_row(a, f.cap)) {
    h.cap_row = static_cast<const RowIdentity&>(*r);
    h.cap_bytes_per_s = r->rate.median;
  }
  return h;
}

std::vector<PathVerdict> path_verdicts(const Analysis& a) {
  std::vector<PathVerdict> out;
  for (const Finding& f : a.findings) {
    if (!is_verdict_path(f.path)) continue;
    out.push_back(
        {f.path, f.layer, f.rule, f.subject.median, f.ratio, f.ratio_lo, f.ratio_hi, f.confidence});
  }
  return out;
}

}  // namespace cp::analysis
