// Runs the stages of a plan against two connected agents, bottom layer
// first, and hands every record to an observer as soon as it exists (the
// store commits each sample then, so an interrupted run keeps them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/facts_message.h"
#include "core/model.h"
#include "pipeline/plan.h"

namespace cp::remote {
class AgentPort;  // link/agent_port.h: an AgentLink, or a test's script
}

namespace cp::pipeline {

// Live progress of the current sample, for the terminal.
struct Progress {
  std::string stage;  // "disk server write 100 MB"
  int index = 0;      // 1-based sample number within that series
  int count = 0;      // samples in the series
  uint64_t bytes = 0;
  double seconds = 0;
  bool done = false;  // the sample finished (bytes/seconds are final)
  // A small-file phase's operations (the line shows ops/s); -1: its figure is bytes/s.
  int64_t ops = -1;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // host.facts_json is `facts` encoded (core/facts_message_json.h).
  virtual void on_host(const HostRecord& host, const msg::Facts& facts) = 0;
  virtual int64_t on_stage_begin(const StageRecord& stage) = 0;  // returns the stage id
  virtual void on_sample(int64_t stage_id, const SampleRecord& sample) = 0;
  virtual void on_stage_end(int64_t stage_id, const std::string& status,
                            const std::string& error) = 0;
  // The agent's peak resident set at the end of the run, KiB.
  virtual void on_agent_stats(const std::string& role, uint64_t max_rss_kb) {}
  virtual void on_progress(const Progress& p) {}
  virtual void on_note(const std::string& line) {}
};

struct Agents {
  remote::AgentPort& server;
  remote::AgentPort& client;
  std::string server_name;  // as the user named them, for HostRecord.address
  std::string client_name;
  std::string data_address;  // server's address on the data path
  // Share name -> password, resolved by the caller (never stored or logged).
  std::map<std::string, std::string> passwords;
  // The client's own address on the data path; run_stages fills it in.
  std::string client_address;
  int64_t run_id = 0;  // recorded in the agents' run directories (their owner record)
  // The TCP stage's samples by direction ("client->server", "server->client"),
  // bytes/s: protocol stages pass the path's rate to drivers that size their
  // calls or connections to it (smb's path_rate). Filled in by the TCP stage.
  std::map<std::string, std::vector<double>> tcp_rates;
};

// Collects facts, then runs the disk and TCP stages, then one protocol stage
// per share (RAM shares: stage 3, disk shares: stage 4). A stage that fails is
// recorded as failed with its reason and the next stage runs; cancellation
// (the token) marks the current stage interrupted and throws Error(kCancelled).
void run_stages(const Plan& plan, Agents agents, RunObserver& observer, const CancelToken& cancel);

}  // namespace cp::pipeline
