// The small-file pass's messages (messages.h), as messages.cc codes the rest.
#include <boost/json.hpp>

#include "core/messages_in.h"
#include "core/messages_json.h"

namespace cp::msg {

CP_MESSAGE_FIELDS(files::Latency) {
  v.need("median", m.median_us).need("p99", m.p99_us).need("max", m.max_us);
}

CP_MESSAGE_FIELDS(files::PhaseStats) {
  v.need("phase", m.phase)
      .need("ops", m.ops)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .need("latency_us", m.latency)
      .opt("in_flight_mean", m.in_flight_mean)
      .opt("in_flight_max", m.in_flight_max)
      .omit_empty("sync_seconds", m.sync_seconds)
      .omit_empty("round_trips", m.round_trips)
      .omit_empty("serial_round_trips", m.serial_round_trips)
      .omit_empty("budget_hit", m.budget_hit)
      .omit_empty("skipped", m.skipped)
      .omit_empty("error", m.error);
}

CP_MESSAGE_FIELDS(FilesRequest) {
  v.need("dir", m.dir)
      .need("name", m.name)
      .need("count", m.count)
      .need("size", m.size)
      .opt("dirs", m.dirs)
      .opt("order", m.order)
      .opt("seed", m.seed)
      .opt("budget", m.budget);
}

// The phase's figures flattened, then the CPU.
CP_MESSAGE_FIELDS(FilesPhase) {
  fields(v, m.stats);
  v.need("cpu", m.cpu);
}

CP_MESSAGE_FIELDS(FilesResult) {
  v.need("phases", m.phases)
      .opt("fs_type", m.fs_type)
      .need("cache_possible", m.cache_possible)
      .omit_empty("cache_reason", m.cache_reason);
}

CP_MESSAGE_FIELDS(FilesDetails) {
  v.opt("count", m.count)
      .opt("ops", m.ops)
      .opt("dirs", m.dirs)
      .opt("order", m.order)
      .opt("seed", m.seed)
      .opt("in_flight_mean", m.in_flight_mean)
      .opt("in_flight_max", m.in_flight_max)
      .opt("latency_us", m.latency_us)
      .opt("fs_type", m.fs_type)
      .omit_empty("budget_hit", m.budget_hit)
      .omit_empty("skipped_reason", m.skipped_reason)
      .omit_empty("cache_reason", m.cache_reason)
      .omit_empty("share", m.share)
      .omit_empty("driver", m.driver)
      .omit_empty("in_flight_note", m.in_flight_note)
      .omit_empty("sync_seconds", m.sync_seconds)
      .omit_empty("round_trips", m.round_trips)
      .omit_empty("serial_round_trips", m.serial_round_trips);
}

}  // namespace cp::msg
