#include "app/info_commands.h"

#include <fmt/format.h>

#include <iostream>

#include "core/error.h"
#include "core/version.h"
#include "transfer/driver.h"

namespace cp::app {

int version_command(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: chokepoint version\n\nPrints the version and the build id (also "
                 "`chokepoint --version`).\n";
    return 0;
  }
  if (!args.empty()) {
    throw Error(ErrorKind::kUsage, fmt::format("version takes no argument ('{}')", args[0]),
                "run `chokepoint version`");
  }
  std::cout << "chokepoint " << kVersion << " (build " << kBuildId << ")\n";
  return 0;
}

// The protocol drivers' declared data (lib/transfer's table): URL forms,
// capabilities, options with their types, ranges, defaults and help.
int drivers_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: chokepoint drivers\n\nLists each protocol driver: the share URLs it "
                 "takes, what it can do, and the options a share gives it\n"
                 "(options = key=value, ... in a [share NAME] section, or options=... in "
                 "--share).\n";
    return 0;
  }
  if (!args.empty()) {
    throw Error(ErrorKind::kUsage, fmt::format("drivers takes no argument ('{}')", args[0]),
                "run `chokepoint drivers`");
  }
  std::cout << transfer::describe_drivers();
  return 0;
}

}  // namespace cp::app
