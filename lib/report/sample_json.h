// What a sample measured, as report's JSON and export's rows show it (one
// list of fields, in one order). Only .cc files of lib/report include this.
#pragma once

#include <boost/json/object.hpp>

#include "core/stored_run.h"

namespace cp::report {

// seq, op, size, bytes, seconds, bytes_per_s, started_at, cache_possible, error.
boost::json::object sample_measure_json(const stored::Sample& s);

}  // namespace cp::report
