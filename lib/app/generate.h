// chokepoint(1) and the bash completion, generated from the command table
// (command_table.h) and each command's own --help (help.h), so neither can
// go stale: the build runs `chokepoint --generate man|bash-completion`.
#pragma once

#include <string>
#include <vector>

#include "app/help.h"

namespace cp::app {

// One command as --help shows it.
struct CommandDoc {
  std::string name, args, summary;
  std::string help_text;                 // what `chokepoint NAME --help` prints
  CommandHelp options;                   // its options, when it prints them with show_help
  std::vector<std::string> subcommands;  // "lab": up, status, ...
};

// Every command of the table, each asked for its --help.
std::vector<CommandDoc> command_docs();

std::string man_page();         // roff, for man(1)
std::string bash_completion();  // a bash script: `complete -F _chokepoint chokepoint`

// `chokepoint --generate man|bash-completion` (hidden; the build's rule).
int generate_command(const std::vector<std::string>& args);

}  // namespace cp::app
