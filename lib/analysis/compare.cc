#include "analysis/compare.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "analysis/ladder.h"
#include "core/stored_run_json.h"
#include "transfer/driver.h"

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
    text = kUnknown;
  } else {
    text = json::serialize(v);
  }
  out.emplace_back(prefix, text);
}

// Whether host facts hold the [global] section of a Samba config that was
// read (then a parameter it lacks is at its default).
bool has_samba_globals(const json::value& facts) {
  const json::object* o = facts.if_object();
  const json::value* samba = o ? o->if_contains("samba") : nullptr;
  const json::object* so = samba ? samba->if_object() : nullptr;
  const json::value* global = so ? so->if_contains("global") : nullptr;
  return global && global->is_object();
}

// The differences between two flattened documents, in A's order then B's.
void diff(const std::string& where, const json::value& a, const json::value& b,
          std::vector<EnvDiff>& out) {
  std::vector<std::pair<std::string, std::string>> fa, fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  std::map<std::string, std::string> mb(fb.begin(), fb.end());
  std::set<std::string> seen;
  // A Samba parameter testparm leaves out is at its default (a share's: at
  // [global]'s), when that run read a config at all (a run whose facts have
  // none does not tell).
  auto missing = [](const std::string& key, bool globals) {
    return (key.rfind("samba.global.", 0) == 0 || key.rfind("samba.shares.", 0) == 0) && globals
               ? std::string(kDefault)
               : std::string(kAbsent);
  };
  const bool globals_a = has_samba_globals(a), globals_b = has_samba_globals(b);
  // A null in one document where the other has an object ("samba": null
  // against its sha256 and parameters): the object's keys show the change.
  auto has_children = [](const std::vector<std::pair<std::string, std::string>>& f,
                         const std::string& key) {
    return std::any_of(f.begin(), f.end(), [&](const auto& kv) {
      return kv.first.size() > key.size() && kv.first.compare(0, key.size(), key) == 0 &&
             kv.first[key.size()] == '.';
    });
  };
  for (const auto& [k, va] : fa) {
    seen.insert(k);
    if (volatile_key(k)) continue;
    auto it = mb.find(k);
    if (it == mb.end() && va == kUnknown && has_children(fb, k)) continue;
    const std::string vb = it == mb.end() ? missing(k, globals_b) : it->second;
    if (va != vb) out.push_back({where, k, va, vb, "", {}, {}});
  }
  for (const auto& [k, vb] : fb) {
    if (seen.count(k) || volatile_key(k)) continue;
    if (vb == kUnknown && has_children(fa, k)) continue;
    out.push_back({where, k, missing(k, globals_a), vb, "", {}, {}});
  }
}

