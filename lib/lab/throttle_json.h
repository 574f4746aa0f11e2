// The lab's throttles as JSON: one shape for lab.json (layout.cc) and
// `lab status --json` (status.cc). Only .cc files include this (Boost.JSON).
#pragma once

#include <boost/json/object.hpp>

#include "lab/lab.h"

namespace cp::lab {

boost::json::object throttle_to_json(const LabThrottle& t);

}  // namespace cp::lab
