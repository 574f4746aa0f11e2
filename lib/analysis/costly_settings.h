// Server settings that cost throughput, as data: one entry per setting, with
// its default, what it costs (an id: report/hint_text.h words it) and the
// evidence that lets a finding name it
// (docs/verdict-rules.md, "Costly settings", lists the table). A protocol
// finding names every entry whose value is costly and whose evidence fits
// (Finding::settings), with the value the run recorded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/ladder.h"

namespace cp::analysis {

// The evidence a setting needs before a finding names it.
enum class SettingEvidence {
  kAlways,         // its value alone costs (a request size below the default)
  kSyncWrites,     // a flush costs on the server disk (its synchronous write rate below
                   // kAtCeiling of its plain (unflushed) one) and writes to a disk share sit below
                   // kAtCeiling of both that plain rate and the protocol over RAM
                   // (unmeasured: below both the disk and the protocol over RAM)
  kFlushingSync,   // kSyncWrites within kNearSyncRate of the synchronous rate while
                   // `sync always` is off: a client that flushes
  kCpuEncrypted,   // CPU-bound while the session is encrypted
  kCpuSigned,      // CPU-bound while the session is signed
  kCpuServerRead,  // a read CPU-bound on the server, the session neither signed nor encrypted
  kDiskBelow,      // from disk, below both the disk and the protocol over RAM
  kWindow,         // the buffer over the path's round trip is below what TCP carries
  kCpuTls,         // CPU-bound with TLS on the data connection
  kRateCap,        // the row's median from kShortTcp (80 %) to kNearRateCap of the value (bytes/s)
  kNotRead,        // the value is not in the facts: never named (the table documents it)
};

// How a value is judged costly.
enum class CostlyWhen {
  kOneOf,       // `costly` lists the values ("yes|required"), case-insensitive
  kBelowBytes,  // a size below `bytes`
  kBuffer,      // `socket options` setting SO_SNDBUF (reads) or SO_RCVBUF (writes)
  kPositive,    // a number above 0 (a rate limit set)
};

struct CostlySetting {
  const char* server;     // "samba" | "nfs" | "vsftpd" | "proftpd"
  const char* driver;     // the rows it concerns: "smb", "nfs", "ftp"
  const char* parameter;  // "sync always"
  const char* default_value;
  const char* ops;  // "read" | "write" | "" (both)
  // Where the run records its value: "samba" (the server's Samba facts, by
  // parameter name), "config:SERVER:KEY" (a file server's config, the facts'
  // file_servers), "property:KEY" (the session's, Row::properties), "" none.
  const char* source;
  CostlyWhen when;
  const char* costly;  // kOneOf: the costly values
  uint64_t bytes;      // kBelowBytes: the default size
  const char* cost;    // what it costs: a cost id (analysis/ladder.h, SettingFound)
  SettingEvidence evidence;
  // kRateCap: bytes/s per unit of the value (proftpd's TransferRate is in KiB/s).
  double unit = 1;
};

// Writes within 25 % of the disk's synchronous rate are said to be at it.
constexpr double kNearSyncRate = 1.25;
// The disk stage's synchronous write block (bytes): a flush per block.
constexpr uint64_t kSyncWriteBlock = 1u << 20;
// A row up to twice a configured rate limit is held by it: limiters average
// over a transfer and overshoot (vsftpd's local_max_rate of 20 MB/s let 100 MB
// reads through at 32-33 MB/s in the full lab suite here, and held them at
// 16-17 MB/s on a more loaded run); far above it the limit is not what holds
// the row.
constexpr double kNearRateCap = 2.0;

// The table, in the order findings list what they name.
const std::vector<CostlySetting>& costly_settings();

// Every entry of costly_settings() whose value the run recorded is costly and
// whose evidence `f` (a protocol finding of row `r`, judged) and the rows fit.
std::vector<SettingFound> settings_found(const Analysis& a, const Row& r, const Finding& f);

// The first rate limit of the table (evidence kRateCap) that the run recorded
// for row `r` and that `r` sits at; nullopt when none. `cap`: that limit,
// bytes/s.
std::optional<SettingFound> rate_cap_found(const Analysis& a, const Row& r, double* cap = nullptr);

// The Samba parameters the table reads (probe/sysinfo.h asks for each).
std::vector<std::string> costly_samba_parameters();

}  // namespace cp::analysis
