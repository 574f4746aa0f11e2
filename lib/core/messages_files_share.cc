// The small-file pass over a share's messages (messages.h, "small files
// over a share"), as messages.cc codes the rest.
#include <boost/json.hpp>

#include "core/messages_in.h"
#include "core/messages_json.h"

namespace cp::msg {
namespace json = boost::json;
using codec::array_of;
using codec::In;
using codec::strings;

json::object to_json(const FilesShareRequest& m) {
  return {{"share", to_json(m.share)},
          {"root", m.root},
          {"count", m.count},
          {"size", m.size},
          {"dirs", m.dirs},
          {"order", m.order},
          {"seed", m.seed},
          {"budget", m.budget},
          {"in_flight", m.in_flight}};
}
void from_json(const json::value& v, FilesShareRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("share", m.share)
      .need("root", m.root)
      .need("count", m.count)
      .need("size", m.size)
      .need("dirs", m.dirs)
      .need("order", m.order)
      .opt("seed", m.seed)
      .opt("budget", m.budget)
      .opt("in_flight", m.in_flight);
}

json::object to_json(const FilesPhase& m) {
  json::object o{{"phase", m.phase},
                 {"ops", m.ops},
                 {"bytes", m.bytes},
                 {"seconds", m.seconds},
                 {"median_us", m.median_us},
                 {"p99_us", m.p99_us},
                 {"max_us", m.max_us},
                 {"in_flight_mean", m.in_flight_mean},
                 {"in_flight_max", m.in_flight_max},
                 {"budget_hit", m.budget_hit},
                 {"cpu", msg::to_json(m.cpu)}};
  if (!m.skipped.empty()) o["skipped"] = m.skipped;
  if (!m.error.empty()) o["error"] = m.error;
  return o;
}
void from_json(const json::value& v, FilesPhase& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("phase", m.phase)
      .need("ops", m.ops)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("median_us", m.median_us)
      .need("p99_us", m.p99_us)
      .need("max_us", m.max_us)
      .need("in_flight_mean", m.in_flight_mean)
      .need("in_flight_max", m.in_flight_max)
      .opt("budget_hit", m.budget_hit)
      .opt("skipped", m.skipped)
      .opt("error", m.error)
      .need("cpu", m.cpu);
}

json::object to_json(const FilesShareResult& m) {
  json::object o{{"phases", array_of(m.phases)},
                 {"in_flight", m.in_flight},
                 {"in_flight_note", m.in_flight_note},
                 {"created", m.created},
                 {"properties", strings(m.properties)}};
  if (!m.leftover.empty()) o["leftover"] = m.leftover;
  return o;
}
void from_json(const json::value& v, FilesShareResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("phases", m.phases)
      .need("in_flight", m.in_flight)
      .opt("in_flight_note", m.in_flight_note)
      .need("created", m.created)
      .opt("leftover", m.leftover)
      .opt("properties", m.properties);
}

}  // namespace cp::msg
