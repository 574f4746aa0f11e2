#include "tune/sweep.h"

#include <sqlite3.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/clock.h"
#include "core/error.h"
#include "core/messages_json.h"
#include "core/model.h"
#include "core/stats.h"
#include "core/units.h"
#include "core/version.h"
#include "pipeline/runner.h"
#include "remote/agent_link.h"
#include "report/html.h"
#include "store/store.h"

namespace cp::tune {
namespace json = boost::json;
namespace {

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
  // `knob`: the name, or a grid's names joined with " x "; `values`: the
  // values (a grid: the combinations' labels) without the original.
  int64_t begin(const SweepSetup& s, const std::string& knob, const std::string& endpoint,
                const std::vector<std::string>& values) {
    json::array vals;
    for (const auto& v : values) vals.push_back(json::value(v));
    run("INSERT INTO tune_sessions (started_at, status, knob, endpoint, server, client, "
        "values_json, rounds) VALUES (?,?,?,?,?,?,?,?)",
        {std::to_string(wall_seconds()), kRunning, knob, endpoint, s.server_name, s.client_name,
         json::serialize(vals), std::to_string(s.rounds)});
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

bool affects_any(const std::vector<const Knob*>& knobs, const std::string& layer,
                 const std::string& where, const std::string& op) {
  for (const Knob* k : knobs) {
    if (affects_sample(*k, layer, where, op)) return true;
  }
  return false;
}

// Stores every record (the runs are ordinary runs) and keeps the samples of
// the layers the knob affects.
class Collector : public pipeline::RunObserver {
 public:
  Collector(Store& store, int64_t run_id, const std::vector<const Knob*>& knobs, size_t value,
            std::map<std::string, std::vector<std::vector<double>>>& by_layer, size_t nvalues)
      : store_(store),
        run_(run_id),
        knobs_(knobs),
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
    if (!s.error.empty() || !affects_any(knobs_, layer, where, s.op)) return;
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
  std::vector<const Knob*> knobs_;
  size_t value_;
  std::map<std::string, std::vector<std::vector<double>>>& by_layer_;
  size_t nvalues_;
  std::map<int64_t, std::pair<std::string, std::string>> stages_;
};

// The agents a knob lives on: one end, or both (server first).
std::vector<std::pair<std::string, remote::AgentLink*>> agents_of(const SweepSetup& s,
                                                                  const Knob& k) {
  if (k.endpoint == "server") return {{"server", s.server}};
  if (k.endpoint == "client") return {{"client", s.client}};
  return {{"server", s.server}, {"client", s.client}};
}

// The tune_plan / tune_apply request of knob `k` at `value` on `end`.
msg::TuneRequest tune_request(const SweepSetup& s, const std::string& end, const Knob& k,
                              const std::string& value) {
  const auto& ep = end == "server" ? s.plan.server : s.plan.client;
  msg::TuneRequest q;
  q.knob = k.name;
  q.value = value;
  q.disk_dir = ep.disk_dir;
  q.samba_conf = s.plan.server.samba_conf;
  q.data_address = s.data_address;
  q.console = s.console;
  q.confirm_s = s.confirm_s;
  q.afp_conf = s.afp_conf;
  q.afp_restart = s.afp_restart;
  return q;
}

// One tune request to `agent`, its answer through its codec.
template <class Result>
Result ask_tune(remote::AgentLink* agent, const std::string& type, const json::object& args,
                double timeout_s) {
  return msg::decode<Result>(agent->call(type, args, timeout_s), type);
}

bool on_host(const Knob& k) { return k.mechanism != Mechanism::kClientOption; }

bool share_affected(const Knob& k, const pipeline::SharePlan& share) {
  return affects_sample(k, share.driver, share.medium, "read") ||
         affects_sample(k, share.driver, share.medium, "write");
}

// The plan of one slot: the client options of its combination set (a knob
// at its original keeps the plan's own value), and every knob's companion
// client options (the SMB1 knob's NT1) on the shares it affects.
pipeline::Plan slot_plan(const SweepSetup& s, const pipeline::Plan& base,
                         const std::vector<size_t>& pick) {
  pipeline::Plan p = base;
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const Knob& k = *s.axes[i].knob;
    for (auto& share : p.shares) {
      if (!share_affected(k, share)) continue;
      for (const auto& [opt, v] : k.client_options) share.options[opt] = v;
      if (k.mechanism == Mechanism::kClientOption && pick[i] > 0) {
        share.options[k.param] = s.axes[i].values[pick[i] - 1];
      }
    }
  }
  return p;
}

std::string client_original(const Knob& k, const pipeline::Plan& p) {
  for (const auto& share : p.shares) {
    auto it = share.options.find(k.param);
    if (it != share.options.end()) return it->second;
  }
  return "driver default";
}

std::vector<const Knob*> knobs_of(const SweepSetup& s) {
  std::vector<const Knob*> out;
  for (const auto& a : s.axes) out.push_back(a.knob);
  return out;
}

// Every end any host knob lives on, server first.
std::vector<std::pair<std::string, remote::AgentLink*>> host_agents(const SweepSetup& s) {
  bool server = false, client = false;
  for (const auto& a : s.axes) {
    if (!on_host(*a.knob)) continue;
    for (const auto& [end, agent] : agents_of(s, *a.knob)) {
      (end == "server" ? server : client) = true;
    }
  }
  std::vector<std::pair<std::string, remote::AgentLink*>> out;
  if (server) out.push_back({"server", s.server});
  if (client) out.push_back({"client", s.client});
  return out;
}

std::string joined_names(const SweepSetup& s) {
  std::string out;
  for (const auto& a : s.axes) out += (out.empty() ? "" : " x ") + a.knob->name;
  return out;
}

// A combination's label: one knob's value, or "a=1 b=2" for a grid, each
// knob at its value or its original (`originals`).
std::string label_of(const SweepSetup& s, const std::vector<size_t>& pick,
                     const std::vector<std::string>& originals) {
  auto value = [&](size_t i) {
    return pick[i] == 0 ? originals[i] : s.axes[i].values[pick[i] - 1];
  };
  if (s.axes.size() == 1) return value(0);
  std::string out;
  for (size_t i = 0; i < s.axes.size(); ++i) {
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", s.axes[i].knob->name, value(i));
  }
  return out;
}

}  // namespace

std::vector<Slot> schedule(size_t values_with_original, int rounds) {
  std::vector<Slot> out;
  for (int r = 1; r <= rounds; ++r) {
    for (size_t v = 0; v < values_with_original; ++v) out.push_back({r, v});
  }
  return out;
}

std::vector<std::vector<size_t>> combinations(const std::vector<size_t>& counts, Grid grid) {
  std::vector<std::vector<size_t>> out;
  out.push_back(std::vector<size_t>(counts.size(), 0));
  if (grid == Grid::kOneAtATime) {
    for (size_t i = 0; i < counts.size(); ++i) {
      for (size_t v = 1; v < counts[i]; ++v) {
        out.push_back(std::vector<size_t>(counts.size(), 0));
        out.back()[i] = v;
      }
    }
    return out;
  }
  // Every combination, the last axis fastest (an odometer from all-original).
  std::vector<size_t> c(counts.size(), 0);
  for (;;) {
    size_t i = counts.size();
    while (i > 0) {
      --i;
      if (++c[i] < counts[i]) break;
      c[i] = 0;
      if (i == 0) return out;
    }
    if (counts.empty()) return out;
    out.push_back(c);
  }
}

pipeline::Plan affected_plan(const std::vector<const Knob*>& knobs, const pipeline::Plan& plan) {
  CP_CHECK(!knobs.empty());
  pipeline::Plan p = affected_plan(*knobs.front(), plan);
  for (size_t i = 1; i < knobs.size(); ++i) {
    const pipeline::Plan q = affected_plan(*knobs[i], plan);
    p.disk_enabled = p.disk_enabled || q.disk_enabled;
    p.tcp_enabled = p.tcp_enabled || q.tcp_enabled;
    for (const auto& share : q.shares) {
      const bool have =
          std::any_of(p.shares.begin(), p.shares.end(),
                      [&](const pipeline::SharePlan& x) { return x.name == share.name; });
      if (!have) p.shares.push_back(share);
    }
    p.proto_enabled = !p.shares.empty();
  }
  if (knobs.size() > 1) {
    // In the plan's order.
    std::vector<pipeline::SharePlan> ordered;
    for (const auto& share : plan.shares) {
      for (const auto& x : p.shares) {
        if (x.name == share.name) ordered.push_back(x);
      }
    }
    p.shares = ordered;
  }
  return p;
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
        grid ? values[best] : knob + " = " + values[best], gain_layer[best], pct(gain[best]),
        values.empty() ? "" : values[0], kAlpha, ps.size());
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
        out += fmt::format(" {:>9} {:>9}{}", pct(v.change), p_text(v),
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
                                {"worse", v.worse}});
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

