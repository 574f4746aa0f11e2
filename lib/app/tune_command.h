// `chokepoint tune`: sweep a knob (lib/tune), revert a dead session's
// changes, list the knobs.
#pragma once

#include <string>
#include <vector>

namespace cp::app {

int tune_command(const std::vector<std::string>& args);

}  // namespace cp::app
