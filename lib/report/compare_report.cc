#include "report/compare_report.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/clock.h"
#include "core/units.h"

namespace cp::report {
namespace {

namespace json = boost::json;

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
          {"headline", r.headline}};
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

}  // namespace

std::string compare_text(const analysis::Comparison& c, const TextOptions& o) {
  const char* bold = o.color ? "\033[1m" : "";
  const char* green = o.color ? "\033[32m" : "";
  const char* red = o.color ? "\033[31m" : "";
  const char* reset = o.color ? "\033[0m" : "";
  std::string out =
      fmt::format("{}chokepoint compare{}  A = {} ({})  B = {} ({})\n", bold, reset, run_name(c.a),
                  iso_time(c.a.started_at), run_name(c.b), iso_time(c.b.started_at));
  out += fmt::format(
      "\n{}Stages{} (MB/s = 10^6 bytes/s; median (min-max); a change is real at p < {} by the "
      "Mann-Whitney U test)\n",
      bold, reset, analysis::kSignificance);
  out += fmt::format("  {:<36} {:>22} {:>22}  {}\n", "layer", "A", "B", "B vs A");
  for (const auto& d : c.rows) {
    auto cell = [](const Summary& s) {
      return fmt::format("{} ({}-{})", mb(s.median), mb(s.min), mb(s.max));
    };
    std::string change;
    if (d.verdict == "faster" || d.verdict == "slower") {
      change =
          fmt::format("{}{:+.1f} % {}{} (p={:.3f}, n={}+{})", d.verdict == "faster" ? green : red,
                      d.delta * 100, d.verdict, reset, d.test.p, d.test.n1, d.test.n2);
    } else if (d.verdict == "no change") {
      change = fmt::format("~ no change (p={:.3f}, n={}+{})", d.test.p, d.test.n1, d.test.n2);
    } else {
      change = fmt::format("{:+.1f} % ? {}", d.delta * 100, d.verdict);
    }
    if (!d.note.empty()) change += "; " + d.note;
    if (d.cache_suspected) change += "; cache suspected";
    out += fmt::format("  {:<36} {:>22} {:>22}  {}\n", d.label, cell(d.a), cell(d.b), change);
  }
  auto only = [&](const char* which, const std::vector<std::string>& rows) {
    if (rows.empty()) return;
    out += fmt::format("  only in {}:", which);
    for (size_t i = 0; i < rows.size(); ++i) out += (i ? "; " : " ") + rows[i];
    out += "\n";
  };
  only("A", c.only_a);
  only("B", c.only_b);
  out += fmt::format("\n{}What differs between the runs{}\n", bold, reset);
  if (c.env.empty()) {
    out += "  nothing in the recorded plan or host facts\n";
  }
  for (const auto& e : c.env) {
    out += fmt::format("  {:<7} {:<40} {} -> {}\n", e.where, cut(e.what), cut(e.a), cut(e.b));
  }
  out += fmt::format("\n{}Verdicts{}\n  A: {}\n  B: {}\n", bold, reset, c.a.headline, c.b.headline);
  return out;
}

std::string compare_json(const analysis::Comparison& c) {
  json::array rows, env, only_a, only_b;
  for (const auto& d : c.rows) {
    rows.push_back({{"key", d.key},
                    {"label", d.label},
                    {"layer", d.layer},
                    {"a", summary_json(d.a, d.a_samples, d.a_ids)},
                    {"b", summary_json(d.b, d.b_samples, d.b_ids)},
                    {"delta", d.delta},
                    {"u", d.test.u},
                    {"p", d.test.too_few ? json::value(nullptr) : json::value(d.test.p)},
                    {"exact", d.test.exact},
                    {"verdict", d.verdict},
                    {"note", d.note},
                    {"cache_suspected", d.cache_suspected}});
  }
  for (const auto& e : c.env) {
    env.push_back({{"where", e.where}, {"what", e.what}, {"a", e.a}, {"b", e.b}});
  }
  for (const auto& r : c.only_a) only_a.push_back(json::string(r));
  for (const auto& r : c.only_b) only_b.push_back(json::string(r));
  json::object doc{{"a", side_json(c.a)}, {"b", side_json(c.b)}, {"alpha", analysis::kSignificance},
                   {"rows", rows},        {"only_a", only_a},    {"only_b", only_b},
                   {"env", env}};
  return json::serialize(doc) + "\n";
}

}  // namespace cp::report
