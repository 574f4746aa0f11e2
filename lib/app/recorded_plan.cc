#include "app/recorded_plan.h"

#include <boost/json.hpp>

#include "core/json_util.h"

namespace cp::app {

std::string with_lab_throttle(const std::string& plan_json, const lab::LabThrottle& t) {
  boost::json::object plan = parse_json_object(plan_json);
  plan["lab_throttle"] = boost::json::object{{"smbd_cpu", t.smbd_cpu},
                                             {"disk_read_bps", t.disk_read_bps},
                                             {"disk_write_bps", t.disk_write_bps}};
  return boost::json::serialize(plan);
}

}  // namespace cp::app
