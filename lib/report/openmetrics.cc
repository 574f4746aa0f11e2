#include "report/openmetrics.h"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace cp::report {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

bool is_protocol_layer(const std::string& layer) {
  return layer != "disk" && layer != "tcp" && layer != "link";
}

// A number as both formats read it: integers plainly, else up to 12
// significant digits (the figures are medians of noisy samples).
std::string number(double v) {
  if (!std::isfinite(v)) return v > 0 ? "+Inf" : (v < 0 ? "-Inf" : "NaN");
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", int64_t(v));
  return fmt::format("{:.12g}", v);
}

class Writer {
 public:
  explicit Writer(Labels run) : run_(std::move(run)) {}

  // Starts a family: its HELP and TYPE lines, once.
  void family(const std::string& name, const std::string& help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
  }
  void sample(const std::string& name, const Labels& labels, double value) {
    out_ += name;
    out_ += '{';
    bool first = true;
    for (const Labels* set : std::initializer_list<const Labels*>{&run_, &labels}) {
      for (const auto& [k, v] : *set) {
        if (v.empty()) continue;  // Prometheus takes an empty label for none
        if (!first) out_ += ',';
        first = false;
        out_ += fmt::format("{}=\"{}\"", k, openmetrics_label_value(v));
      }
    }
    out_ += "} " + number(value) + "\n";
  }
  std::string take() { return std::move(out_); }

 private:
  Labels run_;
  std::string out_;
};

// The labels that tell one ladder row from another.
Labels row_labels(const analysis::Row& r) {
  const bool proto = is_protocol_layer(r.layer);
  return {{"layer", r.layer},
          {"protocol", proto ? r.layer : ""},
          {"path", proto ? fmt::format("{} {} {}", r.layer, r.where, r.op) : ""},
          {"where", r.where},
          {"op", r.op},
          {"size", r.size > 0 ? fmt::format("{}", r.size) : ""},
          // A TCP row of several streams at once (`[tcp] streams`); one stream: none.
          {"streams", r.streams > 1 ? fmt::format("{}", r.streams) : ""}};
}

void write_rows(Writer& w, const analysis::Analysis& a) {
  std::vector<const analysis::Row*> rows;
  for (const analysis::Row& r : a.rows) {
    if (!analysis::is_size_scan(r)) rows.push_back(&r);
  }
  const std::string rate = "chokepoint_layer_throughput_bytes_per_second";
  w.family(rate, "Median throughput of a layer's samples (the link: its nominal rate).");
  for (const auto* r : rows) {
    if (r->unit == analysis::RowUnit::kOps) continue;  // their own family below
    if (r->rate.n > 0 || r->layer == "link") w.sample(rate, row_labels(*r), r->rate.median);
  }
  const std::string ops = "chokepoint_files_operations_per_second";
  bool ops_family = false;  // written with the first small-file row
  for (const auto* r : rows) {
    if (r->unit != analysis::RowUnit::kOps || r->rate.n == 0) continue;
    if (!ops_family) {
      w.family(ops,
               "Median operations per second of a small-file phase (create, stat, read, "
               "delete).");
      ops_family = true;
    }
    w.sample(ops, row_labels(*r), r->rate.median);
  }
  const std::string n = "chokepoint_layer_samples";
  w.family(n, "Successful samples behind a layer's figure.");
  for (const auto* r : rows) {
    if (r->layer != "link") w.sample(n, row_labels(*r), double(r->rate.n));
  }
  const std::string failed = "chokepoint_layer_failed_samples";
  w.family(failed, "Failed samples of a layer.");
  for (const auto* r : rows) {
    if (r->layer != "link") w.sample(failed, row_labels(*r), double(r->failed));
  }
  const std::string ratio = "chokepoint_layer_beneath_ratio";
  w.family(ratio, "A layer's median over the median of the layer beneath it.");
  for (const auto* r : rows) {
    if (r->below.empty() || r->ratio <= 0) continue;
    Labels l = row_labels(*r);
    l.emplace_back("beneath", r->below);
    w.sample(ratio, l, r->ratio);
  }
}

void write_verdicts(Writer& w, const analysis::Analysis& a) {
  const std::string v = "chokepoint_path_verdict";
  w.family(v, "The layer that caps a path (1 per finding; layer undecided: cannot tell).");
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const analysis::Finding& f : a.findings) {
    if (!seen.emplace(f.path, f.layer, f.cap).second) continue;  // one sample per label set
    w.sample(v, {{"path", f.path}, {"layer", f.layer}, {"cap", f.cap}}, 1);
  }
}

}  // namespace

std::string openmetrics_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string export_openmetrics(const stored::Run& run, const analysis::Analysis& a,
                               const OpenMetricsOptions& o) {
  Writer w({{"server", run.server}, {"client", run.client}, {"run_label", run.label}});
  w.family("chokepoint_run_info", "A stored run: its id, status and chokepoint's version.");
  w.sample(
      "chokepoint_run_info",
      {{"run_id", fmt::format("{}", run.id)}, {"status", run.status}, {"version", run.version}}, 1);
  w.family("chokepoint_run_start_timestamp_seconds", "When the run started, Unix seconds.");
  w.sample("chokepoint_run_start_timestamp_seconds", {}, run.started_at);
  if (run.finished_at >= run.started_at && run.finished_at > 0) {
    w.family("chokepoint_run_duration_seconds", "How long the run took.");
    w.sample("chokepoint_run_duration_seconds", {}, run.finished_at - run.started_at);
  }
  write_rows(w, a);
  write_verdicts(w, a);
  std::string text = w.take();
  if (o.eof) text += "# EOF\n";
  return text;
}

}  // namespace cp::report
