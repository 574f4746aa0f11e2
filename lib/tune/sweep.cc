#include "tune/sweep.h"

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
#include "link/agent_link.h"
#include "pipeline/runner.h"
#include "store/store.h"
#include "tune/session.h"

namespace cp::tune {
namespace json = boost::json;
namespace {

using detail::affects_any;
using detail::layer_key;

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
  void on_host(const stored::Host& h) override { store_.add_host(run_, h); }
  int64_t on_stage_begin(const StageRecord& s) override {
    const int64_t id = store_.begin_stage(run_, s);
    stages_[id] = {s.layer, s.where};
    return id;
  }
  void on_sample(int64_t stage, const stored::Sample& s) override {
    store_.add_sample(stage, s);
    const auto& [layer, where] = stages_[stage];
    if (!s.error.empty() || !affects_any(knobs_, layer, where, s.op)) return;
    auto& slot = by_layer_[layer_key(layer, where, s.op, s.size)];
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
  p.size_scan = false;
  // The small-file stage: no knob's table entry declares it yet, and its
  // figures are operations/s, not the bytes/s the sweep compares.
  p.files_enabled = false;
  // One TCP stream: the samples of every value alike (streams = auto's count
  // depends on the CPU, and the sweep pools a stage's samples).
  p.tcp_streams = 1;
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

namespace {

// Per axis: its target and original (both ends at one value: that value;
// else "server/client").
void resolve_axes(const SweepSetup& s, const pipeline::Plan& aplan,
                  std::vector<std::string>* targets, std::vector<std::string>* originals) {
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
    targets->push_back(target);
    originals->push_back(original);
  }
}

}  // namespace

void drop_originals(SweepSetup& s, const std::vector<std::string>& originals,
                    const std::function<void(const std::string&)>& note) {
  for (size_t i = 0; i < s.axes.size(); ++i) {
    auto& vals = s.axes[i].values;
    const auto same = std::find(vals.begin(), vals.end(), originals[i]);
    if (same == vals.end()) continue;
    note(fmt::format("{} = {} is its original: measured once, as the original",
                     s.axes[i].knob->name, originals[i]));
    vals.erase(same);
    if (vals.empty()) {
      throw Error(ErrorKind::kUsage,
                  fmt::format("every value of {} is its original {}: nothing to compare",
                              s.axes[i].knob->name, originals[i]),
                  "give at least one value other than the one the host has now");
    }
  }
}

namespace {

// The session's endpoint ("server+client") and target (knobs on one target
// name it once).
std::pair<std::string, std::string> endpoint_and_target(const SweepSetup& s,
                                                        const std::vector<std::string>& targets) {
  std::string endpoint, target;
  const bool grid = s.axes.size() > 1;
  const bool one_target = std::all_of(targets.begin(), targets.end(),
                                      [&](const std::string& x) { return x == targets.front(); });
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const std::string ep = s.axes[i].knob->endpoint;
    if (endpoint.find(ep) == std::string::npos) endpoint += (endpoint.empty() ? "" : "+") + ep;
    if (one_target && i > 0) continue;
    target += (target.empty() ? "" : "; ") +
              (grid && !one_target ? s.axes[i].knob->name + ": " : "") + targets[i];
  }
  return {endpoint, target};
}

// What the host axes have applied, and how to put them back.
struct Applied {
  const SweepSetup& s;
  std::vector<std::string> value;  // per axis: "" = nothing, its original
  bool any = false;
  // Reverts every host; the errors of what could not be restored ("" none).
  std::string revert() {
    if (!any) return {};
    std::string errors;
    for (const auto& [end, agent] : host_agents(s)) {
      const auto r = ask_tune<msg::TuneRevertResult>(agent, "tune_revert", {}, 120);
      for (const auto& e : r.reverted) {
        if (!e.error.empty()) errors += end + ": " + e.error + "; ";
      }
    }
    any = false;
    std::fill(value.begin(), value.end(), std::string());
    return errors;
  }
};

// Puts the host knobs at the combination `pick` (knobs with companions at
// their original rather than reverted), confirming hosts whose SSH it may cut.
void apply_combination(const SweepSetup& s, const std::vector<size_t>& pick,
                       const std::vector<std::string>& originals, const std::string& knob_name,
                       const std::string& label, Applied& applied) {
  std::vector<std::string> want(s.axes.size());
  bool must_revert = false;
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const Knob& k = *s.axes[i].knob;
    if (!on_host(k)) continue;
    want[i] = pick[i] > 0 ? s.axes[i].values[pick[i] - 1]
                          : (k.with.empty() ? std::string() : originals[i]);
    if (!applied.value[i].empty() && want[i].empty()) must_revert = true;
  }
  if (must_revert) {
    const std::string errs = applied.revert();
    if (!errs.empty()) throw Error(ErrorKind::kIo, "reverting to the original: " + errs);
  }
  std::vector<remote::AgentLink*> watched;
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const Knob& k = *s.axes[i].knob;
    if (want[i].empty() || want[i] == applied.value[i]) continue;
    applied.any = true;  // a partial apply is journaled too: revert it either way
    for (const auto& [end, agent] : agents_of(s, k)) {
      const auto r = ask_tune<msg::TunePlanResult>(
          agent, "tune_apply", msg::to_json(tune_request(s, end, k, want[i])), 120);
      if (r.watchdog_s > 0) watched.push_back(agent);
    }
    applied.value[i] = want[i];
  }
  // Every end changed: confirm each watched host still answers.
  for (remote::AgentLink* agent : watched) {
    if (!ask_tune<msg::TuneConfirmResult>(agent, "tune_confirm", {}, s.confirm_s).confirmed) {
      throw Error(ErrorKind::kIo,
                  fmt::format("{} = {} cut {} off for more than {} s; its agent "
                              "reverted by itself",
                              knob_name, label, agent->name(), s.confirm_s),
                  "leave that value out, or check the path carries it (MTU: every hop)");
    }
  }
}

