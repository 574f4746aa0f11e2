// The command table (app.cc): the usage text, the dispatch, "did you mean",
// the man page and the shell completion all come from it.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace cp::app {

struct Command {
  const char* name;
  const char* args;  // shown after the name in the usage
  const char* help;  // one line
  int (*run)(const std::vector<std::string>& args);
};

// Every command, in --help order.
std::span<const Command> command_table();

}  // namespace cp::app
