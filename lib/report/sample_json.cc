#include "report/sample_json.h"

#include <boost/json.hpp>

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

}  // namespace cp::report
