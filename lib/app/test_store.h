// A helper for the app tests that read stored runs (not part of the library).
#pragma once

#include <cstdint>

#include "core/model.h"
#include "store/store.h"

namespace cp::app::testing {

// Stores a whole run as diagnose would: the run, each stage with its samples,
// the run's end. Its id.
inline int64_t save_run(Store& store, const RunRecord& run) {
  const int64_t id = store.begin_run(run);
  for (const auto& st : run.stages) {
    const int64_t sid = store.begin_stage(id, st);
    for (const auto& s : st.samples) store.add_sample(sid, s);
    store.end_stage(sid, st.status);
  }
  store.end_run(id, kComplete);
  return id;
}

}  // namespace cp::app::testing