// `key` is `prefix` or below it ("net.mtu" is below "net"); "" matches all.
bool under(const std::string& key, std::string_view prefix) {
  if (prefix.empty() || key == prefix) return true;
  return key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0 &&
         key[prefix.size()] == '.';
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

// The two runs' plans a difference is classified against (none for a
// negotiated difference).
struct Plans {
  const json::value* a = nullptr;
  const json::value* b = nullptr;
};

// The drivers of the shares whose definitions differ between two plans'
// "shares" arrays; {"*"} when one cannot be read.
std::vector<std::string> changed_share_drivers(const Plans& plans) {
  const json::value* both[2] = {plans.a, plans.b};
  std::map<std::string, std::pair<std::string, std::string>> by_name[2];  // name -> text, driver
  for (int side = 0; side < 2; ++side) {
    const json::object* plan = both[side] ? both[side]->if_object() : nullptr;
    const json::value* shares = plan ? plan->if_contains("shares") : nullptr;
    if (!shares) continue;
    if (!shares->is_array()) return {"*"};
    for (const auto& share : shares->as_array()) {
      const json::object* o = share.if_object();
      if (!o) return {"*"};
      auto field = [&](const char* k) {
        const json::value* f = o->if_contains(k);
        return f && f->is_string() ? std::string(f->as_string()) : std::string("*");
      };
      by_name[side][field("name")] = {json::serialize(share), field("driver")};
    }
  }
  std::set<std::string> drivers;
  for (int side = 0; side < 2; ++side) {
    for (const auto& [name, entry] : by_name[side]) {
      auto it = by_name[1 - side].find(name);
      if (it == by_name[1 - side].end() || it->second.first != entry.first) {
        drivers.insert(entry.second);
      }
    }
  }
  if (drivers.count("*")) return {"*"};
  return {drivers.begin(), drivers.end()};
}

// Fills e.kind and e.parts from the first matching rule of kChangeRules.
void classify(EnvDiff& e, const Plans& plans = {}) {
  const bool is_host = e.where == "server" || e.where == "client";
  for (const ChangeRule& rule : kChangeRules) {
    const std::string_view rw = rule.where;
    if (!(rw == e.where || (rw == "host" && is_host)) || !under(e.what, rule.prefix)) continue;
    e.kind = rule.kind;
    e.parts.clear();
    for (std::string part : split_words(rule.parts)) {
      if (part == "{drivers}") {
        for (auto& d : changed_share_drivers(plans)) e.parts.push_back(d);
        continue;
      }
      if (part == "{samba}") {
        for (const transfer::DriverSpec* d : transfer::driver_specs()) {
          if (d->hints.samba_config) e.parts.emplace_back(d->name);
        }
        continue;
      }
      if (part == "{driver}") part = e.what.substr(0, e.what.find('.'));  // "smb.dialect"
      if (const size_t at = part.find("{h}"); at != std::string::npos) {
        part.replace(at, 3, e.where);
      }
      e.parts.push_back(part);
    }
    return;
  }
  // No rule knows it: it may touch anything.
  e.kind = "unclassified";
  e.parts = {"*"};
}

}  // namespace

namespace {

// A host's facts as compare diffs them: see env_diff.
json::value facts_json(const stored::Host* h, int smbd) {
  if (!h) return nullptr;
  if (!h->facts) return stored::to_json(h->facts);
  msg::Facts f = *h->facts;
  for (msg::SambaFacts& s : f.samba_instances) {
    if (smbd <= 0 || s.pid != smbd) continue;
    s.pid = 0;
    f.samba = std::move(s);
    break;
  }
  f.samba_instances.clear();
  return stored::to_json(std::optional<msg::Facts>(std::move(f)));
}

// The smbd that served the run's SMB samples (the first row naming one); 0 none.
int smb_server_pid(const Analysis& a) {
  for (const Row& r : a.rows) {
    if (r.layer == "smb" && r.server_pid > 0) return r.server_pid;
  }
  return 0;
}

}  // namespace

std::vector<EnvDiff> env_diff(const stored::Run& a, const stored::Run& b, int smbd_a, int smbd_b) {
  std::vector<EnvDiff> out;
  auto add = [&](const std::string& what, const std::string& va, const std::string& vb) {
    if (va != vb) out.push_back({"run", what, va, vb, "", {}, {}});
  };
  add("server", a.server, b.server);
  add("client", a.client, b.client);
  add("chokepoint version", a.version, b.version);
  diff("plan", a.plan.value(), b.plan.value(), out);
  for (const char* role : {"server", "client"}) {
    const stored::Host* ha = a.host(role);
    const stored::Host* hb = b.host(role);
    const bool server = std::string_view(role) == "server";
    diff(role, facts_json(ha, server ? smbd_a : 0), facts_json(hb, server ? smbd_b : 0), out);
  }
  for (auto& e : out) classify(e, {&a.plan.value(), &b.plan.value()});
  return out;
}

