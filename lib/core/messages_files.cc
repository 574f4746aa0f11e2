// The small-file pass's messages (messages.h), as messages.cc codes the rest.
#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/error.h"
#include "core/messages_in.h"
#include "core/messages_json.h"

namespace cp::msg {
namespace json = boost::json;
using codec::array_of;
using codec::In;

json::object to_json(const files::Latency& m) {
  return {{"median", m.median_us}, {"p99", m.p99_us}, {"max", m.max_us}};
}
void from_json(const json::value& v, files::Latency& m, Source src, std::string_view what) {
  In(v, src, what).need("median", m.median_us).need("p99", m.p99_us).need("max", m.max_us);
}

json::object to_json(const files::PhaseStats& m) {
  json::object o{{"phase", files::phase_name(m.phase)},
                 {"ops", m.ops},
                 {"bytes", m.bytes},
                 {"seconds", m.seconds},
                 {"latency_us", to_json(m.latency)},
                 {"in_flight_mean", m.in_flight_mean},
                 {"in_flight_max", m.in_flight_max}};
  if (m.sync_seconds > 0) o["sync_seconds"] = m.sync_seconds;
  if (m.budget_hit) o["budget_hit"] = true;
  if (!m.skipped.empty()) o["skipped"] = m.skipped;
  if (!m.error.empty()) o["error"] = m.error;
  return o;
}
void from_json(const json::value& v, files::PhaseStats& m, Source src, std::string_view what) {
  std::string phase;
  In(v, src, what)
      .need("phase", phase)
      .need("ops", m.ops)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("latency_us", m.latency)
      .opt("in_flight_mean", m.in_flight_mean)
      .opt("in_flight_max", m.in_flight_max)
      .opt("sync_seconds", m.sync_seconds)
      .opt("budget_hit", m.budget_hit)
      .opt("skipped", m.skipped)
      .opt("error", m.error);
  if (const auto p = files::parse_phase(phase)) {
    m.phase = *p;
  } else if (src == Source::kPeer) {
    throw Error(ErrorKind::kPeer,
                fmt::format("message '{}': field 'phase' must be create, stat, read or delete, "
                            "not '{}'",
                            what, phase.substr(0, 40)),
                "the orchestrator and agent builds differ: redeploy the agent");
  }
}

json::object to_json(const FilesRequest& m) {
  return {{"dir", m.dir},   {"name", m.name},   {"count", m.count}, {"size", m.size},
          {"dirs", m.dirs}, {"order", m.order}, {"seed", m.seed},   {"budget", m.budget}};
}
void from_json(const json::value& v, FilesRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("dir", m.dir)
      .need("name", m.name)
      .need("count", m.count)
      .need("size", m.size)
      .opt("dirs", m.dirs)
      .opt("order", m.order)
      .opt("seed", m.seed)
      .opt("budget", m.budget);
}

json::object to_json(const FilesPhase& m) {
  json::object o = to_json(m.stats);
  o["cpu"] = msg::to_json(m.cpu);
  return o;
}
void from_json(const json::value& v, FilesPhase& m, Source src, std::string_view what) {
  from_json(v, m.stats, src, what);
  In(v, src, what).need("cpu", m.cpu);
}

json::object to_json(const FilesResult& m) {
  json::object o{
      {"phases", array_of(m.phases)}, {"fs_type", m.fs_type}, {"cache_possible", m.cache_possible}};
  if (!m.cache_reason.empty()) o["cache_reason"] = m.cache_reason;
  return o;
}
void from_json(const json::value& v, FilesResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("phases", m.phases)
      .opt("fs_type", m.fs_type)
      .need("cache_possible", m.cache_possible)
      .opt("cache_reason", m.cache_reason);
}

json::object to_json(const FilesDetails& m) {
  json::object o{{"count", m.count},
                 {"ops", m.ops},
                 {"dirs", m.dirs},
                 {"order", m.order},
                 {"seed", m.seed},
                 {"in_flight_mean", m.in_flight_mean},
                 {"in_flight_max", m.in_flight_max},
                 {"latency_us", to_json(m.latency_us)},
                 {"fs_type", m.fs_type}};
  if (m.budget_hit) o["budget_hit"] = true;
  if (!m.skipped_reason.empty()) o["skipped_reason"] = m.skipped_reason;
  if (!m.cache_reason.empty()) o["cache_reason"] = m.cache_reason;
  if (!m.share.empty()) o["share"] = m.share;
  if (!m.driver.empty()) o["driver"] = m.driver;
  if (!m.in_flight_note.empty()) o["in_flight_note"] = m.in_flight_note;
  if (m.sync_seconds > 0) o["sync_seconds"] = m.sync_seconds;
  return o;
}
void from_json(const json::value& v, FilesDetails& m, Source src, std::string_view what) {
  In(v, src, what)
      .opt("count", m.count)
      .opt("ops", m.ops)
      .opt("dirs", m.dirs)
      .opt("order", m.order)
      .opt("seed", m.seed)
      .opt("in_flight_mean", m.in_flight_mean)
      .opt("in_flight_max", m.in_flight_max)
      .opt("latency_us", m.latency_us)
      .opt("budget_hit", m.budget_hit)
      .opt("skipped_reason", m.skipped_reason)
      .opt("fs_type", m.fs_type)
      .opt("cache_reason", m.cache_reason)
      .opt("share", m.share)
      .opt("driver", m.driver)
      .opt("in_flight_note", m.in_flight_note)
      .opt("sync_seconds", m.sync_seconds);
}

}  // namespace cp::msg
