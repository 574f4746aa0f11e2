#include "tune_agent/agent_requests.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/messages_json.h"
#include "tune_agent/apply.h"
#include "tune_agent/journal.h"

namespace cp::tune {
namespace json = boost::json;
namespace {

std::mutex g_mu;
std::unique_ptr<Journal> g_journal;  // created on first use
StartReport g_at_start;              // what revert_at_agent_start restored and refused
std::string g_at_start_error;        // why it could not look

// The revert watchdog of a change that may cut this host's SSH connection:
// unless tune_confirm arrives in time, everything journaled is reverted.
// Heap state never freed: a detached waiter may outlive static destruction.
struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t armed = 0;      // generation of the current arming; 0: none
  uint64_t confirmed = 0;  // the generation confirmed last
  bool fired = false;      // it reverted since the last arming
};
Watchdog& watchdog() {
  static Watchdog* w = new Watchdog;
  return *w;
}

Journal& journal() {
  if (!g_journal) g_journal = std::make_unique<Journal>(journal_path());
  return *g_journal;
}

std::vector<std::string> shown(const std::vector<Action>& actions) {
  std::vector<std::string> a;
  for (const auto& x : actions) a.push_back(x.display());
  return a;
}

std::vector<msg::RevertedKnob> reverted_of(const std::vector<Reverted>& rs) {
  std::vector<msg::RevertedKnob> a;
  for (const auto& r : rs) a.push_back({r.knob, r.target, r.original, r.error});
  return a;
}

std::vector<msg::RefusedJournal> refused_of(const std::vector<Refused>& rs) {
  std::vector<msg::RefusedJournal> a;
  for (const auto& r : rs) a.push_back({to_string(r.reason), r.knob, r.action, r.detail});
  return a;
}

}  // namespace

bool is_tune_request(const std::string& type) { return type.rfind("tune_", 0) == 0; }

json::object handle_tune_request(const std::string& type, const json::object& req) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (type == "tune_plan" || type == "tune_apply") {
    const auto q = msg::decode<msg::TuneRequest>(req, type);
    const Knob& knob = find_knob(q.knob);
    const std::string value = normalize_value(knob, q.value);
    Where where{q.disk_dir, q.samba_conf, q.data_address, q.console, q.afp_conf, q.afp_restart};
    Resolved r =
        type == "tune_plan" ? resolve(knob, value, where) : journal().apply(knob, value, where);
    msg::TunePlanResult out{
        r.target, r.original, shown(r.apply), shown(r.revert), journal().path(), r.cuts_ssh, 0};
    if (type == "tune_apply" && r.cuts_ssh) {
      // Seconds the orchestrator has to confirm it still reaches this host.
      const uint64_t seconds = std::max<uint64_t>(1, q.confirm_s);
      Watchdog& w = watchdog();
      uint64_t gen;
      {
        std::lock_guard<std::mutex> wl(w.mu);
        gen = ++w.armed;
        w.fired = false;
      }
      std::thread([gen, seconds] {
        Watchdog& w = watchdog();
        std::unique_lock<std::mutex> wl(w.mu);
        if (w.cv.wait_for(wl, std::chrono::seconds(seconds),
                          [&] { return w.confirmed >= gen || w.armed != gen; })) {
          return;
        }
        wl.unlock();
        std::lock_guard<std::mutex> lock(g_mu);
        {
          // A confirmation that won the race for g_mu still counts.
          std::lock_guard<std::mutex> check(w.mu);
          if (w.confirmed >= gen || w.armed != gen) return;
        }
        try {
          journal().revert_all();
        } catch (const std::exception&) {
          // Left journaled: the next agent start retries.
        }
        std::lock_guard<std::mutex> again(w.mu);
        w.fired = true;
      }).detach();
      out.watchdog_s = seconds;
    }
    if (type == "tune_apply") {
      // The journal's original is the one before the session's first change.
      for (const auto& e : journal().entries()) {
        if (e.knob == knob.name && e.target == r.target) out.original = e.original;
      }
    }
    return msg::to_json(out);
  }
  if (type == "tune_confirm") {
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> wl(w.mu);
    w.confirmed = w.armed;
    w.cv.notify_all();
    return msg::to_json(msg::TuneConfirmResult{!w.fired});
  }
  if (type == "tune_revert") {
    msg::TuneRevertResult out;
    out.reverted = reverted_of(journal().revert_all());
    out.reverted_at_start = reverted_of(g_at_start.reverted);
    out.refused = refused_of(g_at_start.refused);
    for (const auto& r : refused_of(journal().refused())) out.refused.push_back(r);
    out.at_start_error = g_at_start_error;
    out.journal = journal().path();
    g_at_start = {};
    g_at_start_error.clear();
    return msg::to_json(out);
  }
  throw Error(ErrorKind::kPeer, fmt::format("unknown message type '{}'", type),
              "the orchestrator and agent builds differ: redeploy the agent");
}

void revert_at_agent_start() noexcept {
  std::lock_guard<std::mutex> lock(g_mu);
  try {
    g_at_start = journal().revert_stale();
  } catch (const Error& e) {
    g_at_start_error = describe(e);
  } catch (const std::exception& e) {
    g_at_start_error = e.what();
  }
}

msg::TuneStartReport start_report() {
  std::lock_guard<std::mutex> lock(g_mu);
  msg::TuneStartReport r{reverted_of(g_at_start.reverted), refused_of(g_at_start.refused),
                         g_at_start_error, g_at_start.journal};
  if (r.empty()) r.journal.clear();
  return r;
}

void revert_at_agent_exit() noexcept {
  std::lock_guard<std::mutex> lock(g_mu);
  try {
    if (g_journal && g_journal->holds_lock()) g_journal->revert_all();
  } catch (const std::exception&) {
    // The journal stays; the next agent start or `tune --revert` retries.
  }
}

}  // namespace cp::tune