namespace {

// One knob's part of a dry run: its target, original and exact commands.
std::string dry_run_axis(const SweepSetup& s, const Axis& axis, const pipeline::Plan& p) {
  const Knob& k = *axis.knob;
  std::string out = fmt::format("knob {} ({})\n", k.name, k.summary);
  if (k.mechanism == Mechanism::kClientOption) {
    out += fmt::format("original: {}\n", client_original(k, p));
    for (const auto& v : axis.values) {
      out += fmt::format("value {}: share option {}={} on those shares (no host changes)\n", v,
                         k.param, v);
    }
    return out;
  }
  std::string revert;
  std::vector<std::string> apply(axis.values.size());
  std::string original_apply;
  for (const auto& [end, agent] : agents_of(s, k)) {
    for (size_t i = 0; i < axis.values.size(); ++i) {
      const auto r = ask_tune<msg::TunePlanResult>(
          agent, "tune_plan", msg::to_json(tune_request(s, end, k, axis.values[i])), 60);
      if (i == 0) {
        out += fmt::format("on the {}: {}, now {}{}\n", end, r.target, r.original,
                           r.cuts_ssh
                               ? fmt::format(" (carries SSH: reverts by itself unless confirmed "
                                             "within {} s)",
                                             s.confirm_s)
                               : "");
        out += fmt::format("journal first: {}\n", r.journal);
        for (const auto& a : r.revert) revert += fmt::format("  {}: {}\n", end, a);
        if (!k.with.empty()) {
          // The original slots apply the original value, under the companions.
          const auto at_original = ask_tune<msg::TunePlanResult>(
              agent, "tune_plan", msg::to_json(tune_request(s, end, k, r.original)), 60);
          for (const auto& a : at_original.apply) {
            original_apply += fmt::format("  {}: {}\n", end, a);
          }
        }
      }
      for (const auto& a : r.apply) apply[i] += fmt::format("  {}: {}\n", end, a);
    }
  }
  for (size_t i = 0; i < axis.values.size(); ++i) {
    out += fmt::format("value {}:\n{}", axis.values[i], apply[i]);
  }
  if (!original_apply.empty()) {
    out += "original (each round's first slot, under the same companions):\n" + original_apply;
    out += "at the end:\n" + revert;
  } else {
    out += "original (each round's first slot, and at the end):\n" + revert;
  }
  return out;
}

}  // namespace

