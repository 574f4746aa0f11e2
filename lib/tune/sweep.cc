#include "tune/sweep.h"

#include <sqlite3.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/clock.h"
#include "core/error.h"
#include "core/model.h"
#include "core/stats.h"
#include "core/units.h"
#include "core/version.h"
#include "core/wire.h"
#include "pipeline/runner.h"
#include "remote/agent_link.h"
#include "store/store.h"

namespace cp::tune {
namespace json = boost::json;
namespace {

std::string html_escape(const std::string& s) {
  std::string out;
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
      default:
        out += c;
    }
  }
  return out;
}

std::string mbps(double bps) { return fmt::format("{:.1f}", bps / kMB); }

std::string pct(double change) { return fmt::format("{:+.1f} %", change * 100); }

std::string p_text(const ValueStats& v) {
  if (v.too_few) return "too few";
  return v.p_holm < 0.001 ? "<0.001" : fmt::format("{:.3f}", v.p_holm);
}

// Tune sessions live beside the runs, in their own tables of the same
// database, created on first use (the store's schema stays the store's).
class SessionTable {
 public:
  explicit SessionTable(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      throw Error(ErrorKind::kIo, fmt::format("cannot open {}: {}", path, sqlite3_errmsg(db_)));
    }
    sqlite3_busy_timeout(db_, 10000);
    exec(
        "CREATE TABLE IF NOT EXISTS tune_sessions (id INTEGER PRIMARY KEY, started_at REAL, "
        "finished_at REAL, status TEXT, knob TEXT, endpoint TEXT, server TEXT, client TEXT, "
        "original TEXT, values_json TEXT, rounds INTEGER, result_json TEXT, error TEXT, "
        "target TEXT);"
        "CREATE TABLE IF NOT EXISTS tune_runs (session_id INTEGER REFERENCES tune_sessions(id), "
        "run_id INTEGER, round INTEGER, value TEXT, is_original INTEGER);");
    // Tables from before the target column gain it.
    bool has_target = false;
    for (const auto& c : rows("PRAGMA table_info(tune_sessions)", {})) {
      has_target = has_target || (c.size() > 1 && c[1] == "target");
    }
    if (!has_target) exec("ALTER TABLE tune_sessions ADD COLUMN target TEXT");
  }
  ~SessionTable() { sqlite3_close(db_); }
  int64_t begin(const SweepSetup& s) {
    json::array vals;
    for (const auto& v : s.values) vals.push_back(json::value(v));
    run("INSERT INTO tune_sessions (started_at, status, knob, endpoint, server, client, "
        "values_json, rounds) VALUES (?,?,?,?,?,?,?,?)",
        {std::to_string(wall_seconds()), kRunning, s.knob->name, s.knob->endpoint, s.server_name,
         s.client_name, json::serialize(vals), std::to_string(s.rounds)});
    return sqlite3_last_insert_rowid(db_);
  }
  void link(int64_t session, int64_t run_id, int round, const std::string& value, bool original) {
    run("INSERT INTO tune_runs (session_id, run_id, round, value, is_original) VALUES (?,?,?,?,?)",
        {std::to_string(session), std::to_string(run_id), std::to_string(round), value,
         original ? "1" : "0"});
  }
  void end(int64_t session, const std::string& status, const std::string& original,
           const std::string& target, const std::string& result, const std::string& error) {
    run("UPDATE tune_sessions SET finished_at=?, status=?, original=?, target=?, result_json=?, "
        "error=? WHERE id=?",
        {std::to_string(wall_seconds()), status, original, target, result, error,
         std::to_string(session)});
  }
  // Rows of a query, every column as text ("" for NULL).
  std::vector<std::vector<std::string>> rows(const char* sql,
                                             const std::vector<std::string>& args) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      sqlite3_bind_text(st, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    std::vector<std::vector<std::string>> out;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const unsigned char* t = sqlite3_column_text(st, c);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
    return out;
  }

 private:
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "?";
      sqlite3_free(err);
      throw Error(ErrorKind::kIo, "tune tables: " + m);
    }
  }
  void run(const char* sql, const std::vector<std::string>& args) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      sqlite3_bind_text(st, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
  }
  sqlite3* db_ = nullptr;
};

