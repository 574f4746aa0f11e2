// --help output, and the same options as data for the man page and the
// shell completion (lib/app/generate.cc): every command prints its options
// with show_help, which also hands them to a HelpCapture when one is active.
#pragma once

#include <boost/program_options/options_description.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace cp::app {

struct OptionHelp {
  std::string long_name;   // "server" (empty for a short-only option)
  std::string short_name;  // "q", or empty
  std::string param;       // "arg", "arg (=50)", "[=arg(=latest)]"; empty: a flag
  std::string text;        // the help line
};

struct CommandHelp {
  std::string caption;  // the options_description's caption (usage, then prose)
  std::vector<OptionHelp> options;
};

// Prints `desc` as --help does (boost's layout) and, inside a HelpCapture,
// records its caption and options there.
void show_help(std::ostream& out, const boost::program_options::options_description& desc);

// While alive, show_help on this thread records into `into`.
class HelpCapture {
 public:
  explicit HelpCapture(CommandHelp* into);
  ~HelpCapture();
  HelpCapture(const HelpCapture&) = delete;
  HelpCapture& operator=(const HelpCapture&) = delete;

 private:
  CommandHelp* previous_;
};

}  // namespace cp::app
