// A run's rows as SQLite holds them: plain records whose probe-specific
// parts are JSON text (each message's codec wrote it), what Store::load_run
// reads back and stored::decode decodes. The pipeline hands the store a run
// and its stages as these records, but its hosts and samples typed
// (stored::Host, stored::Sample): the store encodes those as it writes them.
// Readers take the run decoded once (core/stored_run.h, Store::load).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cp {

// Run and stage status values.
inline constexpr const char* kRunning = "running";
inline constexpr const char* kComplete = "complete";
inline constexpr const char* kFailed = "failed";
// A run with failed stages or samples, but still a verdict from the rest.
inline constexpr const char* kPartial = "partial";
inline constexpr const char* kInterrupted = "interrupted";
inline constexpr const char* kSkipped = "skipped";

// A sample's measured fields: the columns of `samples` that the stored record
// and the decoded sample (stored::Sample) share.
struct SampleHead {
  int64_t id = 0;
  int64_t stage_id = 0;
  int seq = 0;  // 1-based within its stage
  // "read" | "write" (disk, protocol), "send" (tcp), "sweep-..." (size scan),
  // "files-create" ... (small files)
  std::string op;
  uint64_t size = 0;            // nominal size, bytes (files; size scan: request size); 0 for tcp
  uint64_t bytes = 0;           // bytes actually moved
  double seconds = 0;           // time they took
  double started_at = 0;        // wall clock, Unix seconds
  bool cache_possible = false;  // the page cache may have served part of it
  std::string error;            // non-empty: this sample failed, why

  // bytes/s; 0 for a failed or empty sample.
  double rate() const { return (error.empty() && seconds > 0) ? double(bytes) / seconds : 0; }
};

struct SampleRecord : SampleHead {
  std::string details_json;  // stored::Details' codec: {"file":..,"direct":true}, tcp_info..
  std::string cpu_json;      // {"server":{cpu summary},"client":{...}}; "" none
};

// A stage's plain columns: what the stored record and the decoded stage
// (stored::Stage) share.
struct StageHead {
  int64_t id = 0;
  int64_t run_id = 0;
  std::string where;   // disk: "server" | "client"; tcp: "server->client" | "client->server";
                       // protocol and size scan: the share's medium, "ram" | "disk"
  std::string status;  // running | complete | failed | interrupted | skipped
  std::string error;   // why it failed or was skipped
  double started_at = 0;
  double finished_at = 0;
};

struct StageRecord : StageHead {
  std::string layer;  // "disk" | "tcp" | the protocol driver's name ("smb", "nfs", "path", ...)
  std::string params_json;
  std::vector<SampleRecord> samples;  // filled when loaded
};

struct HostRecord {
  std::string role;        // "server" | "client"
  std::string address;     // what the user named: ssh alias or "local"
  std::string facts_json;  // sysinfo facts (see lib/probe/sysinfo.h)
};

// A run without its plan, hosts and stages: the columns of `runs` that the
// stored record and the decoded run (stored::Run) share.
struct RunHead {
  int64_t id = 0;
  std::string label;
  std::string status;  // running | complete | partial | failed | interrupted
  std::string error;
  double started_at = 0;  // Unix time, seconds
  double finished_at = 0;
  std::string server;  // as named on the command line
  std::string client;
  std::string version;  // chokepoint version that ran it
};

struct RunRecord : RunHead {
  std::string plan_json;  // the effective plan
  std::vector<HostRecord> hosts;
  std::vector<StageRecord> stages;
};

}  // namespace cp
