#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>

#include <cctype>
#include <map>

#include "core/clock.h"
#include "core/error.h"
#include "core/stored_run_json.h"
#include "core/units.h"
#include "report/finding_text.h"
#include "report/hint_text.h"
#include "report/row_text.h"
#include "report/sample_json.h"
#include "report/summary.h"

namespace cp::report {
namespace {

namespace json = boost::json;

std::string mb(double bps) { return fmt::format("{:.1f}", bps / kMB); }
// A ladder row's unit (of its samples and figures: bytes/s or ops/s) and, for
// small-file rows, their figure in ops/s and per-operation latency.
void add_unit(json::object& row, const analysis::Row& r) {
  row["unit"] = analysis::unit_name(r.unit);
  if (r.unit != analysis::RowUnit::kOps) return;
  row["median_ops_per_s"] = r.rate.median;
  row["latency_us"] = {
      {"median", r.latency_median_us}, {"p99", r.latency_p99_us}, {"max", r.latency_max_us}};
}

// A row's figure in its unit: MB/s, or operations/s (small-file rows).
std::string figure(const analysis::Row& r, double v) {
  return r.unit == analysis::RowUnit::kOps ? fmt::format("{:.0f}", v) : mb(v);
}

const char* bold(const TextOptions& o) { return o.color ? "\033[1m" : ""; }
const char* red(const TextOptions& o) { return o.color ? "\033[1;31m" : ""; }
const char* reset(const TextOptions& o) { return o.color ? "\033[0m" : ""; }

// A fact as the host line shows it: "?" when the host did not tell.
std::string shown(const std::optional<std::string>& v) { return v.value_or("?"); }
std::string shown(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }

std::string host_line(const stored::Host& h) {
  const std::optional<msg::Facts>& f = h.facts;
  if (!f) return fmt::format("  {:<7} {}", h.role, h.address);
  std::string net;
  if (f->net) {
    net = fmt::format(", {} mtu {} speed {} Mbit/s", shown(f->net->name), shown(f->net->mtu),
                      shown(f->net->speed_mbit));
  }
  return fmt::format("  {:<7} {} ({}, {}, kernel {}, {} cores{})", h.role, h.address,
                     shown(f->hostname), shown(f->os), shown(f->kernel), shown(f->cpu_cores), net);
}

// The transfer-size scan as QuickBench printed it: a row per request size,
// a column per pattern, one table per protocol and medium.
std::string size_scan_tables(const analysis::Analysis& a) {
  std::map<std::pair<std::string, std::string>, std::map<uint64_t, std::map<std::string, double>>>
      tables;
  for (const auto& r : a.rows) {
    if (analysis::is_size_scan(r) && r.rate.n > 0) {
      tables[{r.layer, r.where}][r.size][r.op.substr(6)] = r.rate.median;
    }
  }
  std::string out;
  const char* patterns[] = {"seqread", "randread", "seqwrite", "randwrite"};
  for (const auto& [key, sizes] : tables) {
    std::string proto = key.first;
    for (char& c : proto) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += fmt::format("\n  Transfer-size scan, {} from {} (MB/s)\n  {:>10}", proto,
                       key.second == "ram" ? "RAM" : "disk", "request");
    for (const char* p : patterns) out += fmt::format(" {:>10}", p);
    out += "\n";
    for (const auto& [size, cells] : sizes) {
      out += fmt::format("  {:>10}", format_size(size));
      for (const char* p : patterns) {
        auto it = cells.find(p);
        out += fmt::format(" {:>10}", it == cells.end() ? "-" : mb(it->second));
      }
      out += "\n";
    }
  }
  return out;
}

json::object cpu_bound_json(const analysis::CpuBound& c) {
  return {{"host", c.host},
          {"kind", c.kind},
          {"process", c.process},
          {"role", c.role},
          {"pct", c.pct},
          {"limit_pct", c.limit_pct},
          {"other_netns", c.other_netns},
          {"competing_pct", c.competing_pct},
          {"per_packet", c.per_packet},
          {"same_machine", c.same_machine}};
}

// A row as a finding cites it.
json::object cited_json(const analysis::Cited& c) {
  return {{"key", c.key},
          {"label", row_label(c)},
          {"name", cited_name(c)},
          {"n", c.n},
          {"size", c.size},
          {"median_bytes_per_s", c.median},
          {"min_bytes_per_s", c.min},
          {"max_bytes_per_s", c.max}};
}

// The rule's evidence: its named figures and words.
json::object evidence_json(const analysis::Finding& f) {
  json::object e;
  for (const auto& [k, v] : f.numbers) e[k] = v;
  for (const auto& [k, v] : finding_words(f)) e[k] = v;
  return e;
}

// The structured finding (no prose but `text`, rendered from the rest).
json::object finding_json(const analysis::Finding& f) {
  json::array rows, hints, hint_ids, candidates, misconfigured, context, untrusted, because;
  for (const auto& k : f.rows) rows.push_back(json::string(k));
  for (const auto& h : f.hints) {
    hints.push_back(json::string(hint_text(h)));
    hint_ids.push_back(json::string(h.id));
  }
  for (const auto& c : f.candidates) candidates.push_back(json::string(c));
  for (const auto& m : f.misconfigured) misconfigured.push_back(json::string(hint_text(m)));
  for (const auto& c : f.context) context.push_back(cited_json(c));
  for (const auto& u : f.untrusted) untrusted.push_back(json::string(row_label(u)));
  for (const auto& b : f.because) because.push_back(finding_json(b));
  json::array settings;
  for (const auto& s : f.settings) {
    settings.push_back({{"server", s.server},
                        {"parameter", s.parameter},
                        {"section", s.section},
                        {"value", s.value},
                        {"default", s.default_value},
                        {"cost", setting_cost_text(s.cost)},
                        {"evidence", setting_evidence_text(s.evidence)},
                        {"evidence_id", s.evidence.id}});
  }
  json::object finding{{"path", f.path},
                       {"layer", f.layer},
                       {"rule", f.rule},
                       {"confidence", confidence_name(f.confidence)},
                       {"text", finding_text(f)},
                       {"rows", rows},
                       {"cap", f.cap},
                       {"ratio", f.ratio},
                       {"ratio_lo", f.ratio_lo},
                       {"ratio_hi", f.ratio_hi},
                       {"hints", hints},
                       {"hint_ids", hint_ids},
                       {"misconfigured", misconfigured},
                       {"settings", settings},
                       {"lower_bound", f.lower_bound},
                       {"evidence", evidence_json(f)}};
  if (!f.subject.empty()) finding["subject"] = cited_json(f.subject);
  if (!f.beneath.empty()) finding["beneath"] = cited_json(f.beneath);
  if (!context.empty()) finding["context"] = std::move(context);
  if (!untrusted.empty()) finding["untrusted"] = std::move(untrusted);
  if (!because.empty()) finding["because"] = std::move(because);
  if (!f.cpu.empty()) finding["cpu"] = cpu_bound_json(f.cpu);
  if (!f.cpu_weighed.empty()) finding["cpu_weighed"] = cpu_bound_json(f.cpu_weighed);
  if (f.layer == "undecided") {
    finding["candidates"] = candidates;
    finding["undecided_reason"] = f.undecided_reason;
    if (f.suggested_count > 0) finding["suggested_count"] = f.suggested_count;
    if (f.suggested_size > 0) finding["suggested_size"] = f.suggested_size;
  }
  return finding;
}

// The CPU evidence behind a row, per end: every process and its busiest thread.
json::object cpu_use_json(const analysis::CpuUse& u) {
  json::array procs;
  for (const auto& p : u.procs) {
    procs.push_back({{"comm", p.comm},
                     {"role", p.role},
                     {"other_netns", p.other_netns},
                     {"cpu_pct", p.cpu_pct},
                     {"top_thread_pct", p.top_thread_pct},
                     {"limit_pct", p.limit_pct},
                     {"throttled_pct", p.throttled_pct}});
  }
  return {{"seconds", u.seconds},       {"total_busy_pct", u.total_busy_pct},
          {"sys_pct", u.sys_pct},       {"softirq_pct", u.softirq_pct},
          {"agent_pct", u.agent_pct},   {"server_pct", u.server_pct},
          {"kernel_pct", u.kernel_pct}, {"other_pct", u.other_pct},
          {"processes", procs}};
}

}  // namespace

std::vector<DegradedFact> degraded_facts(const stored::Run& run) {
  std::vector<DegradedFact> out;
  for (const auto& h : run.hosts) {
    const std::optional<msg::Facts>& f = h.facts;
    if (!f) continue;
    for (const msg::DegradedFact& d : f->degraded) {
      out.push_back({h.role, d.fact, d.method, d.privilege});
    }
  }
  return out;
}

namespace {

// The nominal link speed and where it comes from.
json::object link_json(const analysis::Analysis& a) {
  return {{"nominal_bits_per_s", a.link_bits},
          {"from", a.link_source.from},
          {"source", link_source_text(a.link_source)}};
}

}  // namespace

std::string run_text(const stored::Run& run, const analysis::Analysis& a, const TextOptions& o) {
  std::string out;
  out += fmt::format("{}chokepoint run {}{}  {}  {}{}\n", bold(o), run.id, reset(o),
                     iso_time(run.started_at), run.status,
                     run.label.empty() ? "" : fmt::format("  label \"{}\"", run.label));
  if (!run.error.empty()) out += fmt::format("  {}error:{} {}\n", red(o), reset(o), run.error);
  for (const auto& h : run.hosts) out += host_line(h) + "\n";
  // What an agent without some privilege measured another way.
  for (const DegradedFact& d : degraded_facts(run)) {
    out += fmt::format("  {:<7} degraded {}: {} (restore: {})\n", d.role, d.fact, d.method,
                       d.privilege);
  }
  out += summary_text(a, o.color);
  out += fmt::format(
      "\n{}Ladder{} (MB/s = 10^6 bytes/s{}; median, min-max over samples; vs beneath: ratio of "
      "medians, its 95 % interval)\n",
      bold(o), reset(o),
      std::any_of(a.rows.begin(), a.rows.end(),
                  [](const analysis::Row& r) { return r.unit == analysis::RowUnit::kOps; })
          ? ", rows marked (ops/s): operations per second"
          : "");
  out += fmt::format("  {:<40} {:>9} {:>19} {:>6}  {}\n", "layer", "median", "min-max", "n",
                     "vs beneath");
  for (const auto& r : a.rows) {
    if (analysis::is_size_scan(r)) continue;  // their own table below
    if (r.layer == "link") {
      out += fmt::format("  {:<40} {:>9} {:>19} {:>6}  {}\n", row_label(r), mb(r.rate.median),
                         format_rate_bits(a.link_bits), "", "");
      continue;
    }
    std::string vs;
    if (r.ratio > 0) {
      std::string below = "link";
      if (const auto* b = analysis::find_row(a, r.below); b && r.below != "link")
        below = row_label(*b);
      // The ratio's 95 % interval, where the samples show a spread.
      const bool spread = r.ratio_hi - r.ratio_lo >= 0.005;
      vs = spread ? fmt::format("{:.0f} % ({:.0f}-{:.0f}) of {}", r.ratio * 100, r.ratio_lo * 100,
                                r.ratio_hi * 100, below)
                  : fmt::format("{:.0f} % of {}", r.ratio * 100, below);
    }
    if (r.layer == "disk") vs = bus_ladder_text(r);
    std::string flags;
    if (r.failed) flags += fmt::format(" {}{} failed{}", red(o), r.failed, reset(o));
    if (r.cache_possible || r.cache_suspected) flags += " cache?";
    if (r.anomaly) flags += " faster than beneath?";
    if (!r.cpu_bound.empty()) flags += " " + cpu_brief(r.cpu_bound);
    std::string range =
        r.rate.n ? fmt::format("{}-{}", figure(r, r.rate.min), figure(r, r.rate.max)) : "-";
    out += fmt::format("  {:<40} {:>9} {:>19} {:>6}  {}{}\n", row_label(r),
                       r.rate.n ? figure(r, r.rate.median) : "-", range, r.rate.n, vs, flags);
  }
  out += size_scan_tables(a);
  for (const auto& st : run.stages) {
    if (st.status == kFailed || st.status == kInterrupted) {
      out += fmt::format("  {}{} {} {}{}: {}\n", red(o), st.driver, st.where, st.status, reset(o),
                         st.error);
    }
  }
  if (!o.explain) {
    // Each finding in brief, but those the summary already says; the
    // evidence is `--explain`'s.
    bool first = true;
    for (const auto& f : a.findings) {
      if (!brief_adds_to_summary(f)) continue;
      if (first) {
        out += fmt::format("\n{}Findings{} (in brief; --explain gives the evidence)\n", bold(o),
                           reset(o));
      }
      first = false;
      out += fmt::format("  - {}\n", finding_brief(f, a));
    }
    return out;
  }
  out += fmt::format("\n{}Verdict{}\n  {}\n", bold(o), reset(o), headline_text(a));
  bool first = true;
  for (size_t i = 0; i < a.findings.size(); ++i) {
    if (static_cast<int>(i) == a.headline_finding) continue;
    if (first) out += "\n";
    first = false;
    out += fmt::format("  - {}\n", finding_text(a.findings[i]));
  }
  return out;
}

std::string run_json(const stored::Run& run, const analysis::Analysis& a) {
  json::array hosts, ladder, findings, stages;
  for (const auto& h : run.hosts) {
    hosts.push_back(
        {{"role", h.role}, {"address", h.address}, {"facts", stored::to_json(h.facts)}});
  }
  for (const auto& r : a.rows) {
    json::object row{{"key", r.key},
                     {"label", row_label(r)},
                     {"layer", r.layer},
                     {"where", r.where},
                     {"op", r.op},
                     {"size", r.size},
                     {"n", r.rate.n},
                     {"median_bytes_per_s", r.rate.median},
                     {"min_bytes_per_s", r.rate.min},
                     {"max_bytes_per_s", r.rate.max},
                     {"failed", r.failed},
                     {"cache_possible", r.cache_possible},
                     {"below", r.below},
                     {"ratio_to_below", r.ratio},
                     {"max_core_pct", r.max_core_pct},
                     {"max_core_host", r.max_core_host},
                     {"max_core_process", max_core_process_text(r)},
                     {"quota_host", r.quota_host},
                     {"quota_process", r.quota_process},
                     {"quota_cpu_pct", r.quota_cpu_pct},
                     {"quota_limit_pct", r.quota_limit_pct},
                     {"retransmits", r.retransmits}};
    if (r.rwnd_limited_frac >= 0) row["rwnd_limited_frac"] = r.rwnd_limited_frac;
    if (r.sndbuf_limited_frac >= 0) row["sndbuf_limited_frac"] = r.sndbuf_limited_frac;
    if (r.rtt_us > 0) row["rtt_us"] = r.rtt_us;
    if (r.layer == "tcp") row["streams"] = r.streams;  // at once; the figure is their total
    row["cache_suspected"] = r.cache_suspected;
    row["cache_reason"] = trust_reasons_text(r.cache_reasons);
    // The figures above come from exactly these samples (ids in "stages").
    json::array samples, ids;
    for (double v : r.samples) samples.push_back(v);
    for (int64_t id : r.sample_ids) ids.push_back(id);
    row["samples_bytes_per_s"] = samples;
    add_unit(row, r);
    row["ratio_lo"] = r.ratio_lo;
    row["ratio_hi"] = r.ratio_hi;
    if (r.below_size) row["below_size"] = r.below_size;
    if (r.rtt_idle_us > 0) row["rtt_idle_us"] = r.rtt_idle_us;
    if (r.anomaly) row["anomaly"] = trust_reason_text(*r.anomaly_reason);
    if (!r.server_fs.empty()) row["server_fs"] = r.server_fs;
    if (!r.server_disk.empty()) row["server_disk"] = r.server_disk;
    if (r.medium_reason) row["medium_mismatch"] = trust_reason_text(*r.medium_reason);
    if (!r.bus.empty()) {
      json::array links;
      for (const auto& l : r.bus.links) {
        links.push_back({{"member", l.member},
                         {"kind", l.kind},
                         {"link", l.link},
                         {"ceiling_bytes_per_s", l.ceiling}});
      }
      row["bus"] = {{"kind", r.bus.kind},
                    {"links", std::move(links)},
                    {"theoretical_bytes_per_s", r.bus.theoretical},
                    {"effective_bytes_per_s", r.bus.effective()},
                    {"ratio", r.bus_ratio}};
    }
    json::object cpu;
    for (const auto& [host, u] : r.cpu) cpu[host] = cpu_use_json(u);
    if (!cpu.empty()) row["cpu"] = std::move(cpu);
    if (!r.cpu_bound.empty()) row["cpu_bound"] = cpu_bound_json(r.cpu_bound);
    row["sample_ids"] = ids;
    ladder.push_back(row);
  }
  for (const auto& f : a.findings) {
    json::object fj = finding_json(f);
    fj["brief"] = finding_brief(f, a);
    findings.push_back(std::move(fj));
  }
  for (const auto& st : run.stages) {
    json::array samples;
    for (const auto& s : st.samples) {
      json::object sample{{"id", s.id}};
      for (auto& [k, v] : sample_measure_json(s)) sample[k] = std::move(v);
      sample["details"] = stored::to_json(s.details);
      sample["cpu"] = stored::to_json(s.cpu);
      samples.push_back(std::move(sample));
    }
    stages.push_back({{"id", st.id},
                      {"layer", st.driver},
                      {"where", st.where},
                      {"status", st.status},
                      {"error", st.error},
                      {"params", st.params.value()},
                      {"started_at", st.started_at},
                      {"finished_at", st.finished_at},
                      {"samples", samples}});
  }
  json::object doc{
      {"run",
       {{"id", run.id},
        {"label", run.label},
        {"status", run.status},
        {"error", run.error},
        {"started_at", run.started_at},
        {"finished_at", run.finished_at},
        {"server", run.server},
        {"client", run.client},
        {"version", run.version},
        {"plan", run.plan.value()}}},
      {"hosts", hosts},
      {"degraded", degraded_json(run)},
      {"link", link_json(a)},
      {"ladder", ladder},
      {"verdict",
       {{"headline", headline_text(a)},
        {"headline_brief", headline_brief(a)},
        {"findings", findings}}},
      {"stages", stages},
  };
  return json::serialize(doc) + "\n";
}

namespace {

// "smb disk read: server disk 52.1" (MB/s of the capping row).
std::string verdict_brief(const analysis::Headline& h) {
  if (h.path.empty()) return "no verdict";
  std::string s = h.path + ": " + h.layer;
  if (h.cap_bytes_per_s > 0)
    s += fmt::format(" ({} {:.1f})", cap_label(h), h.cap_bytes_per_s / kMB);
  return s;
}

}  // namespace

std::string history_text(const std::vector<RunListRow>& rows,
                         const std::vector<analysis::Headline>& verdicts) {
  CP_CHECK(rows.size() == verdicts.size());
  if (rows.empty()) return "No runs stored yet: run `chokepoint diagnose`.\n";
  std::string out = fmt::format("{:>5}  {:<20}  {:<11}  {:<14}  {:<24}  {}\n", "id", "started",
                                "status", "label", "server / client", "verdict (MB/s)");
  for (size_t i = 0; i < rows.size(); ++i) {
    const RunListRow& r = rows[i];
    out += fmt::format("{:>5}  {:<20}  {:<11}  {:<14}  {:<24}  {}\n", r.id, iso_time(r.started_at),
                       r.status, r.label, r.server + " / " + r.client, verdict_brief(verdicts[i]));
  }
  return out;
}

std::string history_json(const std::vector<RunListRow>& rows,
                         const std::vector<analysis::Headline>& verdicts) {
  CP_CHECK(rows.size() == verdicts.size());
  json::array arr;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RunListRow& r = rows[i];
    const analysis::Headline& h = verdicts[i];
    arr.push_back({{"id", r.id},
                   {"label", r.label},
                   {"status", r.status},
                   {"server", r.server},
                   {"client", r.client},
                   {"started_at", r.started_at},
                   {"finished_at", r.finished_at},
                   {"verdict",
                    {{"path", h.path},
                     {"layer", h.layer},
                     {"cap", cap_label(h)},
                     {"cap_bytes_per_s", h.cap_bytes_per_s},
                     {"headline", headline_text(h)}}}});
  }
  return json::serialize(json::object{{"runs", arr}}) + "\n";
}

}  // namespace cp::report
