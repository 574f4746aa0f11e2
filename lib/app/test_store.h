// A helper for the app tests that read stored runs (not part of the library).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/model.h"
#include "core/stored_run.h"
#include "store/store.h"

namespace cp::app::testing {

// Stores a whole run as diagnose would: the run, its hosts, each stage with
// its samples (typed, as the stages hand them over: the fixture's JSON text
// decoded), the run's end. Its id.
inline int64_t save_run(Store& store, const RunRecord& run) {
  const int64_t id = store.begin_run(run);
  const stored::Run typed = stored::decode(run);
  for (const stored::Host& h : typed.hosts) store.add_host(id, h);
  for (size_t i = 0; i < run.stages.size(); ++i) {
    const int64_t sid = store.begin_stage(id, run.stages[i]);
    for (const stored::Sample& s : typed.stages[i].samples) store.add_sample(sid, s);
    store.end_stage(sid, run.stages[i].status);
  }
  store.end_run(id, kComplete);
  return id;
}

}  // namespace cp::app::testing