// "smb disk read 100 MB", "tcp server->client send".
std::string layer_key(const std::string& layer, const std::string& where, const SampleRecord& s) {
  std::string key = fmt::format("{} {} {}", layer, where, s.op);
  if (s.size > 0) key += " " + format_size(s.size);
  return key;
}

// Stores every record (the runs are ordinary runs) and keeps the samples of
// the layers the knob affects.
class Collector : public pipeline::RunObserver {
 public:
  Collector(Store& store, int64_t run_id, const Knob& knob, size_t value,
            std::map<std::string, std::vector<std::vector<double>>>& by_layer, size_t nvalues)
      : store_(store),
        run_(run_id),
        knob_(knob),
        value_(value),
        by_layer_(by_layer),
        nvalues_(nvalues) {}
  void on_host(const HostRecord& h) override { store_.add_host(run_, h); }
  int64_t on_stage_begin(const StageRecord& s) override {
    const int64_t id = store_.begin_stage(run_, s);
    stages_[id] = {s.layer, s.where};
    return id;
  }
  void on_sample(int64_t stage, const SampleRecord& s) override {
    store_.add_sample(stage, s);
    const auto& [layer, where] = stages_[stage];
    if (!s.error.empty() || !affects_sample(knob_, layer, where, s.op)) return;
    auto& slot = by_layer_[layer_key(layer, where, s)];
    if (slot.size() < nvalues_) slot.resize(nvalues_);
    slot[value_].push_back(s.rate());
  }
  void on_stage_end(int64_t stage, const std::string& status, const std::string& err) override {
    store_.end_stage(stage, status, err);
  }

 private:
  Store& store_;
  int64_t run_;
  const Knob& knob_;
  size_t value_;
  std::map<std::string, std::vector<std::vector<double>>>& by_layer_;
  size_t nvalues_;
  std::map<int64_t, std::pair<std::string, std::string>> stages_;
};

// The agents a knob lives on: one end, or both (server first).
std::vector<std::pair<std::string, remote::AgentLink*>> agents_of(const SweepSetup& s) {
  if (s.knob->endpoint == "server") return {{"server", s.server}};
  if (s.knob->endpoint == "client") return {{"client", s.client}};
  return {{"server", s.server}, {"client", s.client}};
}

json::object where_args(const SweepSetup& s, const std::string& end) {
  const auto& ep = end == "server" ? s.plan.server : s.plan.client;
  return {{"disk_dir", ep.disk_dir},
          {"samba_conf", s.plan.server.samba_conf},
          {"data_address", s.data_address},
          {"console", s.console},
          {"confirm_s", s.confirm_s}};
}

// The plan of one slot: the client option set (or the plan's own value
// restored) for client knobs.
pipeline::Plan slot_plan(const SweepSetup& s, const pipeline::Plan& base, const std::string& value,
                         bool original) {
  pipeline::Plan p = base;
  if (s.knob->mechanism != Mechanism::kClientOption || original) return p;
  for (auto& share : p.shares) {
    if (affects_sample(*s.knob, share.driver, share.medium, "read") ||
        affects_sample(*s.knob, share.driver, share.medium, "write")) {
      share.options[s.knob->param] = value;
    }
  }
  return p;
}

std::string client_original(const SweepSetup& s, const pipeline::Plan& p) {
  for (const auto& share : p.shares) {
    auto it = share.options.find(s.knob->param);
    if (it != share.options.end()) return it->second;
  }
  return "driver default";
}

}  // namespace

std::vector<Slot> schedule(size_t values_with_original, int rounds) {
  std::vector<Slot> out;
  for (int r = 1; r <= rounds; ++r) {
    for (size_t v = 0; v < values_with_original; ++v) out.push_back({r, v});
  }
  return out;
}

pipeline::Plan affected_plan(const Knob& knob, const pipeline::Plan& plan) {
  pipeline::Plan p = plan;
  p.disk_enabled = p.tcp_enabled = p.proto_enabled = false;
  p.sweep = false;
  p.shares.clear();
  for (const auto& a : knob.affects) {
    if (a.layer == "disk") p.disk_enabled = plan.disk_enabled;
    if (a.layer == "tcp") p.tcp_enabled = plan.tcp_enabled;
  }
  if (plan.proto_enabled) {
    for (const auto& share : plan.shares) {
      if (affects_sample(knob, share.driver, share.medium, "read") ||
          affects_sample(knob, share.driver, share.medium, "write")) {
        p.shares.push_back(share);
      }
    }
    p.proto_enabled = !p.shares.empty();
  }
  if (!p.disk_enabled && !p.tcp_enabled && !p.proto_enabled) {
    throw Error(ErrorKind::kConfig,
                fmt::format("knob {} affects {}, and the plan runs none of those stages", knob.name,
                            describe_affects(knob)),
                "declare a share of that protocol and medium (--share or the plan's [share]), or "
                "enable the stage");
  }
  return p;
}

