// A stored run, typed: what the store's rows hold (core/model.h's records,
// whose facts, details, CPU records, plan and parameters are JSON text)
// decoded once, through the messages' own codecs, into the structs analysis,
// report, export, compare and tune read. JSON stays at the SQLite boundary
// (Store::load) and on the wire; a reader of a stored::Run parses nothing.
// Light header: no Boost.JSON (stored_run_json.h hands the plan and stage
// parameters to .cc files that print them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/cpu_message.h"
#include "core/facts_message.h"
#include "core/messages.h"
#include "core/model.h"

namespace boost::json {
class value;
}  // namespace boost::json

namespace cp::stored {

// What a stage measured: a disk, TCP, a protocol's files, the protocol's
// transfer-size scan, or small files (on an end's disk or over a share:
// its samples' ops are "files-create" .. "files-delete").
enum class StageKind { kDisk, kTcp, kProtocol, kSizeScan, kFiles };
// Where it measured: a disk stage's end, a TCP stage's direction, a protocol
// stage's share medium; kOther: a place this build does not know (its text
// stays in Stage::where).
enum class Place { kServer, kClient, kServerToClient, kClientToServer, kRam, kDisk, kOther };

// "disk" | "tcp" | "protocol" | "size_scan" | "files".
const char* kind_name(StageKind k);
// "server" | "client" | "server->client" | "client->server" | "ram" | "disk" | "other".
const char* place_name(Place p);

// A JSON document decoded once at load (a plan, a stage's parameters); null
// when the column was empty or damaged. Only stored_run_json.h reads it.
class JsonDoc {
 public:
  JsonDoc();
  explicit JsonDoc(std::shared_ptr<const boost::json::value> v);
  const boost::json::value& value() const { return *v_; }

 private:
  std::shared_ptr<const boost::json::value> v_;
};

// A sample's details, one struct per stage kind (core/messages.h); monostate
// when none were stored (a failed sample). `stalled`/`silent_seconds`: the
// runner flagged the sample as timing a silent agent (pipeline flag_stall).
struct Details {
  std::variant<std::monostate, msg::DiskDetails, msg::TcpDetails, msg::TransferDetails,
               msg::SizeScanDetails, msg::FilesDetails>
      kind;
  bool stalled = false;
  double silent_seconds = 0;  // s
  template <class T>
  const T* as() const {
    return std::get_if<T>(&kind);
  }
  bool empty() const { return std::holds_alternative<std::monostate>(kind) && !stalled; }
};

// One end's CPU during a sample (core/cpu_message.h), in stored order.
struct EndCpu {
  std::string role;  // "server" | "client"
  msg::CpuSummary cpu;
};

// A stored sample decoded: its measured fields (SampleHead) and its details
// and CPU, typed.
struct Sample : SampleHead {
  Details details;
  // Each end's CPU; nullopt when none was stored.
  std::optional<std::vector<EndCpu>> cpu;

  // The CPU of `role`, or nullptr.
  const msg::CpuSummary* cpu_of(std::string_view role) const;
};

// A stored stage decoded: its plain columns (StageHead; `where` the place's
// text as stored: "server", "server->client", "ram", ...), its kind and place
// typed, its parameters and samples.
struct Stage : StageHead {
  StageKind kind = StageKind::kDisk;
  Place place = Place::kOther;
  // As stored: "disk" | "tcp" | the protocol driver's name ("smb", "nfs", ...).
  std::string driver;
  JsonDoc params;
  std::vector<Sample> samples;
};

struct Host {
  std::string role;     // "server" | "client"
  std::string address;  // what the user named: ssh alias or "local"
  // Its facts; nullopt when none were stored (or not an object).
  std::optional<msg::Facts> facts;
};

struct Run : RunHead {
  JsonDoc plan;  // the effective plan
  // The plan's [link] nominal speed, bit/s (0: not set).
  double planned_link_bits = 0;
  std::vector<Host> hosts;
  std::vector<Stage> stages;

  // The host of `role`, or nullptr.
  const Host* host(std::string_view role) const;
};

// The stored records decoded once, leniently (a damaged or missing column
// reads as its default: older runs stay readable).
Run decode(const RunRecord& record);

// A copy with every text a host or peer may have chosen (labels, names,
// facts, details, process names) sanitize_field'ed (core/text.h), for the
// terminal. `changed` (when given) says whether any text needed it: when not,
// the copy equals `run`, and whatever was derived from `run` holds for it.
Run sanitized(const Run& run, bool* changed = nullptr);

}  // namespace cp::stored
