// `chokepoint lab up|status|down`: the command line over lab.h.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "lab/lab.h"

namespace cp::lab {

// `args` are the words after "lab":
//   up [--rate 1gbit] [--path-rate 100mbit] [--delay 5ms] [--mtu 9000] [--server-mtu M]
//      [--client-mtu M] [--samba 'name = value']... [--disk-size 3GiB] [--ram-size 2GiB]
//   status [--json]
//   throttle [--smbd-cpu 20%] [--server-disk-read 50MB/s] [--server-disk-write 50MB/s] [--clear]
//   down
// and on each --instance N (default $CHOKEPOINT_LAB_INSTANCE or 0).
// Returns the exit code: 0 done, 2 bad command line, 1 any other failure;
// `status` also kExitNoLab and kExitUnhealthy.
// Errors are caught here and printed as "chokepoint lab: <describe(e)>".
int run_lab_command(const std::vector<std::string>& args);
// `lab status`: no lab is up (in the instance's dir).
inline constexpr int kExitNoLab = 3;
// `lab status`: a lab is up but a part of it is down (LabHealth::down).
inline constexpr int kExitUnhealthy = 4;
// The same, writing to `out` and `err` (for tests).
int run_lab_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

struct UpArgs {
  LabOptions options;
  std::optional<int> instance;  // --instance N; unset: $CHOKEPOINT_LAB_INSTANCE or 0
  bool disk_size_given = false;
  bool ram_size_given = false;
};
// Parses the words after "up". Throws Error(kUsage) for unknown options,
// malformed or out-of-range values ("--rate 0" means unshaped).
UpArgs parse_up_args(const std::vector<std::string>& args);

// Parses the words after "throttle" (none: show the current throttles).
// Throws Error(kUsage) for unknown options and malformed values.
ThrottleRequest parse_throttle_args(const std::vector<std::string>& args);
// "20%" -> 0.2 (a fraction of one core; above 100% spans cores); "off" or
// "0" -> 0. Throws Error(kUsage) naming `what`.
double parse_cpu_share(const std::string& text, const std::string& what);
// "50MB/s" (or "50MB") -> 50000000 bytes/s; "off" or "0" -> 0. Throws Error(kUsage).
uint64_t parse_bytes_rate(const std::string& text, const std::string& what);

// The usage text printed by `lab --help`: every subcommand.
std::string lab_usage();
// `lab <sub> --help`: that subcommand's usage and options (all of them for
// a word that is not a subcommand).
std::string lab_usage(const std::string& sub);

}  // namespace cp::lab
