#include "report/sample_json.h"

#include <boost/json.hpp>

#include "report/report.h"

namespace cp::report {

boost::json::object sample_measure_json(const stored::Sample& s) {
  return {{"seq", s.seq},
          {"op", s.op},
          {"size", s.size},
          {"bytes", s.bytes},
          {"seconds", s.seconds},
          {"bytes_per_s", s.rate()},
          {"started_at", s.started_at},
          {"cache_possible", s.cache_possible},
          {"error", s.error}};
}

boost::json::array degraded_json(const stored::Run& run) {
  boost::json::array a;
  for (const DegradedFact& d : degraded_facts(run)) {
    a.push_back(
        {{"role", d.role}, {"fact", d.fact}, {"method", d.method}, {"privilege", d.privilege}});
  }
  return a;
}

}  // namespace cp::report