std::string dry_run_text(const SweepSetup& s) {
  const pipeline::Plan p = affected_plan(knobs_of(s), s.plan);
  std::string out =
      fmt::format("dry run: tune {}, {} rounds; nothing is changed\n", joined_names(s), s.rounds);
  std::string stages;
  if (p.disk_enabled) stages += "disk; ";
  if (p.tcp_enabled) stages += "tcp; ";
  for (const auto& sh : p.shares)
    stages += fmt::format("{} ({} {}); ", sh.name, sh.driver, sh.medium);
  out += fmt::format("stages each round: {}\n", stages.substr(0, stages.size() - 2));
  for (const auto& axis : s.axes) out += dry_run_axis(s, axis, p);
  if (s.axes.size() > 1) {
    std::vector<size_t> counts;
    std::vector<std::string> originals;
    for (const auto& a : s.axes) {
      counts.push_back(a.values.size() + 1);
      originals.push_back("original");
    }
    const auto combos = combinations(counts, s.grid);
    out +=
        fmt::format("combinations each round ({}, {}):\n",
                    s.grid == Grid::kCross ? "cross product" : "one knob at a time", combos.size());
    for (const auto& c : combos) out += "  " + label_of(s, c, originals) + "\n";
  }
  return out;
}

TuneResult run_sweep(const SweepSetup& s, Store& store, const CancelToken& cancel,
                     const std::function<void(const std::string&)>& note,
                     std::vector<LayerSamples>* samples_out) {
  CP_CHECK(!s.axes.empty());
  const std::vector<const Knob*> knobs = knobs_of(s);
  const pipeline::Plan aplan = affected_plan(knobs, s.plan);
  const bool grid = s.axes.size() > 1;
  // Per axis: its target and original (both ends at one value: that value;
  // else "server/client").
  std::vector<std::string> targets, originals;
  for (const auto& axis : s.axes) {
    const Knob& k = *axis.knob;
    std::string target, original;
    if (on_host(k)) {
      std::vector<std::string> seen;
      const auto ends = agents_of(s, k);
      for (const auto& [end, agent] : ends) {
        const auto r = ask_tune<msg::TunePlanResult>(
            agent, "tune_plan", msg::to_json(tune_request(s, end, k, axis.values.front())), 60);
        const std::string& t = r.target;
        target += (target.empty() ? "" : ", ") + (ends.size() > 1 ? end + " " + t : t);
        const std::string& o = r.original;
        if (std::find(seen.begin(), seen.end(), o) == seen.end()) seen.push_back(o);
      }
      for (const auto& o : seen) original += (original.empty() ? "" : "/") + o;
    } else {
      target = "client options";
      original = client_original(k, aplan);
    }
    targets.push_back(target);
    originals.push_back(original);
  }
  std::vector<size_t> counts;
  for (const auto& a : s.axes) counts.push_back(a.values.size() + 1);
  const std::vector<std::vector<size_t>> combos = combinations(counts, s.grid);
  std::vector<std::string> labels;
  for (const auto& c : combos) labels.push_back(label_of(s, c, originals));
  std::string knob_name = joined_names(s), endpoint, target;
  // Knobs on one target (two Samba parameters) name it once.
  const bool one_target = std::all_of(targets.begin(), targets.end(),
                                      [&](const std::string& x) { return x == targets.front(); });
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const std::string ep = s.axes[i].knob->endpoint;
    if (endpoint.find(ep) == std::string::npos) endpoint += (endpoint.empty() ? "" : "+") + ep;
    if (one_target && i > 0) continue;
    target += (target.empty() ? "" : "; ") +
              (grid && !one_target ? s.axes[i].knob->name + ": " : "") + targets[i];
  }
  // After every knob resolved on its host: a refused knob leaves no session.
  SessionTable sessions(store.path());
  const int64_t session = sessions.begin(
      s, knob_name, endpoint, std::vector<std::string>(labels.begin() + 1, labels.end()));
  note(fmt::format("tune session {} stored in {}", session, store.path()));

  std::map<std::string, std::vector<std::vector<double>>> by_layer;
  std::vector<int64_t> run_ids;
  // What each host axis has applied now ("" = nothing, its original).
  std::vector<std::string> applied(s.axes.size());
  bool any_applied = false;
  auto revert = [&]() -> std::string {
    if (!any_applied) return {};
    std::string errors;
    for (const auto& [end, agent] : host_agents(s)) {
      const auto r = ask_tune<msg::TuneRevertResult>(agent, "tune_revert", {}, 120);
      for (const auto& e : r.reverted) {
        if (!e.error.empty()) errors += end + ": " + e.error + "; ";
      }
    }
    any_applied = false;
    std::fill(applied.begin(), applied.end(), std::string());
    return errors;
  };
  std::string status = kComplete, error;
  try {
    for (const Slot& slot : schedule(combos.size(), s.rounds)) {
      if (cancel.cancelled()) throw Error(ErrorKind::kCancelled, "interrupted");
      const std::vector<size_t>& pick = combos[slot.value];
      // Per host axis what this slot needs applied: its value, its original
      // for a knob with companions (the sweep runs under them), else nothing.
      std::vector<std::string> want(s.axes.size());
      bool must_revert = false;
      for (size_t i = 0; i < s.axes.size(); ++i) {
        const Knob& k = *s.axes[i].knob;
        if (!on_host(k)) continue;
        want[i] = pick[i] > 0 ? s.axes[i].values[pick[i] - 1]
                              : (k.with.empty() ? std::string() : originals[i]);
        if (!applied[i].empty() && want[i].empty()) must_revert = true;
      }
      if (must_revert) {
        const std::string errs = revert();
        if (!errs.empty()) throw Error(ErrorKind::kIo, "reverting to the original: " + errs);
      }
      std::vector<remote::AgentLink*> watched;
      for (size_t i = 0; i < s.axes.size(); ++i) {
        const Knob& k = *s.axes[i].knob;
        if (want[i].empty() || want[i] == applied[i]) continue;
        any_applied = true;  // a partial apply is journaled too: revert it either way
        for (const auto& [end, agent] : agents_of(s, k)) {
          const auto r = ask_tune<msg::TunePlanResult>(
              agent, "tune_apply", msg::to_json(tune_request(s, end, k, want[i])), 120);
          if (r.watchdog_s > 0) watched.push_back(agent);
        }
        applied[i] = want[i];
      }
      // Every end changed: confirm each watched host still answers.
      for (remote::AgentLink* agent : watched) {
        if (!ask_tune<msg::TuneConfirmResult>(agent, "tune_confirm", {}, s.confirm_s).confirmed) {
          throw Error(ErrorKind::kIo,
                      fmt::format("{} = {} cut {} off for more than {} s; its agent "
                                  "reverted by itself",
                                  knob_name, labels[slot.value], agent->name(), s.confirm_s),
                      "leave that value out, or check the path carries it (MTU: every hop)");
        }
      }
      const bool orig = slot.value == 0;
      const std::string& label = labels[slot.value];
      note(fmt::format("round {}/{}: {}{}{}", slot.round, s.rounds, grid ? "" : knob_name + " = ",
                       label, orig ? " (original)" : ""));
      RunRecord run;
      run.label = fmt::format("tune {} {}{}{} r{}", session, grid ? "" : knob_name + "=", label,
                              orig ? " (orig)" : "", slot.round);
      run.server = s.server_name;
      run.client = s.client_name;
      const pipeline::Plan p = slot_plan(s, aplan, pick);
      run.plan_json = pipeline::plan_to_json(p);
      run.version = kVersion;
      const int64_t run_id = store.begin_run(run);
      run_ids.push_back(run_id);
      sessions.link(session, run_id, slot.round, label, orig);
      Collector collector(store, run_id, knobs, slot.value, by_layer, combos.size());
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
    sessions.end(session, status, labels.front(), target, "", error);
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
    by_value.resize(combos.size());
    layers.push_back({name, by_value});
  }
  TuneResult r = analyze(knob_name, labels, layers, s.rounds);
  r.endpoint = endpoint;
  r.target = target;
  r.original = labels.front();
  r.run_ids = run_ids;
  if (grid) {
    r.grid = s.grid == Grid::kCross ? "cross" : "one-at-a-time";
    for (const auto& a : s.axes) r.knobs.push_back(a.knob->name);
    for (const auto& c : combos) {
      std::vector<std::string> set;
      for (size_t i = 0; i < c.size(); ++i) {
        set.push_back(c[i] == 0 ? originals[i] : s.axes[i].values[c[i] - 1]);
      }
      r.settings.push_back(set);
    }
  }
  sessions.end(session, status, labels.front(), target, result_json(r), error);
  if (samples_out) *samples_out = std::move(layers);
  return r;
}

