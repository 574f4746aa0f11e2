// The chokepoint command line: subcommands parsed here, each a function
// over the lower layers. cmd/chokepoint/main.cc only calls main().
#pragma once

#include <string>
#include <vector>

namespace cp::app {

int main(int argc, char** argv);

// The command table main() dispatches from (the usage text lists it too).
struct CommandInfo {
  std::string name;
  std::string args;  // shown after the name in the usage
  std::string help;  // one line
};
std::vector<CommandInfo> commands();

}  // namespace cp::app
