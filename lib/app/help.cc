#include "app/help.h"

#include <boost/program_options/cmdline.hpp>

#include <sstream>

namespace cp::app {

namespace po = boost::program_options;

namespace {
thread_local CommandHelp* g_capture = nullptr;
}  // namespace

void show_help(std::ostream& out, const po::options_description& desc) {
  std::ostringstream text;
  text << desc;
  out << text.str();
  if (!g_capture) return;
  // Boost 1.81 has no caption(): it is what precedes the first option line,
  // printed with a ':' after it.
  std::string caption = text.str().substr(0, text.str().find("\n  -"));
  if (caption.ends_with(':')) caption.pop_back();
  g_capture->caption = caption;
  for (const auto& o : desc.options()) {
    OptionHelp h;
    h.long_name = o->long_name();
    // canonical_display_name(short style) gives "-q" when the option has one.
    const std::string shortest =
        o->canonical_display_name(po::command_line_style::allow_dash_for_short);
    if (shortest.size() == 2 && shortest[0] == '-' && shortest[1] != '-')
      h.short_name = shortest.substr(1);
    h.param = o->format_parameter();
    h.text = o->description();
    g_capture->options.push_back(std::move(h));
  }
}

HelpCapture::HelpCapture(CommandHelp* into) : previous_(g_capture) { g_capture = into; }
HelpCapture::~HelpCapture() { g_capture = previous_; }

}  // namespace cp::app
