// `chokepoint lab up|status|down`: the command line over lab.h.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "lab/lab.h"

namespace cp::lab {

// `args` are the words after "lab":
//   up [--rate 1gbit] [--mtu 9000] [--delay 2ms] [--disk-size 3GiB] [--ram-size 2GiB]
//   status [--json]
//   down
// Returns the exit code: 0 done, 2 bad command line, 1 any other failure.
// Errors are caught here and printed as "chokepoint lab: <describe(e)>".
int run_lab_command(const std::vector<std::string>& args);
// The same, writing to `out` and `err` (for tests).
int run_lab_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

struct UpArgs {
  LabOptions options;
  bool disk_size_given = false;
  bool ram_size_given = false;
};
// Parses the words after "up". Throws Error(kUsage) for unknown options,
// malformed or out-of-range values ("--rate 0" means unshaped).
UpArgs parse_up_args(const std::vector<std::string>& args);

// The usage text printed by --help.
std::string lab_usage();

}  // namespace cp::lab