struct SlotRun {
  const SweepSetup& s;
  Store& store;
  int64_t session;
  const pipeline::Plan& aplan;
  const std::vector<const Knob*>& knobs;
  const std::string& knob_name;
  size_t ncombos;
  std::map<std::string, std::vector<std::vector<double>>>& by_layer;
  std::vector<int64_t>& run_ids;
};

// One slot's run, stored as an ordinary run linked to the session.
void run_slot(const SlotRun& c, const Slot& slot, const std::vector<size_t>& pick,
              const std::string& label, const CancelToken& cancel,
              const std::function<void(const std::string&)>& note) {
  const SweepSetup& s = c.s;
  const bool grid = s.axes.size() > 1;
  const bool orig = slot.value == 0;
  note(fmt::format("round {}/{}: {}{}{}", slot.round, s.rounds, grid ? "" : c.knob_name + " = ",
                   label, orig ? " (original)" : ""));
  RunRecord run;
  run.label = fmt::format("tune {} {}{}{} r{}", c.session, grid ? "" : c.knob_name + "=", label,
                          orig ? " (orig)" : "", slot.round);
  run.server = s.server_name;
  run.client = s.client_name;
  const pipeline::Plan p = slot_plan(s, c.aplan, pick);
  run.plan_json = pipeline::plan_to_json(p);
  run.version = kVersion;
  const int64_t run_id = c.store.begin_run(run);
  c.run_ids.push_back(run_id);
  c.store.add_tune_run({c.session, run_id, slot.round, label, orig});
  Collector collector(c.store, run_id, c.knobs, slot.value, c.by_layer, c.ncombos);
  try {
    pipeline::run_stages(
        p, {*s.server, *s.client, s.server_name, s.client_name, s.data_address, s.passwords, {}},
        collector, cancel);
    c.store.end_run(run_id, kComplete);
  } catch (const Error& e) {
    c.store.end_run(run_id, e.kind() == ErrorKind::kCancelled ? kInterrupted : kFailed,
                    describe(e));
    throw;
  }
}

// A grid's axes and, per combination, each knob's value.
void set_grid(const SweepSetup& s, const std::vector<std::vector<size_t>>& combos,
              const std::vector<std::string>& originals, TuneResult& r) {
  if (s.axes.size() < 2) return;
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

}  // namespace

TuneResult run_sweep(const SweepSetup& setup, Store& store, const CancelToken& cancel,
                     const std::function<void(const std::string&)>& note,
                     std::vector<LayerSamples>* samples_out) {
  CP_CHECK(!setup.axes.empty());
  SweepSetup s = setup;
  const std::vector<const Knob*> knobs = knobs_of(s);
  const pipeline::Plan aplan = affected_plan(knobs, s.plan);
  std::vector<std::string> targets, originals;
  resolve_axes(s, aplan, &targets, &originals);
  drop_originals(s, originals, note);
  std::vector<size_t> counts;
  for (const auto& a : s.axes) counts.push_back(a.values.size() + 1);
  const std::vector<std::vector<size_t>> combos = combinations(counts, s.grid);
  std::vector<std::string> labels;
  for (const auto& c : combos) labels.push_back(label_of(s, c, originals));
  const std::string knob_name = joined_names(s);
  const auto [endpoint, target] = endpoint_and_target(s, targets);
  // After every knob resolved on its host: a refused knob leaves no session.
  TuneSessionRecord stored;
  stored.knob = knob_name;
  stored.endpoint = endpoint;
  stored.server = s.server_name;
  stored.client = s.client_name;
  stored.original = labels.front();
  stored.target = target;
  stored.values.assign(labels.begin() + 1, labels.end());
  stored.rounds = s.rounds;
  const int64_t session = stored.id = store.begin_tune_session(stored);
  note(fmt::format("tune session {} stored in {}", session, store.path()));

  std::map<std::string, std::vector<std::vector<double>>> by_layer;
  std::vector<int64_t> run_ids;
  Applied applied{s, std::vector<std::string>(s.axes.size())};
  const SlotRun slot_run{s,         store,         session,  aplan,  knobs,
                         knob_name, combos.size(), by_layer, run_ids};
  std::string status = kComplete, error;
  try {
    for (const Slot& slot : schedule(combos.size(), s.rounds)) {
      if (cancel.cancelled()) throw Error(ErrorKind::kCancelled, "interrupted");
      apply_combination(s, combos[slot.value], originals, knob_name, labels[slot.value], applied);
      run_slot(slot_run, slot, combos[slot.value], labels[slot.value], cancel, note);
    }
    const std::string errs = applied.revert();
    if (!errs.empty()) throw Error(ErrorKind::kIo, "reverting at the end: " + errs);
  } catch (const Error& e) {
    status = e.kind() == ErrorKind::kCancelled ? kInterrupted : kFailed;
    error = describe(e);
    std::string revert_error;
    try {
      revert_error = applied.revert();
    } catch (const Error& e2) {
      revert_error = describe(e2);
    }
    if (!revert_error.empty()) error += fmt::format(" (and reverting failed: {})", revert_error);
    stored.status = status;
    stored.error = error;
    store.end_tune_session(stored);
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
  TuneResult r = analyze_sweep(knob_name, labels, layers, s.rounds);
  r.endpoint = endpoint;
  r.target = target;
  r.original = labels.front();
  r.run_ids = run_ids;
  set_grid(s, combos, originals, r);
  stored.status = status;
  stored.result_json = result_json(r);
  store.end_tune_session(stored);
  if (samples_out) *samples_out = std::move(layers);
  return r;
}

}  // namespace cp::tune
