#include "analysis/compare.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "analysis/ladder.h"
#include "core/error.h"
#include "core/json_util.h"

namespace cp::analysis {
namespace {

namespace json = boost::json;

// Facts that change from run to run without anyone changing anything.
bool volatile_key(const std::string& key) {
  static const std::set<std::string> kVolatile = {"agent_max_rss_kb", "ram_dir.avail_bytes",
                                                  "disk_dir.avail_bytes"};
  return kVolatile.count(key) > 0;
}

// Flattens `v` into dotted keys -> text, in document order; arrays stay
// whole (as compact JSON), so a reordered list reads as one change.
void flatten(const json::value& v, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (v.is_object()) {
    for (const auto& [k, sub] : v.as_object()) {
      flatten(sub, prefix.empty() ? std::string(k) : prefix + "." + std::string(k), out);
    }
    return;
  }
  if (prefix.empty()) return;
  std::string text;
  if (v.is_string()) {
    text = std::string(v.as_string());
  } else if (v.is_null()) {
    text = "(unknown)";
  } else {
    text = json::serialize(v);
  }
  out.emplace_back(prefix, text);
}

// The differences between two flattened documents, in A's order then B's.
void diff(const std::string& where, const json::value& a, const json::value& b,
          std::vector<EnvDiff>& out) {
  std::vector<std::pair<std::string, std::string>> fa, fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  std::map<std::string, std::string> mb(fb.begin(), fb.end());
  std::set<std::string> seen;
  // A Samba parameter testparm leaves out is at its default.
  auto missing = [](const std::string& key) {
    return key.rfind("samba.global.", 0) == 0 ? std::string("(default)") : std::string(kAbsent);
  };
  for (const auto& [k, va] : fa) {
    seen.insert(k);
    if (volatile_key(k)) continue;
    auto it = mb.find(k);
    const std::string vb = it == mb.end() ? missing(k) : it->second;
    if (va != vb) out.push_back({where, k, va, vb});
  }
  for (const auto& [k, vb] : fb) {
    if (seen.count(k) || volatile_key(k)) continue;
    out.push_back({where, k, missing(k), vb});
  }
}

const HostRecord* host(const RunRecord& r, const std::string& role) {
  for (const auto& h : r.hosts)
    if (h.role == role) return &h;
  return nullptr;
}

std::vector<EnvDiff> env_diff(const RunRecord& a, const RunRecord& b) {
  std::vector<EnvDiff> out;
  auto add = [&](const std::string& what, const std::string& va, const std::string& vb) {
    if (va != vb) out.push_back({"run", what, va, vb});
  };
  add("server", a.server, b.server);
  add("client", a.client, b.client);
  add("chokepoint version", a.version, b.version);
  diff("plan", parse_json_or_null(a.plan_json), parse_json_or_null(b.plan_json), out);
  for (const char* role : {"server", "client"}) {
    const HostRecord* ha = host(a, role);
    const HostRecord* hb = host(b, role);
    diff(role, ha ? parse_json_or_null(ha->facts_json) : json::value(nullptr),
         hb ? parse_json_or_null(hb->facts_json) : json::value(nullptr), out);
  }
  return out;
}

std::string list(const std::vector<std::string>& labels) {
  if (labels.empty()) return "nothing";
  std::string s;
  for (size_t i = 0; i < labels.size(); ++i) s += (i ? "; " : "") + labels[i];
  return s;
}

RunSide side(const RunRecord& r, const Analysis& an) {
  return {r.id, r.label, r.started_at, r.status, an.headline};
}

}  // namespace

void judge_delta(RowDelta& d) {
  if (d.test.too_few) {
    d.verdict = "too few samples";
    d.note = fmt::format("{} vs {} samples: at least {} on each side are needed", d.test.n1,
                         d.test.n2, kUMinSamples);
    return;
  }
  if (d.test.p < kSignificance) {
    // The medians' direction; when they tie, which side wins more pairs.
    const bool up = d.b.median != d.a.median ? d.b.median > d.a.median
                                             : d.test.u < double(d.test.n1 * d.test.n2) / 2;
    d.verdict = up ? "faster" : "slower";
    return;
  }
  d.verdict = "no change";
  if (mann_whitney_min_p(d.test.n1, d.test.n2) >= kSignificance) {
    d.note = fmt::format(
        "{} vs {} samples cannot show a change at p < {} (4 or more on each side "
        "can)",
        d.test.n1, d.test.n2, kSignificance);
  }
}

Comparison compare_runs(const RunRecord& ra, const RunRecord& rb) {
  const Analysis aa = analyze(ra);
  const Analysis ab = analyze(rb);
  Comparison c;
  c.a = side(ra, aa);
  c.b = side(rb, ab);
  for (const auto& r : aa.rows) {
    if (r.layer == "link" || r.rate.n == 0) continue;
    const Row* other = find_row(ab, r.key);
    if (!other || other->rate.n == 0) {
      c.only_a.push_back(r.label);
      continue;
    }
    RowDelta d;
    d.key = r.key;
    d.label = r.label;
    d.layer = r.layer;
    d.a = r.rate;
    d.b = other->rate;
    d.a_samples = r.samples;
    d.b_samples = other->samples;
    d.a_ids = r.sample_ids;
    d.b_ids = other->sample_ids;
    d.delta = d.a.median > 0 ? (d.b.median - d.a.median) / d.a.median : 0;
    d.test = mann_whitney_u(r.samples, other->samples);
    d.cache_suspected = r.cache_suspected || other->cache_suspected;
    judge_delta(d);
    c.rows.push_back(std::move(d));
  }
  for (const auto& r : ab.rows) {
    if (r.layer == "link" || r.rate.n == 0) continue;
    const Row* other = find_row(aa, r.key);
    if (!other || other->rate.n == 0) c.only_b.push_back(r.label);
  }
  if (c.rows.empty()) {
    throw Error(ErrorKind::kUsage,
                fmt::format("runs {} and {} measured nothing in common: only in run {}: {}; only "
                            "in run {}: {}",
                            ra.id, rb.id, ra.id, list(c.only_a), rb.id, list(c.only_b)),
                "compare runs of the same plan (same stages and file sizes); `chokepoint show "
                "RUN` lists what a run measured");
  }
  c.env = env_diff(ra, rb);
  return c;
}

}  // namespace cp::analysis