std::vector<EnvDiff> negotiated_diff(const Analysis& a, const Analysis& b) {
  // driver -> property -> distinct values over its rows, in row order.
  using Values = std::map<std::string, std::map<std::string, std::vector<std::string>>>;
  auto collect = [](const Analysis& an) {
    Values out;
    for (const Row& r : an.rows) {
      if (r.layer == "link" || r.layer == "tcp" || r.layer == "disk" || r.rate.n == 0) continue;
      auto& of_driver = out[r.layer];
      for (const NegotiatedProperty& np : kNegotiated) {
        if (r.layer != np.driver) continue;
        auto it = r.properties.find(np.property);
        if (it == r.properties.end()) continue;
        auto& v = of_driver[np.property];
        if (std::find(v.begin(), v.end(), it->second) == v.end()) v.push_back(it->second);
      }
    }
    return out;
  };
  const Values va = collect(a), vb = collect(b);
  auto text = [](const std::map<std::string, std::vector<std::string>>& of_driver,
                 const char* property) {
    auto it = of_driver.find(property);
    if (it == of_driver.end()) return std::string(kAbsent);
    std::string s;
    for (const auto& v : it->second) s += (s.empty() ? "" : " | ") + v;
    return s;
  };
  std::vector<EnvDiff> out;
  for (const NegotiatedProperty& np : kNegotiated) {
    auto ia = va.find(np.driver), ib = vb.find(np.driver);
    if (ia == va.end() || ib == vb.end()) continue;
    const std::string ta = text(ia->second, np.property), tb = text(ib->second, np.property);
    if (ta == tb) continue;
    EnvDiff e{"negotiated", fmt::format("{}.{}", np.driver, np.property), ta, tb, "", {}, {}};
    classify(e);
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// Median of `v` (not empty).
double median_of(std::vector<double> v) { return percentile(std::move(v), 50); }

// Holm's correction over the rows of `family` (indices into rows) that have
// a p-value; the others keep p_corrected = 1.
void correct(std::vector<RowDelta>& rows, const std::vector<size_t>& family) {
  std::vector<size_t> tested;
  std::vector<double> p;
  for (size_t i : family) {
    if (rows[i].test.too_few) continue;
    tested.push_back(i);
    p.push_back(rows[i].test.p);
  }
  const std::vector<double> adj = holm_adjust(p);
  for (size_t k = 0; k < tested.size(); ++k) {
    rows[tested[k]].p_corrected = adj[k];
    rows[tested[k]].family = tested.size();
  }
}

RunSide side(const stored::Run& r, const Analysis& an) {
  return {r.id, r.label, r.started_at, r.status, headline_of(an)};
}

}  // namespace

void judge_delta(RowDelta& d, const Drift& drift) {
  d.note.clear();
  d.note_numbers.clear();
  const double n1 = double(d.test.n1), n2 = double(d.test.n2);
  if (d.test.too_few) {
    d.verdict = DeltaVerdict::kTooFew;
    d.note = "too_few";
    d.note_numbers = {{"n1", n1}, {"n2", n2}, {"min_samples", double(kUMinSamples)}};
    return;
  }
  const bool significant = d.p_corrected < kSignificance;
  const bool beyond_spread = std::abs(d.delta) > d.spread;
  if (!significant || !beyond_spread) {
    d.verdict = DeltaVerdict::kNoChange;
    if (mann_whitney_min_p(d.test.n1, d.test.n2) >= kSignificance) {
      d.note = "cannot_show";
      d.note_numbers = {{"n1", n1}, {"n2", n2}, {"alpha", kSignificance}};
    } else if (!significant && d.test.p < kSignificance) {
      d.note = "not_significant";
      d.note_numbers = {{"p", d.test.p}, {"family", double(d.family)}};
    } else if (significant) {
      d.note = "within_spread";
      d.note_numbers = {{"spread", d.spread}};
    }
    return;
  }
  if (!d.affected_by_change) {
    d.verdict = DeltaVerdict::kDrift;
    d.note = drift.nothing_recorded ? "nothing_recorded" : "unaffected";
    return;
  }
  if (!drift.controls.empty()) {
    const bool in_band = d.delta >= drift.low && d.delta <= drift.high;
    // On ratios: B/A within a factor (1 + spread) of the drift's median ratio.
    const bool near_median =
        std::abs(std::log1p(d.delta) - std::log1p(drift.median)) <= std::log1p(d.spread);
    if (in_band || near_median) {
      d.verdict = DeltaVerdict::kDrift;
      d.note = "within_drift";
      d.note_numbers = {{"low", drift.low}, {"high", drift.high}};
      return;
    }
  }
  d.verdict = d.delta > 0 ? DeltaVerdict::kFaster : DeltaVerdict::kSlower;
}

std::vector<std::string> row_parts(const std::string& layer, const std::string& where) {
  if (layer == "disk") return {where + ".disk", where + ".host", "plan.disk"};
  if (layer == "tcp") return {"net", "tcp", "server.host", "client.host", "plan.tcp"};
  // A protocol (its driver's name) over the server's RAM or disk.
  return {
      layer,         "net",        "tcp",           "server.host",
      "client.host", "client.ram", "plan.protocol", where == "ram" ? "server.ram" : "server.disk"};
}

Comparison compare_runs(const stored::Run& ra, const stored::Run& rb) {
  const Analysis aa = analyze(ra);
  const Analysis ab = analyze(rb);
  Comparison c;
  c.a = side(ra, aa);
  c.b = side(rb, ab);
  c.env = env_diff(ra, rb, smb_server_pid(aa), smb_server_pid(ab));
  for (EnvDiff& e : negotiated_diff(aa, ab)) c.env.push_back(std::move(e));
  for (const auto& r : aa.rows) {
    if (r.layer == "link" || r.rate.n == 0) continue;
    const Row* other = find_row(ab, r.key);
    if (!other || other->rate.n == 0) {
      c.only_a.push_back(r);
      continue;
    }
    RowDelta d;
    static_cast<RowIdentity&>(d) = r;
    d.key = r.key;
    d.a = r.rate;
    d.b = other->rate;
    d.a_samples = r.samples;
    d.b_samples = other->samples;
    d.a_ids = r.sample_ids;
    d.b_ids = other->sample_ids;
    d.delta = d.a.median > 0 ? (d.b.median - d.a.median) / d.a.median : 0;
    d.test = mann_whitney_u(r.samples, other->samples);
    d.spread = (relative_iqr(r.samples) + relative_iqr(other->samples)) / 2;
    d.cache_suspected = r.cache_suspected || other->cache_suspected;
    const std::vector<std::string> parts = row_parts(r.layer, r.where);
    for (auto& e : c.env) {
      const bool touches = std::any_of(e.parts.begin(), e.parts.end(), [&](const std::string& p) {
        return p == "*" || std::find(parts.begin(), parts.end(), p) != parts.end();
      });
      if (!touches) continue;
      d.affected_by.push_back(e.where + " " + e.what);
      e.rows.push_back(d.key);
    }
    d.affected_by_change = !d.affected_by.empty();
    c.rows.push_back(std::move(d));
  }
  for (const auto& r : ab.rows) {
    if (r.layer == "link" || r.rate.n == 0) continue;
    const Row* other = find_row(aa, r.key);
    if (!other || other->rate.n == 0) c.only_b.push_back(r);
  }

  // Two families for Holm's correction: the rows a recorded change can
  // touch (is the change real?) and the controls (did the machines drift?).
  std::vector<size_t> affected, controls;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    (c.rows[i].affected_by_change ? affected : controls).push_back(i);
  }
  correct(c.rows, affected);
  correct(c.rows, controls);

  // The drift: how far the controls' medians moved. The controls are judged
  // first (their verdict needs no band): the median is over all of them, the
  // band's width over those that moved, so a control whose median wanders
  // within its own noise does not widen it (its noise is not drift, and an
  // affected row's own noise is held against its own spread).
  Drift& drift = c.drift;
  drift.nothing_recorded = affected.empty();
  std::vector<double> logs, moved_logs;  // ln(B/A) of the controls' medians
  for (size_t i : controls) {
    RowDelta& d = c.rows[i];
    judge_delta(d, drift);
    if (d.test.too_few) {
      ++drift.too_few;
      continue;
    }
    // A rate is a median of positive bytes/s; a zero median says nothing of drift.
    if (d.a.median <= 0 || d.b.median <= 0) continue;
    drift.controls.push_back(d.key);
    logs.push_back(std::log(d.b.median / d.a.median));
    if (d.verdict == DeltaVerdict::kDrift) moved_logs.push_back(logs.back());
  }
  drift.moved = moved_logs.size();
  if (!logs.empty()) {
    const double m = median_of(logs);
    double s = 0;
    for (double x : moved_logs) s = std::max(s, std::abs(x - m));
    drift.median = std::exp(m) - 1;
    drift.spread = std::exp(s);
    drift.low = std::exp(m - s) - 1;
    drift.high = std::exp(m + s) - 1;
  }
  for (size_t i : affected) judge_delta(c.rows[i], drift);
  return c;
}

}  // namespace cp::analysis
