#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/units.h"
#include "store/store.h"
#include "tune/session.h"
#include "tune/sweep.h"

namespace cp::tune {

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

namespace {

// "latest" -> 0 (the newest), "12" -> 12; anything else names no session.
int64_t session_id(const std::string& which) {
  if (which == "latest") return 0;
  size_t used = 0;
  int64_t id = -1;
  try {
    id = std::stoll(which, &used);
  } catch (const std::exception&) {
  }
  return used == which.size() && id > 0 ? id : -1;
}

}  // namespace

TuneResult load_session(Store& store, const std::string& which,
                        std::vector<LayerSamples>* samples_out) {
  const int64_t id = session_id(which);
  const std::optional<TuneSessionRecord> found = id < 0 ? std::nullopt : store.tune_session(id);
  if (!found) {
    throw Error(
        ErrorKind::kUsage,
        which == "latest" ? fmt::format("no tune session in {}", store.path())
                          : fmt::format("no tune session {} in {}", which, store.path()),
        which == "latest"
            ? "`chokepoint tune --knob ...` stores one"
            : "sessions are numbered as `tune` prints them (\"tune session N stored in ...\")");
  }
  const TuneSessionRecord& session = *found;
  // A grid's knobs are stored joined with " x ".
  std::vector<const Knob*> knobs;
  for (size_t start = 0;;) {
    const size_t x = session.knob.find(" x ", start);
    knobs.push_back(&find_knob(session.knob.substr(start, x - start)));
    if (x == std::string::npos) break;
    start = x + 3;
  }
  std::vector<std::string> values = {session.original};
  values.insert(values.end(), session.values.begin(), session.values.end());
  std::map<std::string, std::vector<std::vector<double>>> by_layer;
  std::vector<int64_t> run_ids;
  for (const TuneRunRecord& tr : store.tune_runs(session.id)) {
    size_t index = 0;
    if (!tr.is_original) {
      auto it = std::find(values.begin() + 1, values.end(), tr.value);
      if (it == values.end()) continue;
      index = static_cast<size_t>(it - values.begin());
    }
    const int64_t run_id = tr.run_id;
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
  TuneResult r = analyze_sweep(session.knob, values, layers, session.rounds);
  if (knobs.size() > 1 && !session.result_json.empty()) {
    // The grid's axes as the session stored them.
    read_grid(session.result_json, r);
  }
  r.endpoint = session.endpoint;
  r.target = session.target;
  r.original = session.original;
  r.run_ids = run_ids;
  if (session.status != kComplete) {
    r.reason = fmt::format("the session ended {}: {}", session.status, r.reason);
  }
  if (samples_out) *samples_out = std::move(layers);
  return r;
}

}  // namespace cp::tune
