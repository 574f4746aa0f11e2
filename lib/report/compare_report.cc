#include "report/compare_report.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/clock.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/units.h"
#include "report/finding_text.h"
#include "report/row_text.h"
#include "transfer/driver.h"

namespace cp::report {
namespace {

namespace json = boost::json;
using V = analysis::DeltaVerdict;

std::string mb(double bps) { return fmt::format("{:.1f}", bps / kMB); }

std::string run_name(const analysis::RunSide& r) {
  return r.label.empty() ? fmt::format("run {}", r.id)
                         : fmt::format("run {} \"{}\"", r.id, r.label);
}

// Long values (config hashes) are cut for the table; JSON has them whole.
std::string cut(const std::string& s, size_t n = 40) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

json::object side_json(const analysis::RunSide& r) {
  return {{"id", r.id},
          {"label", r.label},
          {"status", r.status},
          {"started_at", r.started_at},
          {"headline", headline_text(r.headline)}};
}

json::object summary_json(const Summary& s, const std::vector<double>& samples,
                          const std::vector<int64_t>& ids) {
  json::array v, i;
  for (double x : samples) v.push_back(x);
  for (int64_t x : ids) i.push_back(x);
  return {{"n", s.n},
          {"median_bytes_per_s", s.median},
          {"min_bytes_per_s", s.min},
          {"max_bytes_per_s", s.max},
          {"samples_bytes_per_s", v},
          {"sample_ids", i}};
}

json::array strings(const std::vector<std::string>& v) {
  json::array out;
  for (const auto& s : v) out.push_back(json::string(s));
  return out;
}

}  // namespace

const char* delta_verdict_name(analysis::DeltaVerdict v) {
  static constexpr EnumName<V> kNames[] = {{V::kNoChange, "no change"},
                                           {V::kFaster, "faster"},
                                           {V::kSlower, "slower"},
                                           {V::kTooFew, "too few samples"},
                                           {V::kDrift, "drift"}};
  return name_in(kNames, v, "no change");
}

std::string delta_note_text(const analysis::RowDelta& d) {
  auto n = [&d](const char* key) {
    auto it = d.note_numbers.find(key);
    CP_CHECK(it != d.note_numbers.end());  // each note has its figures (analysis/compare.h)
    return it->second;
  };
  auto count = [&n](const char* key) { return static_cast<size_t>(n(key)); };
  if (d.note.empty()) return "";
  if (d.note == "too_few") {
    return fmt::format("{} vs {} samples: at least {} on each side are needed", count("n1"),
                       count("n2"), count("min_samples"));
  }
  if (d.note == "cannot_show") {
    return fmt::format(
        "{} vs {} samples cannot show a change at p < {} (4 or more on each side can)", count("n1"),
        count("n2"), n("alpha"));
  }
  if (d.note == "not_significant") {
    return fmt::format(
        "p={:.3f} is not significant after Holm's correction over {} rows; more samples a "
        "side give smaller p-values",
        n("p"), count("family"));
  }
  if (d.note == "within_spread") {
    return fmt::format("the change is within the samples' own spread ({:.1f} % IQR/median)",
                       n("spread") * 100);
  }
  if (d.note == "nothing_recorded") {
    return "nothing recorded differs between the runs: drift, or a change not recorded";
  }
  if (d.note == "unaffected") return "no recorded change can touch this row";
  if (d.note == "within_drift") {
    return fmt::format("within the controls' drift ({} .. {})", format_change(n("low")),
                       format_change(n("high")));
  }
  CP_CHECK(!"a compare note delta_note_text does not know (analysis/compare.h lists them)");
  return d.note;
}

std::string parts_text(const std::vector<std::string>& parts) {
  if (parts.empty()) return "nothing measured";
  std::string out;
  for (const auto& p : parts) {
    std::string w;
    if (p == "*") {
      w = "every row";
    } else if (p == "net") {
      w = "network";
    } else if (p == "tcp") {
      w = "TCP";
    } else if (transfer::find_driver_spec(p)) {
      w = transfer::protocol_display(p);  // a protocol: "SMB", "mounted path"
    } else if (p.size() > 5 && p.compare(p.size() - 5, 5, ".host") == 0) {
      w = "everything on the " + p.substr(0, p.size() - 5);
    } else if (p.rfind("plan.", 0) == 0) {
      w = p.substr(5) + " stages";
    } else if (p.size() > 4 && p.compare(p.size() - 4, 4, ".ram") == 0) {
      w = p.substr(0, p.size() - 4) + " RAM dir";
    } else if (p.size() > 5 && p.compare(p.size() - 5, 5, ".disk") == 0) {
      w = p.substr(0, p.size() - 5) + " disk";
    } else {
      w = p;
    }
    out += (out.empty() ? "" : ", ") + w;
  }
  return out;
}

std::string drift_text(const analysis::Drift& d, size_t rows) {
  if (d.controls.empty()) {
    const std::string why =
        d.too_few > 0
            ? fmt::format("no control with enough samples for a test ({} with too few)", d.too_few)
            : std::string("no control: every row is within reach of a recorded difference");
    if (d.nothing_recorded) {
      return why +
             "; nothing recorded differs between the runs, so any movement is drift or a "
             "change that was not recorded";
    }
    return why +
           ", so the machines' drift cannot be measured; changes are held against their "
           "samples' spread only";
  }
  std::string out =
      d.moved == 0
          ? fmt::format(
                "{} control{} (rows no recorded difference can touch): median change {}; none "
                "moved beyond its own noise, so the band is that median alone",
                d.controls.size(), d.controls.size() == 1 ? "" : "s", format_change(d.median))
          : fmt::format(
                "{} control{} (rows no recorded difference can touch): median change {}, band {} "
                ".. {} (a factor of {:.2f} either way of the median); {} of them moved",
                d.controls.size(), d.controls.size() == 1 ? "" : "s", format_change(d.median),
                format_change(d.low), format_change(d.high), d.spread, d.moved);
  if (d.nothing_recorded) {
    out += fmt::format(
        ". Nothing recorded differs between the runs{}: every row is a control, and any movement "
        "is drift or a change that was not recorded",
        rows == d.controls.size() ? "" : " that a row depends on");
  } else {
    out += ". A change counts only outside that band";
  }
  return out;
}

void require_common_rows(const analysis::Comparison& c) {
  if (!c.rows.empty()) return;
  auto list = [](const std::vector<analysis::RowIdentity>& rows) {
    if (rows.empty()) return std::string("nothing");
    std::string s;
    for (size_t i = 0; i < rows.size(); ++i) s += (i ? "; " : "") + row_label(rows[i]);
    return s;
  };
  throw Error(ErrorKind::kUsage,
              fmt::format("runs {} and {} measured nothing in common: only in run {}: {}; only in "
                          "run {}: {}",
                          c.a.id, c.b.id, c.a.id, list(c.only_a), c.b.id, list(c.only_b)),
              "compare runs of the same plan (same stages and file sizes); `chokepoint show "
              "RUN` lists what a run measured");
}

std::string compare_text(const analysis::Comparison& c, const TextOptions& o) {
  const char* bold = o.color ? "\033[1m" : "";
  const char* green = o.color ? "\033[32m" : "";
  const char* red = o.color ? "\033[31m" : "";
  const char* yellow = o.color ? "\033[33m" : "";
  const char* reset = o.color ? "\033[0m" : "";
  std::string out =
      fmt::format("{}chokepoint compare{}  A = {} ({})  B = {} ({})\n", bold, reset, run_name(c.a),
                  iso_time(c.a.started_at), run_name(c.b), iso_time(c.b.started_at));
  out += fmt::format(
      "\n{}Stages{} (MB/s = 10^6 bytes/s; median (min-max); a change counts at p < {} by the "
      "Mann-Whitney U test after Holm's correction, beyond the samples' spread (IQR/median) and "
      "beyond the drift of the controls; role: \"change\" = a recorded difference can touch the "
      "row, \"control\" = none can)\n",
      bold, reset, analysis::kSignificance);
  out += fmt::format("  {:<36} {:<7} {:>22} {:>22}  {}\n", "layer", "role", "A", "B", "B vs A");
  for (const auto& d : c.rows) {
    // Small-file rows count operations/s ("(ops/s)" in their label), the rest MB/s.
    const bool ops = d.layer == "files";
    auto cell = [ops](const Summary& s) {
      auto f = [ops](double v) { return ops ? fmt::format("{:.0f}", v) : mb(v); };
      return fmt::format("{} ({}-{})", f(s.median), f(s.min), f(s.max));
    };
    std::string change;
    const std::string holm = fmt::format(" Holm p={:.3f}", d.p_corrected);
    const char* verdict = delta_verdict_name(d.verdict);
    if (d.verdict == V::kFaster || d.verdict == V::kSlower) {
      change = fmt::format("{}{:+.1f} % {}{} (p={:.3f}, n={}+{}){}",
                           d.verdict == V::kFaster ? green : red, d.delta * 100, verdict, reset,
                           d.test.p, d.test.n1, d.test.n2, holm);
    } else if (d.verdict == V::kDrift) {
      change = fmt::format("{}{:+.1f} % drift{} (p={:.3f}, n={}+{}){}", yellow, d.delta * 100,
                           reset, d.test.p, d.test.n1, d.test.n2, holm);
    } else if (d.verdict == V::kNoChange) {
      change =
          fmt::format("~ no change (p={:.3f}, n={}+{}){}", d.test.p, d.test.n1, d.test.n2, holm);
    } else {
      change = fmt::format("{:+.1f} % ? {}", d.delta * 100, verdict);
    }
    if (!d.note.empty()) change += "; " + delta_note_text(d);
    if (d.cache_suspected) change += "; cache suspected";
    out += fmt::format("  {:<36} {:<7} {:>22} {:>22}  {}\n", row_label(d),
                       d.affected_by_change ? "change" : "control", cell(d.a), cell(d.b), change);
  }
  auto only = [&](const char* which, const std::vector<analysis::RowIdentity>& rows) {
    if (rows.empty()) return;
    out += fmt::format("  only in {}:", which);
    for (size_t i = 0; i < rows.size(); ++i) out += (i ? "; " : " ") + row_label(rows[i]);
    out += "\n";
  };
  only("A", c.only_a);
  only("B", c.only_b);
  out += fmt::format("\n{}Drift{}\n  {}\n", bold, reset, drift_text(c.drift, c.rows.size()));
  out += fmt::format("\n{}What differs between the runs{} (and what it can affect)\n", bold, reset);
  if (c.env.empty()) {
    out += "  nothing in the recorded plan or host facts\n";
  }
  for (const auto& e : c.env) {
    // The key whole (every changed Samba parameter must be identifiable);
    // long values (config hashes) cut.
    out += fmt::format("  {:<7} {:<40} {} -> {}  [{}: {}]\n", e.where, e.what, cut(e.a), cut(e.b),
                       e.kind, parts_text(e.parts));
  }
  out += fmt::format("\n{}Verdicts{}\n  A: {}\n  B: {}\n", bold, reset, headline_text(c.a.headline),
                     headline_text(c.b.headline));
  return out;
}

std::string compare_json(const analysis::Comparison& c) {
  json::array rows, env, only_a, only_b;
  for (const auto& d : c.rows) {
    rows.push_back(
        {{"key", d.key},
         {"label", row_label(d)},
         {"layer", d.layer},
         {"a", summary_json(d.a, d.a_samples, d.a_ids)},
         {"b", summary_json(d.b, d.b_samples, d.b_ids)},
         {"delta", d.delta},
         {"u", d.test.u},
         {"p", d.test.too_few ? json::value(nullptr) : json::value(d.test.p)},
         {"p_corrected", d.test.too_few ? json::value(nullptr) : json::value(d.p_corrected)},
         {"family", d.family},
         {"exact", d.test.exact},
         {"spread", d.spread},
         {"affected_by_change", d.affected_by_change},
         {"affected_by", strings(d.affected_by)},
         {"verdict", delta_verdict_name(d.verdict)},
         {"note", delta_note_text(d)},
         {"note_id", d.note},
         {"cache_suspected", d.cache_suspected}});
  }
  for (const auto& e : c.env) {
    env.push_back({{"where", e.where},
                   {"what", e.what},
                   {"a", e.a},
                   {"b", e.b},
                   {"kind", e.kind},
                   {"affects", strings(e.parts)},
                   {"rows", strings(e.rows)}});
  }
  for (const auto& r : c.only_a) only_a.push_back(json::string(row_label(r)));
  for (const auto& r : c.only_b) only_b.push_back(json::string(row_label(r)));
  const analysis::Drift& dr = c.drift;
  auto measured = [&](double v) {
    return dr.controls.empty() ? json::value(nullptr) : json::value(v);
  };
  json::object drift{{"controls", strings(dr.controls)},
                     {"median_change", measured(dr.median)},
                     {"spread_factor", measured(dr.spread)},
                     {"low", measured(dr.low)},
                     {"high", measured(dr.high)},
                     {"moved", dr.moved},
                     {"too_few", dr.too_few},
                     {"nothing_recorded", dr.nothing_recorded}};
  json::object doc{{"a", side_json(c.a)},
                   {"b", side_json(c.b)},
                   {"alpha", analysis::kSignificance},
                   {"correction", analysis::kCorrection},
                   {"drift", drift},
                   {"rows", rows},
                   {"only_a", only_a},
                   {"only_b", only_b},
                   {"env", env}};
  return json::serialize(doc) + "\n";
}

}  // namespace cp::report