TuneResult analyze(const std::string& knob, const std::vector<std::string>& values,
                   const std::vector<LayerSamples>& layers, int rounds) {
  TuneResult r;
  r.knob = knob;
  r.values = values;
  r.rounds = rounds;
  // Per value: the best significant gain, and whether any layer got worse.
  std::vector<double> gain(values.size(), 0);
  std::vector<bool> better(values.size(), false), worse(values.size(), false);
  std::vector<std::string> gain_layer(values.size());
  for (const auto& ls : layers) {
    LayerResult lr;
    lr.layer = ls.layer;
    std::vector<double> ps;
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
    // Holm over the values compared with the original on this layer.
    const std::vector<double> adj = holm_adjust(ps);
    for (size_t v = 1; v < lr.values.size(); ++v) {
      ValueStats& st = lr.values[v];
      st.p_holm = adj[v - 1];
      if (st.too_few || st.p_holm >= kAlpha) continue;
      if (st.median > lr.values[0].median) {
        st.better = true;
        better[v] = true;
        if (st.change > gain[v]) {
          gain[v] = st.change;
          gain_layer[v] = ls.layer;
        }
      } else if (st.median < lr.values[0].median) {
        st.worse = true;
        worse[v] = true;
      }
    }
    r.layers.push_back(std::move(lr));
  }
  size_t best = 0;
  for (size_t v = 1; v < values.size(); ++v) {
    if (better[v] && !worse[v] && (best == 0 || gain[v] > gain[best])) best = v;
  }
  if (best > 0) {
    r.recommended = values[best];
    r.reason = fmt::format(
        "{} = {} moves {} {} against the original {} (Holm-corrected p < {}), and no affected "
        "layer got significantly worse",
        knob, values[best], gain_layer[best], pct(gain[best]), values.empty() ? "" : values[0],
        kAlpha);
  } else {
    bool any_better = false;
    for (size_t v = 1; v < values.size(); ++v) any_better = any_better || better[v];
    r.reason = any_better ? "every value that helped one layer hurt another significantly"
                          : fmt::format(
                                "no value is significantly better than the original {} on any "
                                "affected layer (Holm-corrected p < {})",
                                values.empty() ? "" : values[0], kAlpha);
  }
  return r;
}

std::string result_text(const TuneResult& r) {
  std::string out =
      fmt::format("tune {} on the {} ({}), {} rounds, original {}\n", r.knob, r.endpoint, r.target,
                  r.rounds, r.original.empty() ? "?" : r.original);
  for (const auto& l : r.layers) {
    out += fmt::format("  {}\n", l.layer);
    out += fmt::format("    {:<22} {:>10} {:>21} {:>4} {:>9} {:>9}\n", "value", "median MB/s",
                       "p25-p75 MB/s", "n", "change", "p (Holm)");
    for (size_t i = 0; i < l.values.size(); ++i) {
      const auto& v = l.values[i];
      const std::string name = v.value + (i == 0 ? " (original)" : "");
      out += fmt::format("    {:<22} {:>10} {:>21} {:>4}", name, mbps(v.median),
                         mbps(v.p25) + "-" + mbps(v.p75), v.n);
      if (i > 0) {
        out += fmt::format(" {:>9} {:>9}{}", pct(v.change), p_text(v),
                           v.better ? "  better" : (v.worse ? "  worse" : ""));
      }
      out += "\n";
    }
  }
  out += r.recommended.empty() ? "Recommendation: keep what you have: "
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
                                {"worse", v.worse}});
    }
    layers.push_back(json::object{{"layer", l.layer}, {"values", std::move(vs)}});
  }
  o["layers"] = std::move(layers);
  o["recommended"] = r.recommended.empty() ? json::value(nullptr) : json::value(r.recommended);
  o["reason"] = r.reason;
  json::array runs;
  for (auto id : r.run_ids) runs.push_back(id);
  o["run_ids"] = std::move(runs);
  return json::serialize(o) + "\n";
}

