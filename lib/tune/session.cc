#include <boost/json.hpp>

#include <algorithm>
#include <map>

#include "core/messages_json.h"
#include "core/units.h"
#include "store/store.h"
#include "tune/session.h"
#include "tune/sweep.h"

namespace cp::tune {
namespace json = boost::json;

namespace detail {

std::string layer_key(const std::string& layer, const std::string& where, const std::string& op,
                      uint64_t size) {
  std::string key = fmt::format("{} {} {}", layer, where, op);
  if (size > 0) key += " " + format_size(size);
  return key;
}

bool affects_any(const std::vector<const Knob*>& knobs, const std::string& layer,
                 const std::string& where, const std::string& op) {
  for (const Knob* k : knobs) {
    if (affects_sample(*k, layer, where, op)) return true;
  }
  return false;
}

}  // namespace detail

TuneResult load_session(Store& store, const std::string& which,
                        std::vector<LayerSamples>* samples_out) {
  detail::SessionTable sessions(store.path(), /*read_only=*/true);
  if (!sessions.has_tables()) {
    throw Error(ErrorKind::kUsage, fmt::format("no tune session in {}", store.path()),
                "`chokepoint tune --knob ...` stores one");
  }
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
    const stored::Run run = store.load(run_id);
    for (const auto& stage : run.stages) {
      for (const auto& smp : stage.samples) {
        if (!smp.error.empty() || !detail::affects_any(knobs, stage.driver, stage.where, smp.op))
          continue;
        auto& slot = by_layer[detail::layer_key(stage.driver, stage.where, smp.op, smp.size)];
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
