// The commands that only print what this build is: `version` and `drivers`.
#pragma once

#include <string>
#include <vector>

namespace cp::app {

int version_command(const std::vector<std::string>& args);
int drivers_command(const std::vector<std::string>& args);

}  // namespace cp::app
