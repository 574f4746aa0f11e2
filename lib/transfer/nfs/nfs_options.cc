// The nfs driver's options (types, ranges, defaults: the table plan read and
// the session both check against), depth=auto, and its DriverSpec.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/nfs/nfs_session.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"

namespace cp::transfer {

NfsOptions parse_nfs_options(const std::map<std::string, std::string>& options) {
  check_options(kNfsDriver, options);  // known, of their type, in range (the spec below)
  NfsOptions o;
  for (const auto& [key, value] : options) {
    const std::string what = fmt::format("nfs share option '{}'", key);
    if (key == "version") {
      o.version = std::stoi(value);
    } else if (key == "depth") {
      o.depth = value == "auto" ? 0 : static_cast<unsigned>(std::stoul(value));
    } else if (key == "path_rate") {
      o.path_rate = static_cast<double>(parse_rate_bits(value, what)) / 8;
    } else if (key == "request_size") {
      o.request_size = parse_size(value, what);
    } else if (key == "uid" || key == "gid") {
      (key == "uid" ? o.uid : o.gid) = static_cast<int>(std::stol(value));
    } else if (key == "timeout") {
      o.timeout_s = parse_duration(value, what);
    }
  }
  return o;
}

unsigned nfs_auto_depth(double rtt_s, uint64_t request_size, double rate) {
  CP_CHECK(request_size > 0);
  if (rate <= 0) rate = kNfsAssumedRate;
  unsigned n = kNfsMinDepth;
  if (rtt_s > 0) {
    const double path_bytes = rtt_s * rate;
    n = std::max(n, 2 + static_cast<unsigned>(std::ceil(2 * path_bytes / double(request_size))));
  }
  const auto by_memory =
      static_cast<unsigned>(std::max<uint64_t>(kNfsAutoMemory / request_size, 1));
  return std::max(1u, std::min({n, by_memory, kNfsMaxDepth}));
}

namespace {
constexpr std::string_view kNfsPrefixes[] = {"nfs://"};
constexpr OptionSpec kNfsOptions[] = {
    {.name = "version",
     .type = OptionType::kChoice,
     .fallback = "4",
     .words = "3|4",
     .help = "the NFS version (4, as Linux mounts today, or 3)"},
    {.name = "request_size",
     .type = OptionType::kSize,
     .fallback = "1MiB",
     .min = 4096,
     .max = kNfsMaxRequest,
     .help = "bytes per READ/WRITE (the Linux client's rsize/wsize), capped at the server's"},
    {.name = "depth",
     .type = OptionType::kCount,
     .fallback = "auto",
     .min = 1,
     .max = kNfsMaxDepth,
     .words = "auto",
     .help = "READ/WRITE requests in flight; auto: twice what the path holds (its round trip x "
             "path_rate) plus two, at least 4, within 32 MiB"},
    {.name = "path_rate",
     .type = OptionType::kRate,
     .help = "the path's rate, for depth=auto (unknown: 10 Gbit/s is assumed)"},
    {.name = "uid",
     .type = OptionType::kCount,
     .max = 0x7fffffff,
     .help = "AUTH_SYS uid; default: the share user's on the client host, else the agent's"},
    {.name = "gid",
     .type = OptionType::kCount,
     .max = 0x7fffffff,
     .help = "AUTH_SYS gid; default as for uid"},
    {.name = "timeout",
     .type = OptionType::kSeconds,
     .fallback = "30s",
     .min = 0.001,
     .help = "seconds without an answer before a call fails"},
};
}  // namespace

const DriverSpec kNfsDriver = {
    .name = "nfs",
    .summary = "NFSv3 or NFSv4 through libnfs, requests pipelined",
    .url_prefixes = kNfsPrefixes,
    // The small-file pass keeps its operations in flight on the one
    // session's connection (libnfs's async calls: nfs_file_ops.cc), up to
    // the plan's most.
    .caps = {.random_access = true,
             .random_write = true,
             .stat = true,
             .mkdir = true,
             .max_in_flight = 64,
             .file_ops_in_flight = true,
             // NFSv3's, what its chains send (nfs_file_ops.cc): create
             // CREATE, WRITE, COMMIT; stat LOOKUP; read LOOKUP, READ; delete
             // REMOVE. A session reports its version's (file_round_trips()).
             .file_round_trips = {3, 1, 2, 1}},
    .options = kNfsOptions,
    .make = nfs::make_driver,
    .display = "NFS",
    .default_port = 2049,
};

}  // namespace cp::transfer
