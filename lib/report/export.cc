#include "report/export.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <string_view>

#include "core/cpu_message.h"
#include "core/stored_run_json.h"
#include "report/report.h"
#include "report/sample_json.h"

namespace cp::report {
namespace {

namespace json = boost::json;

// Scalars of `v` under dotted keys; arrays are kept as compact JSON.
void flatten(const json::value& v, const std::string& prefix, json::object& out) {
  if (v.is_object()) {
    for (const auto& [k, sub] : v.as_object()) flatten(sub, prefix + "." + std::string(k), out);
  } else if (v.is_array()) {
    out[prefix] = json::serialize(v);
  } else {
    out[prefix] = v;
  }
}

// The busiest core (% busy), top process and busiest thread of one end's CPU.
void add_cpu(const stored::Sample& sample, const char* role, json::object& row) {
  const std::string p = role;
  row[p + "_max_core_pct"] = nullptr;
  row[p + "_top_process"] = nullptr;
  row[p + "_top_cpu_pct"] = nullptr;
  row[p + "_top_thread_pct"] = nullptr;
  const msg::CpuSummary* end = sample.cpu_of(role);
  if (!end) return;
  const msg::CpuSummary& s = *end;
  if (!s.core_busy_pct.empty()) {
    row[p + "_max_core_pct"] = *std::max_element(s.core_busy_pct.begin(), s.core_busy_pct.end());
  }
  if (!s.top.empty()) {
    row[p + "_top_process"] = s.top.front().comm;
    row[p + "_top_cpu_pct"] = s.top.front().cpu_pct;
    if (s.top.front().top_thread_pct >= 0) {
      row[p + "_top_thread_pct"] = s.top.front().top_thread_pct;
    }
  }
}

struct Table {
  std::vector<std::string> columns;
  std::vector<json::object> rows;          // column -> value
  std::vector<json::value> details, cpus;  // whole, for JSON
};

Table build(const stored::Run& run) {
  Table t;
  t.columns = {"run_id",
               "run_label",
               "stage_id",
               "layer",
               "where",
               "stage_status",
               "sample_id",
               "seq",
               "op",
               "size",
               "bytes",
               "seconds",
               "bytes_per_s",
               "started_at",
               "cache_possible",
               "error",
               "server_max_core_pct",
               "server_top_process",
               "server_top_cpu_pct",
               "server_top_thread_pct",
               "client_max_core_pct",
               "client_top_process",
               "client_top_cpu_pct",
               "client_top_thread_pct"};
  std::vector<std::string> extra;
  for (const auto& st : run.stages) {
    for (const auto& s : st.samples) {
      json::object row{{"run_id", run.id},   {"run_label", run.label}, {"stage_id", st.id},
                       {"layer", st.driver}, {"where", st.where},      {"stage_status", st.status},
                       {"sample_id", s.id}};
      for (auto& [k, v] : sample_measure_json(s)) row[k] = std::move(v);
      add_cpu(s, "server", row);
      add_cpu(s, "client", row);
      json::value details = stored::to_json(s.details);
      json::object flat;
      if (details.is_object()) flatten(details, "details", flat);
      for (auto& [k, v] : flat) {
        const std::string key(k);
        if (std::find(extra.begin(), extra.end(), key) == extra.end()) extra.push_back(key);
        row[key] = v;
      }
      t.rows.push_back(std::move(row));
      t.details.push_back(std::move(details));
      t.cpus.push_back(stored::to_json(s.cpu));
    }
  }
  t.columns.insert(t.columns.end(), extra.begin(), extra.end());
  return t;
}

// RFC 4180: quoted when it holds a comma, quote, CR or LF.
std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A cell as CSV: JSON numbers and booleans as they are (a negative number
// stays a number), everything else through csv_field.
std::string cell(const json::value* v) {
  if (!v || v->is_null()) return {};
  if (v->is_string()) return csv_field(std::string(v->as_string()));
  if (v->is_bool()) return v->as_bool() ? "true" : "false";
  if (v->is_double()) return fmt::format("{}", v->as_double());
  if (v->is_int64() || v->is_uint64()) return json::serialize(*v);
  return csv_field(json::serialize(*v));  // an array, kept as compact JSON
}

}  // namespace

std::string csv_field(const std::string& s) {
  // What a spreadsheet reads as a formula: = + - @, or TAB or CR before one
  // (OWASP, CSV injection). The ' makes it text; it shows in the cell.
  if (!s.empty() && std::string_view("=+-@\t\r").find(s.front()) != std::string_view::npos) {
    return quoted("'" + s);
  }
  return quoted(s);
}

std::string export_csv(const stored::Run& run) {
  Table t = build(run);
  std::string out;
  for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + csv_field(t.columns[i]);
  out += "\r\n";
  for (const auto& row : t.rows) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      out += (i ? "," : "") + cell(row.if_contains(t.columns[i]));
    }
    out += "\r\n";
  }
  return out;
}

std::string export_json(const stored::Run& run) {
  Table t = build(run);
  json::array columns, samples;
  for (const auto& c : t.columns) columns.push_back(json::string(c));
  for (size_t i = 0; i < t.rows.size(); ++i) {
    json::object row = t.rows[i];
    row["details"] = t.details[i];
    row["cpu"] = t.cpus[i];
    samples.push_back(std::move(row));
  }
  json::object doc{{"run",
                    {{"id", run.id},
                     {"label", run.label},
                     {"status", run.status},
                     {"server", run.server},
                     {"client", run.client},
                     {"started_at", run.started_at},
                     {"finished_at", run.finished_at},
                     {"version", run.version},
                     {"degraded", degraded_json(run)}}},
                   {"columns", columns},
                   {"samples", samples}};
  return json::serialize(doc) + "\n";
}

}  // namespace cp::report