std::string result_html(const TuneResult& r, const std::vector<LayerSamples>& layers) {
  std::string out = fmt::format(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>chokepoint tune {}</title>"
      "<style>body{{font-family:sans-serif;margin:2em}}svg{{border:1px solid #ccc}}"
      ".rec{{font-weight:bold}}</style></head><body><h1>tune {}</h1><p>{} on the {} ({}), {} "
      "rounds</p><p class=\"rec\">{}</p>",
      html_escape(r.knob), html_escape(r.knob), html_escape(r.knob), html_escape(r.endpoint),
      html_escape(r.target), r.rounds,
      html_escape((r.recommended.empty() ? std::string("Keep what you have. ")
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
                       html_escape(ls.layer), W, H);
    // y axis: 0 and the top, MB/s.
    out +=
        fmt::format("<text x=\"4\" y=\"{}\" font-size=\"11\">{} MB/s</text>", top + 4, mbps(ymax));
    out += fmt::format("<text x=\"4\" y=\"{}\" font-size=\"11\">0</text>", H - bottom);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>", left,
                       H - bottom, W - 10, H - bottom);
    for (size_t v = 0; v < r.values.size(); ++v) {
      const double cx = left + step * (double(v) + 0.5);
      out +=
          fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}{}</text>",
                      cx, H - bottom + 16, html_escape(r.values[v]), v == 0 ? " (orig)" : "");
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

std::string dry_run_text(const SweepSetup& s) {
  const Knob& k = *s.knob;
  const pipeline::Plan p = affected_plan(k, s.plan);
  std::string out = fmt::format("dry run: tune {} ({}), {} rounds; nothing is changed\n", k.name,
                                k.summary, s.rounds);
  std::string stages;
  if (p.disk_enabled) stages += "disk; ";
  if (p.tcp_enabled) stages += "tcp; ";
  for (const auto& sh : p.shares)
    stages += fmt::format("{} ({} {}); ", sh.name, sh.driver, sh.medium);
  out += fmt::format("stages each round: {}\n", stages.substr(0, stages.size() - 2));
  if (k.mechanism == Mechanism::kClientOption) {
    out += fmt::format("original: {}\n", client_original(s, p));
    for (const auto& v : s.values) {
      out += fmt::format("value {}: share option {}={} on those shares (no host changes)\n", v,
                         k.param, v);
    }
    return out;
  }
  std::string revert;
  std::vector<std::string> apply(s.values.size());
  for (const auto& [end, agent] : agents_of(s)) {
    for (size_t i = 0; i < s.values.size(); ++i) {
      json::object args = where_args(s, end);
      args["knob"] = k.name;
      args["value"] = s.values[i];
      json::object r = agent->call("tune_plan", args, 60);
      if (i == 0) {
        out += fmt::format("on the {}: {}, now {}{}\n", end, wire::get_string(r, "target"),
                           wire::get_string(r, "original"),
                           wire::opt_bool(r, "cuts_ssh", false)
                               ? fmt::format(" (carries SSH: reverts by itself unless confirmed "
                                             "within {} s)",
                                             s.confirm_s)
                               : "");
        out += fmt::format("journal first: {}\n", wire::get_string(r, "journal"));
        for (const auto& a : wire::get_array(r, "revert")) {
          revert += fmt::format("  {}: {}\n", end, std::string(a.as_string()));
        }
      }
      for (const auto& a : wire::get_array(r, "apply")) {
        apply[i] += fmt::format("  {}: {}\n", end, std::string(a.as_string()));
      }
    }
  }
  for (size_t i = 0; i < s.values.size(); ++i) {
    out += fmt::format("value {}:\n{}", s.values[i], apply[i]);
  }
  out += "original (each round's first slot, and at the end):\n" + revert;
  return out;
}

TuneResult run_sweep(const SweepSetup& s, Store& store, const CancelToken& cancel,
                     const std::function<void(const std::string&)>& note,
                     std::vector<LayerSamples>* samples_out) {
  const Knob& k = *s.knob;
  const pipeline::Plan aplan = affected_plan(k, s.plan);
  const bool on_host = k.mechanism != Mechanism::kClientOption;
  std::string target = "client options", original;
  if (on_host) {
    target.clear();
    std::vector<std::string> originals;
    for (const auto& [end, agent] : agents_of(s)) {
      json::object args = where_args(s, end);
      args["knob"] = k.name;
      args["value"] = s.values.front();
      json::object r = agent->call("tune_plan", args, 60);
      const std::string t = wire::get_string(r, "target");
      target += (target.empty() ? "" : ", ") + (agents_of(s).size() > 1 ? end + " " + t : t);
      const std::string o = wire::get_string(r, "original");
      if (std::find(originals.begin(), originals.end(), o) == originals.end()) {
        originals.push_back(o);
      }
    }
    // Both ends at one value: that value; else "server/client".
    for (const auto& o : originals) original += (original.empty() ? "" : "/") + o;
  } else {
    original = client_original(s, aplan);
  }
  // After the knob resolved on its host: a refused knob leaves no session.
  SessionTable sessions(store.path());
  const int64_t session = sessions.begin(s);
  note(fmt::format("tune session {} stored in {}", session, store.path()));
  std::vector<std::string> values = {original};
  for (const auto& v : s.values) values.push_back(v);

  std::map<std::string, std::vector<std::vector<double>>> by_layer;
  std::vector<int64_t> run_ids;
  bool applied = false;
  auto revert = [&]() -> std::string {
    if (!on_host || !applied) return {};
    std::string errors;
    for (const auto& [end, agent] : agents_of(s)) {
      json::object r = agent->call("tune_revert", {}, 120);
      for (const auto& e : wire::get_array(r, "reverted")) {
        const std::string err = wire::get_string(e.as_object(), "error");
        if (!err.empty()) errors += end + ": " + err + "; ";
      }
    }
    applied = false;
    return errors;
  };
  std::string status = kComplete, error;
  try {
    for (const Slot& slot : schedule(values.size(), s.rounds)) {
      if (cancel.cancelled()) throw Error(ErrorKind::kCancelled, "interrupted");
      const bool orig = slot.value == 0;
      const std::string& value = values[slot.value];
      if (on_host) {
        if (orig) {
          const std::string errs = revert();
          if (!errs.empty()) throw Error(ErrorKind::kIo, "reverting to the original: " + errs);
        } else {
          applied = true;  // a partial apply is journaled too: revert it either way
          std::vector<remote::AgentLink*> watched;
          for (const auto& [end, agent] : agents_of(s)) {
            json::object args = where_args(s, end);
            args["knob"] = k.name;
            args["value"] = value;
            json::object r = agent->call("tune_apply", args, 120);
            if (wire::opt_u64(r, "watchdog_s", 0) > 0) watched.push_back(agent);
          }
          // Every end changed: confirm each watched host still answers.
          for (remote::AgentLink* agent : watched) {
            json::object c = agent->call("tune_confirm", {}, s.confirm_s);
            if (!wire::get_bool(c, "confirmed")) {
              throw Error(ErrorKind::kIo,
                          fmt::format("{} = {} cut {} off for more than {} s; its agent "
                                      "reverted by itself",
                                      k.name, value, agent->name(), s.confirm_s),
                          "leave that value out, or check the path carries it (MTU: every hop)");
            }
          }
        }
      }
      note(fmt::format("round {}/{}: {} = {}{}", slot.round, s.rounds, k.name, value,
                       orig ? " (original)" : ""));
      RunRecord run;
      run.label = fmt::format("tune {} {}={}{} r{}", session, k.name, value, orig ? " (orig)" : "",
                              slot.round);
      run.server = s.server_name;
      run.client = s.client_name;
      const pipeline::Plan p = slot_plan(s, aplan, value, orig);
      run.plan_json = pipeline::plan_to_json(p);
      run.version = kVersion;
      const int64_t run_id = store.begin_run(run);
      run_ids.push_back(run_id);
      sessions.link(session, run_id, slot.round, value, orig);
      Collector collector(store, run_id, k, slot.value, by_layer, values.size());
      try {
        pipeline::run_stages(
            p,
            {*s.server, *s.client, s.server_name, s.client_name, s.data_address, s.passwords, {}},
            collector, cancel);
        store.end_run(run_id, kComplete);
      } catch (const Error& e) {
        store.end_run(run_id, e.kind() == ErrorKind::kCancelled ? kInterrupted : kFailed,
                      describe(e));
        throw;
      }
    }
    const std::string errs = revert();
    if (!errs.empty()) throw Error(ErrorKind::kIo, "reverting at the end: " + errs);
  } catch (const Error& e) {
    status = e.kind() == ErrorKind::kCancelled ? kInterrupted : kFailed;
    error = describe(e);
    std::string revert_error;
    try {
      revert_error = revert();
    } catch (const Error& e2) {
      revert_error = describe(e2);
    }
    if (!revert_error.empty()) {
      error += fmt::format(" (and reverting failed: {})", revert_error);
    }
    sessions.end(session, status, original, target, "", error);
    if (!revert_error.empty()) {
      // Not "interrupted, all is well": the host may still carry a value.
      throw Error(ErrorKind::kIo, error,
                  "the agent retries when its channel closes; `chokepoint tune --revert HOST` "
                  "retries and reports what it restored");
    }
    throw;
  }
  std::vector<LayerSamples> layers;
  for (auto& [name, by_value] : by_layer) {
    by_value.resize(values.size());
    layers.push_back({name, by_value});
  }
  TuneResult r = analyze(k.name, values, layers, s.rounds);
  r.endpoint = k.endpoint;
  r.target = target;
  r.original = original;
  r.run_ids = run_ids;
  sessions.end(session, status, original, target, result_json(r), error);
  if (samples_out) *samples_out = std::move(layers);
  return r;
}

TuneResult load_session(Store& store, const std::string& which,
                        std::vector<LayerSamples>* samples_out) {
  SessionTable sessions(store.path());
  auto row = which == "latest" ? sessions.rows(
                                     "SELECT id, knob, endpoint, original, target, values_json, "
                                     "rounds, status FROM tune_sessions ORDER BY id DESC LIMIT 1",
                                     {})
                               : sessions.rows(
                                     "SELECT id, knob, endpoint, original, target, values_json, "
                                     "rounds, status FROM tune_sessions WHERE id = ?",
                                     {which});
  if (row.empty()) {
    throw Error(ErrorKind::kUsage,
                which == "latest" ? fmt::format("no tune session in {}", store.path())
                                  : fmt::format("no tune session {} in {}", which, store.path()),
                "sessions are numbered as `tune` prints them (\"tune session N stored in ...\")");
  }
  const auto& r0 = row.front();
  const Knob& knob = find_knob(r0[1]);
  std::vector<std::string> values = {r0[3]};
  const json::value tried = json::parse(r0[5]);
  for (const auto& v : tried.as_array()) values.emplace_back(v.as_string());
  std::map<std::string, std::vector<std::vector<double>>> by_layer;
  std::vector<int64_t> run_ids;
  for (const auto& tr : sessions.rows("SELECT run_id, value, is_original FROM tune_runs WHERE "
                                      "session_id = ? ORDER BY run_id",
                                      {r0[0]})) {
    size_t index = 0;
    if (tr[2] != "1") {
      auto it = std::find(values.begin() + 1, values.end(), tr[1]);
      if (it == values.end()) continue;
      index = static_cast<size_t>(it - values.begin());
    }
    const int64_t run_id = std::stoll(tr[0]);
    run_ids.push_back(run_id);
    const RunRecord run = store.load_run(run_id);
    for (const auto& stage : run.stages) {
      for (const auto& smp : stage.samples) {
        if (!smp.error.empty() || !affects_sample(knob, stage.layer, stage.where, smp.op)) continue;
        auto& slot = by_layer[layer_key(stage.layer, stage.where, smp)];
        slot.resize(values.size());
        slot[index].push_back(smp.rate());
      }
    }
  }
  std::vector<LayerSamples> layers;
  for (auto& [name, by_value] : by_layer) layers.push_back({name, by_value});
  TuneResult r = analyze(knob.name, values, layers, std::stoi(r0[6]));
  r.endpoint = r0[2];
  r.target = r0[4];
  r.original = r0[3];
  r.run_ids = run_ids;
  if (r0[7] != kComplete) {
    r.reason = fmt::format("the session ended {}: {}", r0[7], r.reason);
  }
  if (samples_out) *samples_out = std::move(layers);
  return r;
}

}  // namespace cp::tune
