#include "report/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "core/units.h"
#include "report/finding_text.h"
#include "report/hint_text.h"
#include "report/row_text.h"
#include "transfer/driver.h"

namespace cp::report {
namespace {

using analysis::Finding;

constexpr double kMB = 1e6;

// A protocol layer as reports name it: its driver's display name ("SMB").
std::string display_name(const std::string& layer) { return transfer::protocol_display(layer); }

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Who holds the CPU, in a few words: "smbd, server", "chokepoint's agent, client".
std::string cpu_who(const analysis::CpuBound& c) {
  const std::string host = c.host == "both" ? "both ends" : c.host;
  if (c.kind == "turns") return "client and server take turns";
  std::string who = c.role == "agent" ? "chokepoint's agent" : c.process;
  if (c.kind == "quota") who += " at its quota";
  if (c.kind != "quota" && c.kind != "thread") who = "all cores busy";
  return who.empty() ? host : who + ", " + host;
}

// The layer the finding's ratio is held against: the layer beneath, else (a
// disk-to-disk path) the next slowest layer of the path.
const analysis::Cited* held_against(const Finding& f) {
  if (!f.beneath.empty()) return &f.beneath;
  if (!f.context.empty()) return &f.context.front();
  return nullptr;
}

// A row in a few words: "TCP", "server disk", "SMB from RAM" (its size and op
// are the judged row's too).
std::string short_name(const analysis::Cited& c) {
  if (c.layer == "tcp") {
    // Several streams at once: "tcp:server->client:send:2".
    const size_t n = std::count(c.key.begin(), c.key.end(), ':');
    return n < 3 ? "TCP" : fmt::format("TCP, {} streams", c.key.substr(c.key.rfind(':') + 1));
  }
  if (c.layer == "disk") return c.where + " disk";
  if (c.where == "ram") return display_name(c.layer) + " from RAM";
  if (c.where == "disk") return display_name(c.layer) + " from disk";
  const std::string named = cited_name(c);
  return named.empty() ? row_label(c) : named;
}

std::string share_of(const Finding& f) {
  if (f.ratio <= 0) return "";
  const analysis::Cited* b = held_against(f);
  const bool spread = f.ratio_hi - f.ratio_lo >= 0.005;
  std::string s = spread ? fmt::format("{:.0f} % ({:.0f}-{:.0f})", f.ratio * 100, f.ratio_lo * 100,
                                       f.ratio_hi * 100)
                         : format_percent(f.ratio);
  if (b) {
    s += " of " + short_name(*b);
  } else if (starts_with(f.rule, "tcp.")) {
    s += " of the link";
  }
  return s;
}

// How to settle an undecided finding, in a few words ("" when nothing settles it).
std::string settle(const Finding& f) {
  if (f.suggested_count > 0) return fmt::format("repeat with count = {}", f.suggested_count);
  if (f.suggested_size > 0) {
    return fmt::format("repeat with files of at least {}", format_size(f.suggested_size));
  }
  return "";
}

// The finding `f` rests on, named by its path when the report lists it.
std::string rests_on(const Finding& f, const analysis::Analysis& a) {
  if (f.because.empty()) return "";
  const Finding& b = f.because.front();
  for (const Finding& other : a.findings) {
    if (&other != &f && other.path == b.path && other.rule == b.rule) {
      return fmt::format("see {}", b.path);
    }
  }
  // Not listed on its own (TCP explained inside a path): its cause in brief.
  std::string s =
      fmt::format("{} held by {}", cited_name(b.subject).empty() ? b.path : cited_name(b.subject),
                  capped_by(b));
  return s;
}

}  // namespace

namespace {

// A small-file figure (ops/s of files of subject.size): as the bytes a copy of
// such files moves, MB/s.
double bytes_per_s(const analysis::Cited& c) {
  return c.layer == "files" ? c.median * double(c.size) : c.median;
}

// "236 creates/s (0.97 MB/s)" for a small-file row, else "117 MB/s".
std::string figure_text(const analysis::Cited& c) {
  if (c.layer != "files") return format_mbps(c.median);
  const std::string op = c.op.starts_with("random-") ? c.op.substr(7) : c.op;
  return fmt::format("{:.0f} {}s/s ({})", c.median, op, format_mbps(bytes_per_s(c)));
}

}  // namespace

std::string capped_by(const Finding& f) {
  const std::string& l = f.layer;
  if (l == "undecided") {
    return f.undecided_reason.empty() ? "cannot tell" : "cannot tell (" + f.undecided_reason + ")";
  }
  if (l == "cpu") {
    const std::string what = f.cpu.kind == "turns" ? "turn-taking" : "the CPU";
    return f.cpu.empty() ? what : fmt::format("{} ({})", what, cpu_who(f.cpu));
  }
  if (l == "tcp") return "TCP";
  if (l == "round trips") return "the round trips";
  // chokepoint's own client holds the figure (turn-taking, its window): a lower bound.
  if (l == "probe") return "chokepoint's client";
  if (l == "server disk" || l == "client disk" || l == "network" || l == "network path" ||
      l == "server bus" || l == "client bus") {
    return "the " + l;
  }
  if (const size_t plus = l.find(" + disk"); plus != std::string::npos) {
    return fmt::format("{} + the server disk", display_name(l.substr(0, plus)));
  }
  // A protocol id ("smb", "nfs"): its layer.
  if (l.find(' ') == std::string::npos && !l.empty())
    return fmt::format("the {} layer", display_name(l));
  return l;
}

std::vector<SummaryLine> summary_lines(const analysis::Analysis& a) {
  std::vector<SummaryLine> out;
  for (const Finding& f : a.findings) {
    if (!analysis::is_verdict_path(f.path)) continue;
    SummaryLine s;
    s.path = f.path;
    s.capped_by = capped_by(f);
    s.figure = f.subject.empty() || f.subject.n == 0
                   ? "-"
                   : fmt::format("{:.1f}", bytes_per_s(f.subject) / kMB);
    s.share = share_of(f);
    s.confidence = confidence_name(f.confidence);
    if (f.lower_bound) s.confidence += ", lower bound";
    out.push_back(std::move(s));
  }
  return out;
}

std::string finding_brief(const Finding& f, const analysis::Analysis& a) {
  if (f.rule == "cpu.bound") {
    return fmt::format("{}: {} at {}.", row_label(f.subject), cpu_brief(f.cpu),
                       figure_text(f.subject));
  }
  if (!analysis::is_verdict_path(f.path) && !starts_with(f.rule, "tcp.")) {
    return finding_sentence(f);  // run-wide notes (cache, errors, MTU, load) are short already
  }
  // A TCP finding is named by its row (one per direction).
  const bool tcp = starts_with(f.rule, "tcp.") && !f.subject.empty();
  std::string s = (tcp ? row_label(f.subject) : f.path) + ": ";
  if (f.layer == "undecided") {
    s += "cannot tell what caps it";
    if (!f.undecided_reason.empty()) s += " (" + f.undecided_reason + ")";
    if (!f.candidates.empty()) {
      std::string list;
      for (const auto& c : f.candidates) list += (list.empty() ? "" : " or ") + c;
      s += ": " + list;
    }
    if (const std::string how = settle(f); !how.empty()) s += "; " + how;
  } else {
    s += capped_by(f) + " caps it";
    if (!f.subject.empty() && f.subject.n > 0) s += " at " + figure_text(f.subject);
    if (const std::string sh = share_of(f); !sh.empty()) s += " = " + sh;
  }
  if (const std::string r = rests_on(f, a); !r.empty()) s += "; " + r;
  if (!f.misconfigured.empty()) {
    std::string list;
    for (const auto& m : f.misconfigured) list += (list.empty() ? "" : ", ") + hint_setting(m);
    s += "; configured: " + list;
  }
  if (f.lower_bound) s += "; a lower bound (chokepoint's own client limits it)";
  if (!f.untrusted.empty()) s += "; a cache may have served some figures";
  if (!f.hints.empty()) {
    s += fmt::format("; {} tuning hint{} (--explain)", f.hints.size(),
                     f.hints.size() > 1 ? "s" : "");
  }
  return s + ".";
}

bool brief_adds_to_summary(const Finding& f) {
  if (!analysis::is_verdict_path(f.path)) return true;
  return f.layer == "undecided" || !f.because.empty() || !f.misconfigured.empty() ||
         f.lower_bound || !f.untrusted.empty() || !f.hints.empty();
}

std::string headline_brief(const analysis::Analysis& a) {
  if (a.headline_finding < 0) return headline_text(a);  // "No stage ran, ..."
  const Finding& f = a.findings[static_cast<size_t>(a.headline_finding)];
  if (f.layer == "undecided") {
    const std::string how = settle(f);
    return fmt::format("{}: cannot tell what caps it{}{}.", f.path,
                       f.undecided_reason.empty() ? "" : " (" + f.undecided_reason + ")",
                       how.empty() ? "" : "; " + how);
  }
  return fmt::format("{}: {} caps it{}.", f.path, capped_by(f),
                     f.subject.empty() || f.subject.n == 0 ? "" : " at " + figure_text(f.subject));
}

std::string summary_text(const analysis::Analysis& a, bool bold) {
  const std::vector<SummaryLine> lines = summary_lines(a);
  const char* on = bold ? "\033[1m" : "";
  const char* off = bold ? "\033[0m" : "";
  std::string out = fmt::format(
      "\n{}Summary{} (each path: what caps it, its figure in MB/s, its "
      "share of the layer beneath, how sure)\n",
      on, off);
  if (!lines.empty()) {
    size_t wp = 4, wc = 9, ws = 5;  // widths of "path", "capped by", "share"
    for (const auto& l : lines) {
      wp = std::max(wp, l.path.size());
      wc = std::max(wc, l.capped_by.size());
      ws = std::max(ws, l.share.size());
    }
    out += fmt::format("  {:<{}}  {:<{}}  {:>9}  {:<{}}  {}\n", "path", wp, "capped by", wc, "MB/s",
                       "share", ws, "sure");
    for (const auto& l : lines) {
      out += fmt::format("  {:<{}}  {:<{}}  {:>9}  {:<{}}  {}\n", l.path, wp, l.capped_by, wc,
                         l.figure, l.share, ws, l.confidence);
    }
  }
  out += fmt::format("  {}Headline:{} {}\n", on, off, headline_brief(a));
  return out;
}

}  // namespace cp::report