TuneResult load_session(Store& store, const std::string& which,
                        std::vector<LayerSamples>* samples_out) {
  SessionTable sessions(store.path());
  auto row = which == "latest" ? sessions.rows(
                                     "SELECT id, knob, endpoint, original, target, values_json, "
                                     "rounds, status, result_json FROM tune_sessions ORDER BY id "
                                     "DESC LIMIT 1",
                                     {})
                               : sessions.rows(
                                     "SELECT id, knob, endpoint, original, target, values_json, "
                                     "rounds, status, result_json FROM tune_sessions WHERE id = ?",
                                     {which});
  if (row.empty()) {
    throw Error(ErrorKind::kUsage,
                which == "latest" ? fmt::format("no tune session in {}", store.path())
                                  : fmt::format("no tune session {} in {}", which, store.path()),
                "sessions are numbered as `tune` prints them (\"tune session N stored in ...\")");
  }
  const auto& r0 = row.front();
  // A grid's knobs are stored joined with " x ".
  std::vector<const Knob*> knobs;
  for (size_t start = 0;;) {
    const size_t x = r0[1].find(" x ", start);
    knobs.push_back(&find_knob(r0[1].substr(start, x - start)));
    if (x == std::string::npos) break;
    start = x + 3;
  }
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
        if (!smp.error.empty() || !affects_any(knobs, stage.layer, stage.where, smp.op)) continue;
        auto& slot = by_layer[layer_key(stage.layer, stage.where, smp)];
        slot.resize(values.size());
        slot[index].push_back(smp.rate());
      }
    }
  }
  std::vector<LayerSamples> layers;
  for (auto& [name, by_value] : by_layer) layers.push_back({name, by_value});
  TuneResult r = analyze(r0[1], values, layers, std::stoi(r0[6]));
  if (knobs.size() > 1 && !r0[8].empty()) {
    // The grid's axes as the session stored them (result_json above wrote
    // them; what is missing or mistyped in an older row is left out).
    const json::value stored = msg::parse_stored(r0[8]);
    auto texts = [](const json::value* v) {
      std::vector<std::string> out;
      if (v && v->is_array()) {
        for (const auto& e : v->as_array())
          if (e.is_string()) out.emplace_back(e.as_string());
      }
      return out;
    };
    if (const json::object* o = stored.if_object()) {
      if (const auto* g = o->if_contains("grid"); g && g->is_string()) r.grid = g->as_string();
      r.knobs = texts(o->if_contains("knobs"));
      if (const auto* cs = o->if_contains("combinations"); cs && cs->is_array()) {
        for (const auto& c : cs->as_array()) {
          r.settings.push_back(
              texts(c.is_object() ? c.as_object().if_contains("settings") : nullptr));
        }
      }
    }
  }
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
