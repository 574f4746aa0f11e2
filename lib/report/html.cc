#include "report/html.h"

#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "core/clock.h"
#include "core/units.h"
#include "report/compare_report.h"
#include "report/finding_text.h"
#include "report/hint_text.h"
#include "report/row_text.h"
#include "report/summary.h"

namespace cp::report {
namespace {

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1000px;
  padding:0 16px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:18px 0 4px}
.meta{color:#666}.headline{font-size:16px;background:#f4f7fb;border-left:4px solid #2f6db5;
  padding:10px 14px;margin:14px 0}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;
  text-align:left;vertical-align:top}th{background:#fafafa}td.num{text-align:right;
  font-variant-numeric:tabular-nums}
.finding{margin:4px 0 12px}.hint{color:#205b20}.warn{color:#a34a00}.bad{color:#b52020}
.good{color:#207020}.muted{color:#888}
svg.chart{display:block;margin:4px 0 14px;font:12px system-ui,sans-serif}
svg.chart text{fill:#222}svg.chart .axis{stroke:#bbb;stroke-width:1}
svg.chart text.tick{fill:#888;font-size:11px}
rect.bar{fill:#6d97cf}rect.bar.link{fill:#c9c9c9}rect.bar.cap{fill:#d0473c}
rect.bar.cache{stroke:#e08a00;stroke-width:2;stroke-dasharray:4 2}
rect.bar.a{fill:#b9c3cf}rect.bar.b{fill:#2f6db5}rect.bar.b.slower{fill:#d0473c}
rect.bar.b.faster{fill:#2e8b3d}rect.bar.b.drift{fill:#c9a227}.drift{color:#8a6d00}
line.spread{stroke:#333;stroke-width:1.5}circle.sample{fill:#111;fill-opacity:.55}
circle.sample.a{fill:#fff;fill-opacity:1;stroke:#555;stroke-width:1}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px -2px 12px}
)";

std::string esc(const std::string& s) { return html_escape(s); }

std::string mb(double bps) { return format_mbps(bps); }
// A row's figure in its unit: MB/s, or operations/s (small-file rows).
std::string figure(const analysis::Row& r, double v) {
  return r.unit == analysis::RowUnit::kOps ? fmt::format("{:.0f} ops/s", v) : mb(v);
}

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>{}</title><style>{}</style></head>\n<body>\n{}\n</body></html>\n",
      esc(title), kStyle, body);
}

// One bar of a chart.
struct Bar {
  std::string key;
  std::string label;
  double value = 0;  // bytes/s, the bar's length
  double min = 0, max = 0;
  std::vector<double> samples;  // bytes/s
  std::string cls;              // extra classes: "cap", "link", "cache"
  std::string note;             // after the bar
  std::string tip;              // tooltip
};

// A round axis maximum, bytes/s: 1, 2 or 5 x 10^k MB/s above `v`.
double nice_max(double v) {
  if (v <= 0) return kMB;
  const double mbs = v / kMB * 1.05;
  const double p = std::pow(10, std::floor(std::log10(mbs)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (mbs <= m * p) return m * p * kMB;
  return 10 * p * kMB;
}

constexpr int kWidth = 900, kLabelW = 270, kBarX = 280, kBarW = 400, kRowH = 30, kBarH = 18;

std::string axis(double scale, int y) {
  std::string out =
      fmt::format(R"(<line class="axis" x1="{}" y1="4" x2="{}" y2="{}"/>)", kBarX, kBarX, y);
  for (int i = 0; i <= 4; ++i) {
    const int x = kBarX + kBarW * i / 4;
    out += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>)", x,
                       y + 14, fmt::format("{:g}", scale / kMB * i / 4));
  }
  out += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="start">MB/s</text>)",
                     kBarX + kBarW + 12, y + 14);
  return out;
}

double x_of(double v, double scale) { return kBarX + kBarW * std::min(1.0, v / scale); }

// A horizontal bar chart, one row per bar; `id` goes to data-chart.
std::string bar_chart(const std::string& id, const std::string& title,
                      const std::vector<Bar>& bars) {
  double top = 0;
  for (const auto& b : bars) top = std::max({top, b.value, b.max});
  const double scale = nice_max(top);
  const int h = static_cast<int>(bars.size()) * kRowH + 8;
  std::string out = fmt::format(
      R"(<svg class="chart" data-chart="{}" width="{}" height="{}" viewBox="0 0 {} {}" role="img">)"
      R"(<title>{}</title>)",
      esc(id), kWidth, h + 22, kWidth, h + 22, esc(title));
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = 8 + static_cast<int>(i) * kRowH;
    const double cy = y + kBarH / 2.0;
    const double w = std::max(b.value > 0 ? 1.0 : 0.0, x_of(b.value, scale) - kBarX);
    out += fmt::format(
        R"(<text x="{}" y="{:.1f}" text-anchor="end" dominant-baseline="middle">{}</text>)",
        kLabelW, cy, esc(b.label));
    out += fmt::format(
        R"(<rect class="bar{}" data-key="{}" x="{}" y="{}" width="{:.1f}" height="{}"><title>{}</title></rect>)",
        b.cls.empty() ? "" : " " + b.cls, esc(b.key), kBarX, y, w, kBarH, esc(b.tip));
    if (b.samples.size() > 1) {
      out +=
          fmt::format(R"(<line class="spread" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)",
                      x_of(b.min, scale), cy, x_of(b.max, scale), cy);
    }
    for (double s : b.samples) {
      out += fmt::format(R"(<circle class="sample" cx="{:.1f}" cy="{:.1f}" r="3"/>)",
                         x_of(s, scale), cy);
    }
    out += fmt::format(R"(<text x="{}" y="{:.1f}" dominant-baseline="middle">{}</text>)",
                       kBarX + kBarW + 8, cy, esc(b.note));
  }
  out += axis(scale, h);
  out += "</svg>\n";
  return out;
}

Bar row_bar(const analysis::Analysis& a, const analysis::Row& r, const std::string& cap) {
  Bar b;
  b.key = r.key;
  b.label = row_label(r);
  b.value = r.rate.median;
  b.min = r.rate.min;
  b.max = r.rate.max;
  b.samples = r.samples;
  std::vector<std::string> cls;
  if (r.layer == "link") {
    b.label = "link (nominal)";
    cls.push_back("link");
    b.note = format_rate_bits(a.link_bits);
    b.tip = fmt::format("nominal link {} ({})", format_rate_bits(a.link_bits),
                        link_source_text(a.link_source));
  } else {
    b.note = mb(r.rate.median);
    b.tip = fmt::format("{}: median {}, min {}, max {}, {} samples", row_label(r),
                        mb(r.rate.median), mb(r.rate.min), mb(r.rate.max), r.rate.n);
  }
  if (r.key == cap) {
    cls.push_back("cap");
    b.note += "  \u25C0 caps";
  }
  if (r.cache_suspected) {
    cls.push_back("cache");
    b.note += "  cache?";
    b.tip += "; cache suspected: " + trust_reasons_text(r.cache_reasons);
  }
  for (size_t i = 0; i < cls.size(); ++i) b.cls += (i ? " " : "") + cls[i];
  return b;
}

// A chart's title and id: the path, or for TCP against the link the TCP row.
std::string chart_name(const analysis::Analysis& a, const analysis::Finding& f) {
  if (f.path == "tcp" && !f.rows.empty()) {
    if (const analysis::Row* r = analysis::find_row(a, f.rows.back())) return row_label(*r);
  }
  return f.path;
}

bool charted(const analysis::Finding& f) {
  return !f.rows.empty() && f.path != "cache" && f.path != "errors" && f.path != "mtu" &&
         f.path != "cpu";
}

std::string hosts_table(const stored::Run& run) {
  std::string out =
      "<table><tr><th>role</th><th>host</th><th>kernel</th><th>CPU</th><th>memory</th>"
      "<th>interface</th><th>disk</th></tr>";
  // "?" for what the host did not tell (or a run from before the fact).
  auto text = [](const auto& v) -> std::string {
    if (!v) return "?";
    if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, std::string>) {
      return *v;
    } else {
      return std::to_string(*v);
    }
  };
  for (const auto& h : run.hosts) {
    const msg::Facts f = h.facts.value_or(msg::Facts{});
    const msg::NetFacts net = f.net.value_or(msg::NetFacts{});
    const msg::BlockDeviceFacts* dev =
        f.disk_dir && f.disk_dir->device ? &*f.disk_dir->device : nullptr;
    out += fmt::format(
        "<tr><td>{}</td><td>{} ({})</td><td>{}</td><td>{} cores, {}</td><td>{}</td>"
        "<td>{} mtu {}, {} Mbit/s</td><td>{}, readahead {} KiB</td></tr>",
        esc(h.role), esc(h.address), esc(text(f.hostname)), esc(text(f.kernel)),
        esc(text(f.cpu_cores)), esc(text(f.cpu_model)),
        esc(f.memory_bytes ? format_size(*f.memory_bytes) : "?"), esc(text(net.name)),
        esc(text(net.mtu)), esc(text(net.speed_mbit)), esc(dev ? dev->name : "?"),
        esc(text(dev ? dev->read_ahead_kb : std::nullopt)));
  }
  out += "</table>\n";
  // What an agent without some privilege measured another way (report.h).
  const std::vector<DegradedFact> degraded = degraded_facts(run);
  if (!degraded.empty()) {
    out +=
        "<table class=\"degraded\"><tr><th>host</th><th>degraded fact</th><th>measured "
        "instead</th><th>restored by</th></tr>";
    for (const DegradedFact& d : degraded) {
      out += fmt::format(
          "<tr data-role=\"{}\" data-fact=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "</tr>",
          esc(d.role), esc(d.fact), esc(d.role), esc(d.fact), esc(d.method), esc(d.privilege));
    }
    out += "</table>\n";
  }
  return out;
}

std::string ladder_table(const analysis::Analysis& a) {
  std::string out =
      "<table><tr><th>layer</th><th>median</th><th>min</th><th>max</th><th>n</th>"
      "<th>vs beneath</th><th>notes</th></tr>";
  for (const auto& r : a.rows) {
    if (r.layer == "link") {
      out += fmt::format(
          "<tr><td>{}</td><td class=\"num\">{}</td><td></td><td></td><td></td>"
          "<td></td><td>{}</td></tr>",
          esc(row_label(r)), esc(mb(r.rate.median)), esc(format_rate_bits(a.link_bits)));
      continue;
    }
    std::string vs;
    if (r.ratio > 0) {
      const analysis::Row* b = analysis::find_row(a, r.below);
      vs = fmt::format("{:.0f} % of {}", r.ratio * 100,
                       b && b->layer != "link" ? row_label(*b) : std::string("link"));
    }
    if (r.layer == "disk") vs = bus_ladder_text(r);
    std::string notes;
    if (r.failed) notes += fmt::format("<span class=\"bad\">{} failed</span> ", r.failed);
    if (r.cache_suspected) {
      notes += fmt::format("<span class=\"warn\">cache suspected: {}</span> ",
                           esc(trust_reasons_text(r.cache_reasons)));
    }
    if (!r.cpu_bound.empty()) notes += esc(cpu_brief(r.cpu_bound)) + " ";
    std::string ids;
    for (size_t i = 0; i < r.sample_ids.size(); ++i) {
      ids += (i ? "," : "") + std::to_string(r.sample_ids[i]);
    }
    out += fmt::format(
        "<tr title=\"sample ids {}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
        esc(ids), esc(row_label(r)), r.rate.n ? esc(figure(r, r.rate.median)) : "-",
        r.rate.n ? esc(figure(r, r.rate.min)) : "-", r.rate.n ? esc(figure(r, r.rate.max)) : "-",
        r.rate.n, esc(vs), notes);
  }
  return out + "</table>\n";
}

// The finding's sentence; its hints follow on their own lines.
// The summary the text report opens with: a row per path.
std::string summary_table(const analysis::Analysis& a) {
  std::string out =
      "<table class=\"summary\"><tr><th>path</th><th>capped by</th><th>MB/s</th>"
      "<th>share of the layer beneath</th><th>sure</th></tr>\n";
  for (const SummaryLine& l : summary_lines(a)) {
    out += fmt::format(
        "<tr data-path=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        esc(l.path), esc(l.path), esc(l.capped_by), esc(l.figure), esc(l.share), esc(l.confidence));
  }
  out +=
      fmt::format("</table>\n<p class=\"brief\"><b>Headline:</b> {}</p>\n", esc(headline_brief(a)));
  return out;
}

std::string finding_html(const analysis::Finding& f) {
  std::string out = fmt::format("<p class=\"finding\">{}", esc(finding_sentence(f)));
  if (!f.hints.empty()) {
    out += "<br><b>Try:</b>";
    for (const auto& h : f.hints) {
      out += fmt::format("<br><span class=\"hint\">{}</span>", esc(hint_text(h)));
    }
  }
  return out + "</p>\n";
}

std::string run_name(const analysis::RunSide& r) {
  return r.label.empty() ? fmt::format("run {}", r.id)
                         : fmt::format("run {} \"{}\"", r.id, r.label);
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string run_html(const stored::Run& run, const analysis::Analysis& a) {
  std::string body;
  body += fmt::format("<h1>chokepoint run {}{}</h1>\n", run.id,
                      run.label.empty() ? "" : " \u201C" + esc(run.label) + "\u201D");
  body += fmt::format(
      "<p class=\"meta\">{} &middot; {} &middot; server {} &middot; client {} &middot; "
      "chokepoint {}</p>\n",
      esc(iso_time(run.started_at)), esc(run.status), esc(run.server), esc(run.client),
      esc(run.version));
  if (!run.error.empty()) body += fmt::format("<p class=\"bad\">error: {}</p>\n", esc(run.error));
  body += summary_table(a);
  body += fmt::format("<div class=\"headline\">{}</div>\n", esc(headline_text(a)));
  body += hosts_table(run);

  body +=
      "<h2>The ladder, path by path</h2>\n"
      "<p class=\"muted legend\">Each bar is a layer's median (MB/s = 10<sup>6</sup> "
      "bytes/s); dots are the samples, the line their spread. "
      "<span style=\"background:#d0473c\"></span>caps the path"
      "<span style=\"background:#6d97cf\"></span>other layers"
      "<span style=\"background:#c9c9c9\"></span>nominal link</p>\n";
  int charts = 0;
  for (const auto& f : a.findings) {
    if (!charted(f)) continue;
    std::vector<Bar> bars;
    for (const auto& key : f.rows) {
      if (const analysis::Row* r = analysis::find_row(a, key))
        bars.push_back(row_bar(a, *r, f.cap));
    }
    if (bars.empty()) continue;
    ++charts;
    const std::string name = chart_name(a, f);
    body += fmt::format("<h3>{}</h3>\n", esc(name));
    body += bar_chart("path:" + name, name, bars);
    body += finding_html(f);
  }
  if (charts == 0) body += "<p class=\"muted\">No path has samples to chart.</p>\n";

  std::vector<Bar> all;
  for (const auto& r : a.rows) {
    if (r.layer != "link" && r.rate.n > 0) all.push_back(row_bar(a, r, ""));
  }
  if (!all.empty()) {
    body += "<h2>Every measurement</h2>\n";
    body += bar_chart("all", "every measured layer", all);
  }
  body += "<h2>Ladder table</h2>\n" + ladder_table(a);

  std::string notes;
  for (const auto& f : a.findings) {
    if (!charted(f)) notes += finding_html(f);
  }
  if (!notes.empty()) body += "<h2>Notes</h2>\n" + notes;
  for (const auto& st : run.stages) {
    if (st.status == kFailed || st.status == kInterrupted) {
      body += fmt::format("<p class=\"bad\">stage {} {} {}: {}</p>\n", esc(st.driver),
                          esc(st.where), esc(st.status), esc(st.error));
    }
  }
  body +=
      "<p class=\"muted\">Every figure comes from stored samples: "
      "<code>chokepoint show RUN --json</code> lists them with their ids.</p>";
  return page(fmt::format("chokepoint run {}", run.id), body);
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : "; ") + s;
  return out;
}
// One row of a comparison as a chart: A's median as a wide pale bar, B's as
// a narrow one over it coloured by the verdict, every sample a dot.
std::string compare_chart(const analysis::RowDelta& d) {
  const double scale = nice_max(std::max({d.a.median, d.b.median, d.a.max, d.b.max}));
  const int h = 8 + 34;
  const double cy = 8 + 13;
  using V = analysis::DeltaVerdict;
  const char* verdict = delta_verdict_name(d.verdict);
  std::string change =
      d.verdict == V::kFaster || d.verdict == V::kSlower
          ? fmt::format("{:+.1f} % {} (Holm p={:.3f})", d.delta * 100, verdict, d.p_corrected)
      : d.verdict == V::kDrift
          ? fmt::format("{:+.1f} % drift (Holm p={:.3f})", d.delta * 100, d.p_corrected)
      : d.verdict == V::kNoChange ? fmt::format("~ no change (Holm p={:.3f})", d.p_corrected)
                                  : std::string(verdict);
  std::string svg = fmt::format(
      R"(<svg class="chart compare" data-chart="{}" width="{}" height="{}" viewBox="0 0 {} {}" role="img"><title>{}</title>)",
      esc("compare:" + d.key), kWidth, h + 22, kWidth, h + 22, esc(row_label(d)));
  svg += fmt::format(
      R"(<text x="{}" y="{:.1f}" text-anchor="end" dominant-baseline="middle">{}</text>)", kLabelW,
      cy, esc(row_label(d)));
  // A: a wide pale bar; B: a narrow one over it, coloured by the verdict.
  svg += fmt::format(
      R"(<rect class="bar a" data-key="{}" x="{}" y="{:.1f}" width="{:.1f}" height="26"><title>A median {}</title></rect>)",
      esc(d.key), kBarX, cy - 13, std::max(1.0, x_of(d.a.median, scale) - kBarX),
      esc(mb(d.a.median)));
  const std::string b_cls =
      d.verdict == V::kFaster || d.verdict == V::kSlower || d.verdict == V::kDrift
          ? std::string(" ") + verdict
          : "";
  svg += fmt::format(
      R"(<rect class="bar b{}" data-key="{}" x="{}" y="{:.1f}" width="{:.1f}" height="10"><title>B median {}</title></rect>)",
      b_cls, esc(d.key), kBarX, cy - 5, std::max(1.0, x_of(d.b.median, scale) - kBarX),
      esc(mb(d.b.median)));
  for (double s : d.a_samples) {
    svg += fmt::format(R"(<circle class="sample a" cx="{:.1f}" cy="{:.1f}" r="3"/>)",
                       x_of(s, scale), cy - 9);
  }
  for (double s : d.b_samples) {
    svg += fmt::format(R"(<circle class="sample b" cx="{:.1f}" cy="{:.1f}" r="3"/>)",
                       x_of(s, scale), cy + 9);
  }
  svg += fmt::format(R"(<text x="{}" y="{:.1f}" dominant-baseline="middle">{} &#8594; {}</text>)",
                     kBarX + kBarW + 8, cy - 7, esc(mb(d.a.median)), esc(mb(d.b.median)));
  svg += fmt::format(R"(<text x="{}" y="{:.1f}" dominant-baseline="middle" class="{}">{}</text>)",
                     kBarX + kBarW + 8, cy + 8,
                     d.verdict == V::kFaster   ? "good"
                     : d.verdict == V::kSlower ? "bad"
                     : d.verdict == V::kDrift  ? "drift"
                                               : "muted",
                     esc(change));
  svg += axis(scale, h);
  svg += "</svg>\n";
  return svg;
}

}  // namespace

std::string compare_html(const analysis::Comparison& c) {
  std::string body;
  body += fmt::format("<h1>chokepoint compare: {} vs {}</h1>\n", esc(run_name(c.a)),
                      esc(run_name(c.b)));
  body += fmt::format(
      "<p class=\"meta\">A = {} ({}), B = {} ({}). A change counts when a two-sided "
      "Mann-Whitney U test on the samples gives p &lt; {} after Holm's correction, the change "
      "exceeds the samples' own spread (IQR/median), and it lies beyond the drift of the "
      "controls (rows no recorded difference can touch); a movement that fails only the last "
      "is drift, anything less is noise (~).</p>\n",
      esc(run_name(c.a)), esc(iso_time(c.a.started_at)), esc(run_name(c.b)),
      esc(iso_time(c.b.started_at)), analysis::kSignificance);
  body += fmt::format("<div class=\"headline\">A: {}<br>B: {}</div>\n",
                      esc(headline_text(c.a.headline)), esc(headline_text(c.b.headline)));
  body += fmt::format("<h2>Drift</h2>\n<p class=\"drift\" data-controls=\"{}\">{}.</p>\n",
                      c.drift.controls.size(), esc(drift_text(c.drift, c.rows.size())));

  body +=
      "<h2>Before and after</h2>\n"
      "<p class=\"muted legend\">Per layer: "
      "<span style=\"background:#b9c3cf\"></span>A (wide bar, open dots)"
      "<span style=\"background:#2f6db5\"></span>B (narrow bar, filled dots); "
      "green faster, red slower, amber drift, blue no change.</p>\n";
  for (const auto& d : c.rows) body += compare_chart(d);

  body +=
      "<h2>Table</h2>\n<table><tr><th>layer</th><th>role</th><th>A MB/s: median (min-max)</th>"
      "<th>B MB/s: median (min-max)</th><th>n</th><th>change</th><th>spread</th><th>p</th>"
      "<th>Holm p</th><th>verdict</th></tr>";
  auto num = [](double bps) { return fmt::format("{:.1f}", bps / kMB); };
  for (const auto& d : c.rows) {
    std::string verdict = esc(delta_verdict_name(d.verdict));
    if (!d.note.empty()) {
      verdict += " <span class=\"muted\">(" + esc(delta_note_text(d)) + ")</span>";
    }
    if (d.cache_suspected) verdict += " <span class=\"warn\">cache suspected</span>";
    // The role: a recorded difference can touch the row, or it is a control.
    const std::string role =
        d.affected_by_change ? fmt::format("<td title=\"{}\">change</td>", esc(join(d.affected_by)))
                             : std::string("<td class=\"muted\">control</td>");
    body += fmt::format(
        "<tr data-key=\"{}\" data-verdict=\"{}\"><td>{}</td>{}<td class=\"num\">{} ({}-{})</td>"
        "<td class=\"num\">{} ({}-{})</td><td class=\"num\">{}+{}</td>"
        "<td class=\"num\">{:+.1f} %</td><td class=\"num\">{:.1f} %</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
        esc(d.key), esc(delta_verdict_name(d.verdict)), esc(row_label(d)), role, num(d.a.median),
        num(d.a.min), num(d.a.max), num(d.b.median), num(d.b.min), num(d.b.max), d.a.n, d.b.n,
        d.delta * 100, d.spread * 100, d.test.too_few ? "-" : fmt::format("{:.3f}", d.test.p),
        d.test.too_few ? "-" : fmt::format("{:.3f}", d.p_corrected), verdict);
  }
  body += "</table>\n";
  auto only = [&](const char* which, const std::vector<analysis::RowIdentity>& rows) {
    if (rows.empty()) return;
    body += fmt::format("<p>Only in {}: ", which);
    for (size_t i = 0; i < rows.size(); ++i) body += (i ? "; " : "") + esc(row_label(rows[i]));
    body += "</p>\n";
  };
  only("A", c.only_a);
  only("B", c.only_b);

  body += "<h2>What differs between the runs</h2>\n";
  if (c.env.empty()) {
    body += "<p class=\"muted\">Nothing in the recorded plan or host facts.</p>\n";
  } else {
    body +=
        "<table><tr><th>where</th><th>what</th><th>A</th><th>B</th><th>kind</th>"
        "<th>can affect</th></tr>";
    for (const auto& e : c.env) {
      body += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
          esc(e.where), esc(e.what), esc(e.a), esc(e.b), esc(e.kind), esc(parts_text(e.parts)));
    }
    body += "</table>\n";
  }
  return page(fmt::format("chokepoint compare {} {}", c.a.id, c.b.id), body);
}

}  // namespace cp::report
