// The JSON forms of a stored::Run's parts (core/stored_run.h), for the .cc
// files that print them (show --json, export, compare's environment diff):
// each through its message's codec, so they read as the store holds them.
// Only .cc files include this header (Boost.JSON).
#pragma once

#include <boost/json/value.hpp>

#include <optional>
#include <vector>

#include "core/stored_run.h"

namespace cp::stored {

// The details as stored: the kind's codec, then "stalled" and
// "silent_seconds" when flagged; null when none.
boost::json::value to_json(const Details& d);
// {"server": {...}, "client": {...}} in stored order; null when none.
boost::json::value to_json(const std::optional<std::vector<EndCpu>>& cpu);
// The facts' codec; null when none.
boost::json::value to_json(const std::optional<msg::Facts>& facts);

}  // namespace cp::stored
