// What a sample measured, as report's JSON and export's rows show it (one
// list of fields, in one order), and the run's degraded facts as both list
// them. Only .cc files of lib/report include this.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "core/stored_run.h"

namespace cp::report {

// seq, op, size, bytes, seconds, bytes_per_s, started_at, cache_possible, error.
boost::json::object sample_measure_json(const stored::Sample& s);

// Facts an agent without some privilege measured another way
// (degraded_facts, report.h): [{"role", "fact", "method", "privilege"}].
boost::json::array degraded_json(const stored::Run& run);

}  // namespace cp::report
