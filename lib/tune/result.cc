// A sweep's statistics and recommendation, and its text, JSON and HTML.
#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/json_util.h"
#include "core/stats.h"
#include "core/units.h"
#include "report/html.h"
#include "tune/sweep.h"

namespace cp::tune {
namespace json = boost::json;
namespace {

std::string mbps(double bps) { return fmt::format("{:.1f}", bps / kMB); }

std::string p_text(const ValueStats& v) {
  if (v.too_few) return "too few";
  return v.p_holm < 0.001 ? "<0.001" : fmt::format("{:.3f}", v.p_holm);
}

// x with P(|Z| > x) = a for a standard normal Z (bisection on erfc).
double z_two_sided(double a) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > a ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Marks values beyond the original's spread; the best such one when none
// is recommended (the largest gain).
std::optional<Unsettled> find_unsettled(TuneResult& r, size_t comparisons) {
  std::optional<Unsettled> best;
  for (auto& lr : r.layers) {
    if (lr.values.empty()) continue;
    const ValueStats& base = lr.values[0];
    for (size_t v = 1; v < lr.values.size(); ++v) {
      ValueStats& st = lr.values[v];
      if (st.better || st.worse || st.n == 0 || base.n == 0) continue;
      st.beyond_spread = st.median > base.p75 || st.median < base.p25;
      if (!st.beyond_spread || st.median <= base.p75) continue;
      if (best && st.change <= best->change) continue;
      best = Unsettled{st.value, lr.layer, st.change, st.p_holm,
                       suggested_rounds(base, st, comparisons, r.rounds)};
    }
  }
  return best;
}

}  // namespace

int suggested_rounds(const ValueStats& base, const ValueStats& v, size_t comparisons, int rounds) {
  const double delta = std::fabs(v.median - base.median);
  if (delta <= 0 || rounds < 1) return 0;
  const double sd0 = (base.p75 - base.p25) / 1.349, sd1 = (v.p75 - v.p25) / 1.349;
  double sd = std::sqrt((sd0 * sd0 + sd1 * sd1) / 2);
  if (sd <= 0) sd = delta / 4;  // no spread seen: assume some
  const double z = z_two_sided(kAlpha / double(std::max<size_t>(comparisons, 1))) + 0.8416;
  const double per_value = 2 * z * z * sd * sd / (delta * delta) / 0.955;
  const double per_round = std::max(1.0, double(std::min(base.n, v.n)) / rounds);
  const double want = std::ceil(per_value / per_round);
  return static_cast<int>(std::clamp(want, double(rounds + 1), 100.0));
}

TuneResult analyze_sweep(const std::string& knob, const std::vector<std::string>& values,
                         const std::vector<LayerSamples>& layers, int rounds) {
  TuneResult r;
  r.knob = knob;
  r.values = values;
  r.rounds = rounds;
  // Per value: the best significant gain, and whether any layer got worse.
  std::vector<double> gain(values.size(), 0);
  std::vector<bool> better(values.size(), false), worse(values.size(), false);
  std::vector<std::string> gain_layer(values.size());
  // First every comparison's raw p, then Holm over all of them (every
  // layer and value): the family a recommendation is chosen from.
  std::vector<double> ps;
  for (const auto& ls : layers) {
    LayerResult lr;
    lr.layer = ls.layer;
    const std::vector<double> base = ls.by_value.empty() ? std::vector<double>{} : ls.by_value[0];
    const Summary bs = summarize(base);
    for (size_t v = 0; v < values.size(); ++v) {
      const std::vector<double> xs =
          v < ls.by_value.size() ? ls.by_value[v] : std::vector<double>{};
      ValueStats st;
      st.value = values[v];
      const Summary s = summarize(xs);
      st.n = s.n;
      st.median = s.median;
      st.min = s.min;
      st.max = s.max;
      st.p25 = xs.empty() ? 0 : percentile(xs, 25);
      st.p75 = xs.empty() ? 0 : percentile(xs, 75);
      if (v > 0) {
        st.change = bs.median > 0 ? s.median / bs.median - 1 : 0;
        const UTest u = mann_whitney_u(xs, base);
        st.p = u.p;
        st.too_few = u.too_few;
        ps.push_back(u.too_few ? 1.0 : u.p);
      }
      lr.values.push_back(st);
    }
    r.layers.push_back(std::move(lr));
  }
  const std::vector<double> adj = holm_adjust(ps);
  size_t next = 0;
  for (auto& lr : r.layers) {
    for (size_t v = 1; v < lr.values.size(); ++v) {
      ValueStats& st = lr.values[v];
      st.p_holm = adj[next++];
      if (st.too_few || st.p_holm >= kAlpha) continue;
      if (st.median > lr.values[0].median) {
        st.better = true;
        better[v] = true;
        if (st.change > gain[v]) {
          gain[v] = st.change;
          gain_layer[v] = lr.layer;
        }
      } else if (st.median < lr.values[0].median) {
        st.worse = true;
        worse[v] = true;
      }
    }
  }
  size_t best = 0;
  for (size_t v = 1; v < values.size(); ++v) {
    if (better[v] && !worse[v] && (best == 0 || gain[v] > gain[best])) best = v;
  }
  if (best > 0) {
    r.recommended = values[best];
    // A grid's values are whole settings ("a=1 b=2"), a single knob's bare values.
    const bool grid = values[best].find('=') != std::string::npos;
    r.reason = fmt::format(
        "{} moves {} {} against the original {} (Holm-corrected p < {} over {} comparisons), and "
        "no affected layer got significantly worse",
        grid ? values[best] : knob + " = " + values[best], gain_layer[best],
        format_change(gain[best]), values.empty() ? "" : values[0], kAlpha, ps.size());
  } else {
    bool any_better = false;
    for (size_t v = 1; v < values.size(); ++v) any_better = any_better || better[v];
    r.reason = any_better ? "every value that helped one layer hurt another significantly"
                          : fmt::format(
                                "no value is significantly better than the original {} on any "
                                "affected layer (Holm-corrected p < {})",
                                values.empty() ? "" : values[0], kAlpha);
    r.unsettled = find_unsettled(r, ps.size());
    if (r.unsettled) {
      const Unsettled& u = *r.unsettled;
      const bool grid = u.value.find('=') != std::string::npos;
      r.reason += fmt::format(
          "; yet {} moved the median of {} {} beyond the original's spread (p25-p75), missing "
          "significance (Holm-corrected p {:.3f}): about {} rounds (--rounds {}) would likely "
          "settle it",
          grid ? u.value : knob + " = " + u.value, u.layer, format_change(u.change), u.p_holm,
          u.suggested_rounds, u.suggested_rounds);
    }
  }
  return r;
}

std::string result_text(const TuneResult& r) {
  std::string out = fmt::format(
      "tune {} on the {} ({}), {} rounds, original {}{}\n", r.knob, r.endpoint, r.target, r.rounds,
      r.original.empty() ? "?" : r.original,
      r.grid.empty() ? "" : fmt::format("; grid {}, {} combinations", r.grid, r.values.size()));
  for (const auto& l : r.layers) {
    out += fmt::format("  {}\n", l.layer);
    size_t w = 22;  // a grid's labels are longer
    for (const auto& v : l.values) w = std::max(w, v.value.size() + 11);
    out += fmt::format("    {:<{}} {:>10} {:>21} {:>4} {:>9} {:>9}\n", "value", w, "median MB/s",
                       "p25-p75 MB/s", "n", "change", "p (Holm)");
    for (size_t i = 0; i < l.values.size(); ++i) {
      const auto& v = l.values[i];
      const std::string name = v.value + (i == 0 ? " (original)" : "");
      out += fmt::format("    {:<{}} {:>10} {:>21} {:>4}", name, w, mbps(v.median),
                         mbps(v.p25) + "-" + mbps(v.p75), v.n);
      if (i > 0) {
        out += fmt::format(" {:>9} {:>9}{}", format_change(v.change), p_text(v),
                           v.better ? "  better" : (v.worse ? "  worse" : ""));
      }
      out += "\n";
    }
  }
  out += r.recommended.empty() ? "Recommendation: keep what you have: "
         : !r.knobs.empty()    ? fmt::format("Recommendation: {}. ", r.recommended)
                               : fmt::format("Recommendation: {} = {}. ", r.knob, r.recommended);
  out += r.reason + ".\n";
  if (!r.run_ids.empty()) {
    out += fmt::format("Runs {}..{} (`chokepoint compare A B` holds any two).\n", r.run_ids.front(),
                       r.run_ids.back());
  }
  return out;
}

std::string result_json(const TuneResult& r) {
  json::object o;
  o["knob"] = r.knob;
  o["endpoint"] = r.endpoint;
  o["target"] = r.target;
  o["original"] = r.original;
  json::array vals;
  for (const auto& v : r.values) vals.push_back(json::value(v));
  o["values"] = std::move(vals);
  o["rounds"] = r.rounds;
  json::array layers;
  for (const auto& l : r.layers) {
    json::array vs;
    for (const auto& v : l.values) {
      vs.push_back(json::object{{"value", v.value},
                                {"n", v.n},
                                {"median_bps", v.median},
                                {"p25_bps", v.p25},
                                {"p75_bps", v.p75},
                                {"min_bps", v.min},
                                {"max_bps", v.max},
                                {"change", v.change},
                                {"p", v.p},
                                {"p_holm", v.p_holm},
                                {"too_few", v.too_few},
                                {"better", v.better},
                                {"worse", v.worse},
                                {"beyond_spread", v.beyond_spread}});
    }
    layers.push_back(json::object{{"layer", l.layer}, {"values", std::move(vs)}});
  }
  o["layers"] = std::move(layers);
  if (!r.knobs.empty()) {
    // A grid: per combination (in `values` order) each knob's value.
    o["grid"] = r.grid;
    json::array knobs, combos;
    for (const auto& k : r.knobs) knobs.push_back(json::value(k));
    for (size_t v = 0; v < r.settings.size(); ++v) {
      json::array set;
      for (const auto& x : r.settings[v]) set.push_back(json::value(x));
      combos.push_back(json::object{{"label", v < r.values.size() ? r.values[v] : ""},
                                    {"settings", std::move(set)}});
    }
    o["knobs"] = std::move(knobs);
    o["combinations"] = std::move(combos);
  }
  o["recommended"] = r.recommended.empty() ? json::value(nullptr) : json::value(r.recommended);
  o["reason"] = r.reason;
  if (r.unsettled) {
    o["unsettled"] = json::object{{"value", r.unsettled->value},
                                  {"layer", r.unsettled->layer},
                                  {"change", r.unsettled->change},
                                  {"p_holm", r.unsettled->p_holm},
                                  {"suggested_rounds", r.unsettled->suggested_rounds}};
  } else {
    o["unsettled"] = nullptr;
  }
  json::array runs;
  for (auto id : r.run_ids) runs.push_back(id);
  o["run_ids"] = std::move(runs);
  return json::serialize(o) + "\n";
}

void read_grid(std::string_view result_json, TuneResult& r) {
  const json::value stored = parse_json_or_null(result_json);
  auto texts = [](const json::value* v) {
    std::vector<std::string> out;
    if (v && v->is_array()) {
      for (const auto& e : v->as_array())
        if (e.is_string()) out.emplace_back(e.as_string());
    }
    return out;
  };
  const json::object* o = stored.if_object();
  if (!o) return;
  if (const auto* g = o->if_contains("grid"); g && g->is_string()) r.grid = g->as_string();
  r.knobs = texts(o->if_contains("knobs"));
  if (const auto* cs = o->if_contains("combinations"); cs && cs->is_array()) {
    for (const auto& c : cs->as_array()) {
      r.settings.push_back(texts(c.is_object() ? c.as_object().if_contains("settings") : nullptr));
    }
  }
}

std::string result_html(const TuneResult& r, const std::vector<LayerSamples>& layers) {
  std::string out = fmt::format(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>chokepoint tune {}</title>"
      "<style>body{{font-family:sans-serif;margin:2em}}svg{{border:1px solid #ccc}}"
      ".rec{{font-weight:bold}}</style></head><body><h1>tune {}</h1><p>{} on the {} ({}), {} "
      "rounds</p><p class=\"rec\">{}</p>",
      report::html_escape(r.knob), report::html_escape(r.knob), report::html_escape(r.knob),
      report::html_escape(r.endpoint), report::html_escape(r.target), r.rounds,
      report::html_escape((r.recommended.empty() ? std::string("Keep what you have. ")
                                                 : "Recommendation: " + r.recommended + ". ") +
                          r.reason));
  const double W = 640, H = 300, left = 60, bottom = 40, top = 20;
  for (const auto& ls : layers) {
    double ymax = 0;
    for (const auto& xs : ls.by_value) {
      for (double x : xs) ymax = std::max(ymax, x);
    }
    if (ymax <= 0) ymax = 1;
    const size_t n = std::max<size_t>(r.values.size(), 1);
    const double step = (W - left - 20) / double(n);
    out += fmt::format("<h2>{}</h2><svg width=\"{}\" height=\"{}\" role=\"img\">",
                       report::html_escape(ls.layer), W, H);
    // y axis: 0 and the top, MB/s.
    out +=
        fmt::format("<text x=\"4\" y=\"{}\" font-size=\"11\">{} MB/s</text>", top + 4, mbps(ymax));
    out += fmt::format("<text x=\"4\" y=\"{}\" font-size=\"11\">0</text>", H - bottom);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>", left,
                       H - bottom, W - 10, H - bottom);
    for (size_t v = 0; v < r.values.size(); ++v) {
      const double cx = left + step * (double(v) + 0.5);
      out += fmt::format(
          "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}{}</text>", cx,
          H - bottom + 16, report::html_escape(r.values[v]), v == 0 ? " (orig)" : "");
      if (v >= ls.by_value.size()) continue;
      const auto& xs = ls.by_value[v];
      for (size_t i = 0; i < xs.size(); ++i) {
        // Spread the dots sideways a little so equal values stay visible.
        const double jitter = (double(i % 7) - 3) * step * 0.04;
        const double cy = H - bottom - (xs[i] / ymax) * (H - bottom - top);
        out += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.7\">"
            "<title>{} MB/s</title></circle>",
            cx + jitter, cy, v == 0 ? "#555" : "#1f77b4", mbps(xs[i]));
      }
    }
    out += "</svg>";
  }
  out += "</body></html>\n";
  return out;
}

}  // namespace cp::tune
