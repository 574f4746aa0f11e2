// The tuning knobs as data: one table row per knob says where it lives, how
// its current value is read, how it is applied and reverted, what must
// reload, which stages it affects and what privilege it needs. Everything
// that touches a host is derived from a row (lib/tune_agent/apply.h); the
// orchestrator only picks rows and values. Plain structs: no Boost here.
#pragma once

#include <string>
#include <vector>

namespace cp::tune {

// How a knob is changed on its endpoint.
enum class Mechanism {
  kReadahead,     // blockdev --getra/--setra on the disk under a directory (sectors)
  kQueueAttr,     // /sys/block/DISK/queue/<param>: scheduler, max_sectors_kb
  kWriteCache,    // hdparm -W on the disk under a directory (real ATA/SCSI disks only)
  kSysctl,        // /proc/sys/<param with '.' as '/'>
  kSamba,         // one smb.conf parameter in chokepoint's drop-in, then reload-config
  kClientOption,  // a chokepoint share option on the client: no host is changed
  kMtu,           // `ip link set dev IF mtu N` on the data interface of both ends
  kAfpConf,       // one parameter of [Global] in netatalk's afp.conf, then its restart command
};

// How a value is written on the command line and normalised.
enum class ValueKind {
  kBytes,   // "128K", "1MiB", "65536" -> bytes as a decimal integer
  kKiB,     // "512K" -> KiB as a decimal integer (max_sectors_kb)
  kBool01,  // "0"/"1"/"on"/"off"/"yes"/"no" -> "0" or "1"
  kYesNo,   // same inputs -> "yes" or "no" (Samba booleans)
  kText,    // taken as given (scheduler name, sysctl triples, socket options)
  kInt,     // a decimal integer (MTU, bytes)
};

// One set of stages a knob affects. Empty fields match anything.
struct Affects {
  std::string layer;   // "disk" | "tcp" | "protocol"
  std::string where;   // disk: "server" | "client"; protocol: medium "ram" | "disk"
  std::string driver;  // protocol only: "smb", "ftp", "afp", ...
  std::string op;      // "read" | "write": only samples of this op are reported
};

struct Knob {
  std::string name;      // "server.readahead", "samba.smb2_max_read"
  std::string endpoint;  // "server" | "client" | "both": the agent(s) that apply it
  Mechanism mechanism;
  std::string param;  // sysfs attribute, sysctl key, Samba parameter or share option
  ValueKind kind;
  std::vector<Affects> affects;
  std::string privilege;  // "root", or "none" for client options
  std::string summary;    // one line for --list
  // Samba parameters written beside the knob's in the drop-in for every
  // value, the original included: the whole sweep then runs under them
  // (`max xmit` only matters with `server max protocol = NT1`). A knob with
  // these applies its original value in the original slots instead of
  // reverting, so that only the knob's value differs between slots.
  std::vector<std::pair<std::string, std::string>> with;
  // Client share options every slot sets on the shares the knob affects
  // (the SMB1 knob's client must offer NT1 too).
  std::vector<std::pair<std::string, std::string>> client_options;
};

// Every knob, in --list order.
const std::vector<Knob>& knob_table();

// The row named `name`; throws Error(kUsage) naming the known knobs.
const Knob& find_knob(const std::string& name);

// `raw` as the knob stores it ("1M" -> "1048576" for kBytes); throws
// Error(kUsage) naming the knob and the expected form.
std::string normalize_value(const Knob& knob, const std::string& raw);

// "server.readahead=128K,1M" -> the knob and its normalised values (at
// least one; duplicates removed, order kept). Throws Error(kUsage).
struct KnobRequest {
  const Knob* knob = nullptr;
  std::vector<std::string> values;
};
KnobRequest parse_knob_arg(const std::string& arg);

// Human text for --list: what it touches, how it is read/applied/reverted.
std::string describe_mechanism(const Knob& knob);
std::string describe_affects(const Knob& knob);

// True when a sample of a stage (layer "disk"/"tcp"/a protocol driver,
// where = "server"/"client"/"server->client"/medium) with op `op` is one the
// knob affects.
bool affects_sample(const Knob& knob, const std::string& stage_layer,
                    const std::string& stage_where, const std::string& op);

}  // namespace cp::tune
