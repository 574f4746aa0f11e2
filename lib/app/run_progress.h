// diagnose's live progress and its recorder: every record stored as it
// arrives, the progress line with the stage among the plan's and an ETA.
// Included by app.cc only.
#pragma once

#include <unistd.h>

#include <boost/json.hpp>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/facts_message.h"
#include "core/facts_message_json.h"
#include "core/model.h"
#include "core/text.h"
#include "core/units.h"
#include "pipeline/eta.h"
#include "pipeline/runner.h"
#include "store/store.h"

namespace cp::app {

// Writes live progress to stderr: one rewritten line on a TTY, plain lines
// (one per finished sample) otherwise.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet) : tty_(isatty(2) == 1), quiet_(quiet) {}
  // The live line: the stage among the plan's (`stage 3/7`), the sample, its
  // rate, and when the run likely ends; without a terminal, a line per sample.
  void update(const pipeline::Progress& p, const pipeline::RunEta& eta) {
    if (quiet_) return;
    std::lock_guard<std::mutex> lock(mu_);
    const double per_s =
        p.seconds > 0 ? double(p.ops >= 0 ? uint64_t(p.ops) : p.bytes) / p.seconds : 0;
    const std::string rate_text =
        p.ops >= 0 ? fmt::format("{:.0f} ops/s", per_s) : format_mbps(per_s);
    const std::string left = pipeline::format_eta(eta.remaining_s(p));
    // (The sample's label names the stage: "smb ram read 100 MB".)
    const std::string where = fmt::format("stage {}/{}", eta.stage_no(), eta.stage_count());
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s  %s %d/%d  %s  %s", where.c_str(),
                   sanitize_field(p.stage).c_str(), p.index, p.count, rate_text.c_str(),
                   left.empty() ? "" : ("ETA " + left).c_str());
      if (p.done && p.index == p.count) std::fputc('\n', stderr);
      std::fflush(stderr);
    } else if (p.done) {
      std::fprintf(stderr, "%s %s %d/%d: %s%s\n", where.c_str(), sanitize_field(p.stage).c_str(),
                   p.index, p.count, rate_text.c_str(),
                   left.empty() ? "" : (" (ETA " + left + ")").c_str());
    }
  }
  // An agent said nothing for `silent` s during a request (no heartbeat).
  void waiting(const std::string& name, double silent, double limit) {
    if (quiet_) return;
    const std::string who = sanitize_field(name);
    std::lock_guard<std::mutex> lock(mu_);
    if (tty_) {
      std::fprintf(stderr, "\r\033[Kwaiting on %s: silent for %.0f s (gives up at %.0f s)",
                   who.c_str(), silent, limit);
      std::fflush(stderr);
    } else if (silent - last_wait_print_[who] >= 5 || silent < last_wait_print_[who]) {
      last_wait_print_[who] = silent;
      std::fprintf(stderr, "waiting on %s: silent for %.0f s (gives up at %.0f s)\n", who.c_str(),
                   silent, limit);
    }
  }
  void note(const std::string& line) {
    if (quiet_) return;
    std::lock_guard<std::mutex> lock(mu_);
    // Notes carry what agents and servers said: escaped (core/text.h).
    std::fprintf(stderr, "%s%s\n", tty_ ? "\r\033[K" : "", sanitize_text(line).c_str());
  }

 private:
  std::mutex mu_;
  bool tty_, quiet_;
  std::map<std::string, double> last_wait_print_;
};

// Stores every record as it arrives and shows progress.
class Recorder : public pipeline::RunObserver {
 public:
  Recorder(Store& store, int64_t run_id, ProgressPrinter& out, const pipeline::Plan& plan)
      : store_(store), run_(run_id), out_(out), eta_(plan) {}
  void on_host(const HostRecord& h, const msg::Facts& facts) override {
    hosts_.push_back({h, facts});
    store_.add_host(run_, h);
  }
  // Kept with the host's facts, so benchmarks and tests can read it back.
  void on_agent_stats(const std::string& role, uint64_t max_rss_kb) override {
    for (auto& [h, facts] : hosts_) {
      if (h.role != role) continue;
      facts.agent_max_rss_kb = max_rss_kb;
      h.facts_json = boost::json::serialize(msg::to_json(facts));
      store_.add_host(run_, h);
    }
  }
  int64_t on_stage_begin(const StageRecord& s) override {
    eta_.stage_begun();
    return store_.begin_stage(run_, s);
  }
  void on_sample(int64_t stage, const SampleRecord& s) override { store_.add_sample(stage, s); }
  void on_stage_end(int64_t stage, const std::string& status, const std::string& err) override {
    store_.end_stage(stage, status, err);
  }
  void on_progress(const pipeline::Progress& p) override {
    if (p.done) eta_.sample_done(p);
    out_.update(p, eta_);
  }
  void on_note(const std::string& line) override { out_.note(line); }

 private:
  Store& store_;
  int64_t run_;
  ProgressPrinter& out_;
  pipeline::RunEta eta_;
  std::vector<std::pair<HostRecord, msg::Facts>> hosts_;  // as stored, and typed
};

}  // namespace cp::app
