// A tuning sweep on the orchestrator's side: the original value first, then
// each value, interleaved over rounds (A B C A B C, so drift does not pose as
// an effect), each round running only the stages the knob affects; then the
// statistics (per value and layer: median, spread, change against the
// original, Mann-Whitney p Holm-corrected over the values) and a
// recommendation. Runs are stored as ordinary runs (history and compare see
// them) linked to a tune session.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "pipeline/plan.h"
#include "tune_agent/knobs.h"

namespace cp {
class Store;
}
namespace cp::remote {
class AgentLink;
}

namespace cp::tune {

// One slot of the schedule: round r (1-based), value index v (0 = original).
struct Slot {
  int round = 0;
  size_t value = 0;
};
// Interleaved: for each round, the original then every value in order
// (a grid: every combination in order).
std::vector<Slot> schedule(size_t values_with_original, int rounds);

// Several knobs at once: each slot of the schedule is one combination of
// their values. kCross tries every combination (the interactions show:
// smb2 max read may only pay with aio on); kOneAtATime moves one knob at a
// time with the others at their original (1 + the sum of the value counts
// instead of their product), for many knobs.
enum class Grid { kCross, kOneAtATime };

// Per axis the value indices (0 = original) of every combination, the
// all-original one first; `counts` are the axes' value counts with the original.
std::vector<std::vector<size_t>> combinations(const std::vector<size_t>& counts, Grid grid);

// The plan that runs only the stages `knob` affects (shares of other
// protocols and media left out); throws Error(kConfig) when the plan has no
// stage the knob affects. Several knobs: each must have a stage; the plan
// runs the stages of any of them.
pipeline::Plan affected_plan(const Knob& knob, const pipeline::Plan& plan);
pipeline::Plan affected_plan(const std::vector<const Knob*>& knobs, const pipeline::Plan& plan);

// Samples of one layer ("smb disk read 100 MB") per value index.
struct LayerSamples {
  std::string layer;
  std::vector<std::vector<double>> by_value;  // bytes/s; index 0 = original
};

struct ValueStats {
  std::string value;
  size_t n = 0;
  double median = 0, p25 = 0, p75 = 0, min = 0, max = 0;  // bytes/s
  double change = 0;                   // median / original's median - 1; 0 for the original
  double p = 1;                        // Mann-Whitney against the original, two-sided
  double p_holm = 1;                   // Holm over the non-original values of this layer
  bool too_few = false;                // fewer than 3 samples on a side: no p
  bool better = false, worse = false;  // p_holm < alpha, by direction
  // Not significant, yet the median lies outside the original's p25..p75.
  bool beyond_spread = false;
};

// The best value moved beyond the original's spread but missed
// significance: it may well be better, and more rounds would tell.
struct Unsettled {
  std::string value, layer;
  double change = 0;  // median / original's median - 1
  double p_holm = 1;
  // Rounds (of this sweep's samples per round) that would likely make the
  // change significant, as diagnose's suggested_count does for samples.
  int suggested_rounds = 0;
};

struct LayerResult {
  std::string layer;
  std::vector<ValueStats> values;  // index 0 = original
};

struct TuneResult {
  // One knob: its name, endpoint, target and original value, and `values`
  // are its values. A grid: the names joined with " x ", and every value is a
  // combination's label "a=1 b=2" (originals by their value).
  std::string knob, endpoint, target, original;
  std::vector<std::string> values;  // index 0 = original
  std::vector<std::string> knobs;   // a grid's knobs, in axis order
  // Per value (combination): per knob of `knobs` its value; empty for one knob.
  std::vector<std::vector<std::string>> settings;
  std::string grid;  // "" for one knob, else "cross" | "one-at-a-time"
  int rounds = 0;
  std::vector<LayerResult> layers;
  // The recommended value: the one significantly better on some affected
  // layer and significantly worse on none, with the largest gain; empty:
  // keep what you have.
  std::string recommended;
  std::string reason;  // one sentence, with the numbers
  // No recommendation, and the best value's median moved beyond the
  // original's spread without significance.
  std::optional<Unsettled> unsettled;
  std::vector<int64_t> run_ids;
};

inline constexpr double kAlpha = 0.05;

// Rounds that would likely make `v`'s change against `base` significant at
// the Holm family's strictest level (kAlpha / comparisons, two-sided) with
// 80 % power: the spread from both interquartile ranges (sd ~ IQR / 1.349),
// Mann-Whitney at 95 % of the t test's efficiency, each round adding as
// many samples per value as this sweep's did; at least rounds + 1, at most 100.
int suggested_rounds(const ValueStats& base, const ValueStats& v, size_t comparisons, int rounds);

// The statistics and the recommendation from a sweep's samples (not
// analysis::analyze, which judges one run).
TuneResult analyze_sweep(const std::string& knob, const std::vector<std::string>& values,
                         const std::vector<LayerSamples>& layers, int rounds);

std::string result_text(const TuneResult& r);
std::string result_json(const TuneResult& r);
// The grid's axes (grid, knobs, settings) from a stored result_json text, the
// decode half of result_json; what is missing or mistyped in an older row is
// left out.
void read_grid(std::string_view result_json, TuneResult& r);
// A self-contained HTML page: per layer, value on the x axis, every sample a dot.
std::string result_html(const TuneResult& r, const std::vector<LayerSamples>& layers);

struct Axis {
  const Knob* knob = nullptr;
  std::vector<std::string> values;  // normalised, without the original
};

struct SweepSetup {
  std::vector<Axis> axes;  // one knob, or a grid of several
  Grid grid = Grid::kCross;
  int rounds = 3;
  pipeline::Plan plan;  // the full plan; affected_plan() picks the stages
  remote::AgentLink* server = nullptr;
  remote::AgentLink* client = nullptr;
  std::string server_name, client_name, data_address;
  std::map<std::string, std::string> passwords;
  // A knob on the interface SSH uses (MTU) is refused unless the user has a
  // console; then each agent reverts by itself unless confirmed in time.
  bool console = false;
  uint64_t confirm_s = 20;
  std::string afp_conf, afp_restart;  // netatalk knobs (Where)
};

// The exact commands of a sweep, changing nothing: asks the knob's agent.
std::string dry_run_text(const SweepSetup& s);

// A value equal to its axis' original (`originals`, one per axis) is the
// original's slot, not one of its own: it is dropped with a note, so the same
// setting never runs twice as two values. Throws Error(kUsage) when an axis
// has no other value left.
void drop_originals(SweepSetup& s, const std::vector<std::string>& originals,
                    const std::function<void(const std::string&)>& note);

// Runs the sweep, stores its runs and the session, reverts (also on error
// or cancellation), and returns the result; `samples` receives the raw
// samples for the HTML chart. `note` receives progress lines.
TuneResult run_sweep(const SweepSetup& s, Store& store, const CancelToken& cancel,
                     const std::function<void(const std::string&)>& note,
                     std::vector<LayerSamples>* samples);

// A stored session ("latest" or its id), recomputed from its runs' samples
// in the database: the same result `tune` printed, and the samples for
// the HTML chart. Throws Error(kUsage) when there is no such session.
TuneResult load_session(Store& store, const std::string& which, std::vector<LayerSamples>* samples);

}  // namespace cp::tune
