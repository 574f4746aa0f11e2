#include "app/trend.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "report/html.h"

namespace cp::app {
namespace {

// Text from the database (labels, facts a remote host reported) with control
// characters shown as \xNN, so nothing reaches the terminal as a sequence.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string change_text(const analysis::EnvDiff& d) {
  return fmt::format("{} {}: {} -> {}", d.where, d.what, d.a, d.b);
}

std::string figure_text(const PathVerdict& v) { return v.figure > 0 ? format_mbps(v.figure) : "-"; }

// The current summary of one run, derived again when stale.
VerdictSummary summary_of(const Store& store, VerdictRefresher& refresher, int64_t id, int version,
                          const std::string& status) {
  if (!refresher.stale(version) && status != kRunning) return store.verdicts(id);
  return refresher.derive(id, status);
}

const PathVerdict* find_path(const VerdictSummary& v, const std::string& path) {
  for (const PathVerdict& p : v.paths)
    if (p.path == path) return &p;
  return nullptr;
}

}  // namespace

Trend build_trend(const Store& store, VerdictRefresher& refresher, const std::string& path,
                  const std::string& host) {
  Trend t;
  t.path = path;
  HistoryFilter f;
  f.host = host;
  f.limit = 0;
  std::set<std::string> paths;
  for (const RunListRow& r : store.history(f)) {
    const VerdictSummary v = summary_of(store, refresher, r.id, r.analysis_version, r.status);
    if (find_path(v, path)) {
      t.server = r.server;
      t.client = r.client;
      break;
    }
    for (const PathVerdict& p : v.paths) paths.insert(p.path);
  }
  if (t.server.empty() && t.client.empty()) {
    std::string known;
    for (const std::string& p : paths) known += (known.empty() ? "" : ", ") + p;
    throw Error(
        ErrorKind::kUsage, fmt::format("no stored run has a verdict for '{}'", path),
        known.empty() ? "run `chokepoint diagnose` first" : "paths with verdicts: " + known);
  }
  stored::Run prev;
  for (TrendPoint& p : store.trend(t.server, t.client, path)) {
    if (refresher.stale(p.analysis_version)) {
      const VerdictSummary v = refresher.derive(p.run_id, kComplete);
      const PathVerdict* pv = find_path(v, path);
      p.verdict = pv ? *pv : PathVerdict{};
    }
    if (p.verdict.path.empty()) continue;
    TrendEntry e{p, {}};
    stored::Run head = store.load_header(p.run_id);
    if (!t.entries.empty()) {
      for (analysis::EnvDiff& d : analysis::env_diff(prev, head)) {
        if (!d.parts.empty()) e.changes.push_back(std::move(d));  // a plan file's name is none
      }
    }
    prev = std::move(head);
    t.entries.push_back(std::move(e));
  }
  return t;
}

std::string trend_text(const Trend& t) {
  std::string out = fmt::format("{} between {} and {}: {} runs\n", printable(t.path),
                                printable(t.server), printable(t.client), t.entries.size());
  out += fmt::format("{:>5}  {:<20}  {:<14}  {:<16}  {:>12}  {}\n", "id", "started", "label",
                     "capped by", "figure", "ratio");
  for (const TrendEntry& e : t.entries) {
    for (const analysis::EnvDiff& d : e.changes) {
      out += fmt::format("       ^ changed: {} ({})\n", printable(change_text(d)), d.kind);
    }
    const PathVerdict& v = e.point.verdict;
    out += fmt::format("{:>5}  {:<20}  {:<14}  {:<16}  {:>12}  {}\n", e.point.run_id,
                       iso_time(e.point.started_at), printable(e.point.label), printable(v.layer),
                       figure_text(v), v.ratio > 0 ? fmt::format("{:.2f}", v.ratio) : "-");
  }
  return out;
}

std::string trend_html(const Trend& t) {
  using report::html_escape;
  // The chart: figure (MB/s) against run order, a marker where something changed.
  constexpr double kW = 720, kH = 260, kPad = 40;
  double top = 0;
  for (const TrendEntry& e : t.entries) top = std::max(top, e.point.verdict.figure);
  if (top <= 0) top = 1;
  const size_t n = t.entries.size();
  auto x = [&](size_t i) { return kPad + (n > 1 ? (kW - 2 * kPad) * i / double(n - 1) : 0); };
  auto y = [&](double v) { return kH - kPad - (kH - 2 * kPad) * v / top; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">"
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>"
      "<text x=\"4\" y=\"{}\" font-size=\"11\">{}</text>",
      kW, kH, kPad, kH - kPad, kW - kPad, kH - kPad, kPad - 8, html_escape(format_mbps(top)));
  std::string line;
  for (size_t i = 0; i < n; ++i) {
    const TrendEntry& e = t.entries[i];
    line += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", x(i), y(e.point.verdict.figure));
    if (!e.changes.empty()) {
      std::string what;
      for (const auto& d : e.changes) what += change_text(d) + "\n";
      svg += fmt::format(
          "<line class=\"change\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
          "stroke=\"#c60\" stroke-dasharray=\"4 3\"><title>{3}</title></line>",
          x(i), kPad / 2, kH - kPad, html_escape(what));
    }
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#36c\"><title>run {}: {} ({})"
        "</title></circle>",
        x(i), y(e.point.verdict.figure), e.point.run_id, html_escape(figure_text(e.point.verdict)),
        html_escape(e.point.verdict.layer));
  }
  svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#36c\"/></svg>", line);
  std::string rows;
  for (const TrendEntry& e : t.entries) {
    std::string changes;
    for (const auto& d : e.changes) changes += "<li>" + html_escape(change_text(d)) + "</li>";
    rows += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
        "<td><ul>{}</ul></td></tr>",
        e.point.run_id, html_escape(iso_time(e.point.started_at)), html_escape(e.point.label),
        html_escape(e.point.verdict.layer), html_escape(figure_text(e.point.verdict)), changes);
  }
  const std::string title = html_escape(fmt::format("{}: {} to {}", t.path, t.server, t.client));
  return fmt::format(
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{0}</title><style>"
      "body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}"
      "td,th{{border:1px solid #ddd;padding:4px 8px;vertical-align:top}}td.num{{text-align:right}}"
      "ul{{margin:0;padding-left:1.2em}}</style></head><body><h1>{0}</h1>{1}"
      "<table><tr><th>run</th><th>started</th><th>label</th><th>capped by</th><th>figure</th>"
      "<th>changed since the run before</th></tr>{2}</table></body></html>\n",
      title, svg, rows);
}

}  // namespace cp::app
