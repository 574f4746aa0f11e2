// What a run records beside its plan, so `compare` can name it: on the lab,
// the throttles `lab throttle` had set when the run started.
#pragma once

#include <string>

#include "lab/lab.h"

namespace cp::app {

// `plan_json` (plan_to_json's) with {"lab_throttle": {smbd_cpu, disk_read_bps,
// disk_write_bps}} added (all zero: nothing throttled).
std::string with_lab_throttle(const std::string& plan_json, const lab::LabThrottle& throttle);

}  // namespace cp::app
