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
#include "transfer/option_table.h"
#include "transfer/nfs/nfs_session.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"

namespace cp::transfer {

NfsOptions parse_nfs_options(const std::map<std::string, std::string>& options) {
  check_options(kNfsDriver, options);  // known, of their type, in range (the spec below)
  // Each value, else the table's default, in its unit; nullopt: none or "auto".
  auto number = [&](std::string_view name) { return option_number(kNfsDriver, options, name); };
  NfsOptions o;
  o.version = option_value(kNfsDriver, options, "version") == "3" ? 3 : 4;
  o.request_size = static_cast<uint64_t>(*number("request_size"));
  o.depth = static_cast<unsigned>(number("depth").value_or(0));
  o.path_rate = number("path_rate").value_or(0) / 8;  // bit/s -> bytes/s
  o.uid = static_cast<int>(number("uid").value_or(-1));
  o.gid = static_cast<int>(number("gid").value_or(-1));
  o.timeout_s = *number("timeout");
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
    option::choice("version", "4", "3|4", "the NFS version (4, as Linux mounts today, or 3)"),
    option::size("request_size", "1MiB", 4096, kNfsMaxRequest,
                 "bytes per READ/WRITE (the Linux client's rsize/wsize), capped at the server's"),
    option::count_or_auto("depth", kNfsMaxDepth,
                          "READ/WRITE requests in flight; auto: twice what the path holds (its "
                          "round trip x path_rate) plus two, at least 4, within 32 MiB"),
    option::path_rate("the path's rate, for depth=auto (unknown: 10 Gbit/s is assumed)"),
    option::count("uid", "", 0, 0x7fffffff,
                  "AUTH_SYS uid; default: the share user's on the client host, else the agent's"),
    option::count("gid", "", 0, 0x7fffffff, "AUTH_SYS gid; default as for uid"),
    option::seconds("timeout", "30s", "seconds without an answer before a call fails"),
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
