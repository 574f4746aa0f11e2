// Checks of a files pass's result, for the driver tests (not part of the
// library).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "transfer/files_pass.h"

namespace cp::transfer::testing {

// That the pass `r` ran `in_flight` operations at once, never more, and that
// its every phase did all `count` files without an error, reading back every
// file whole (`size` bytes each).
inline void expect_every_file_done(const FilesPassResult& r, uint64_t count, uint64_t size,
                                   unsigned in_flight) {
  EXPECT_EQ(r.in_flight, in_flight);
  for (const auto& p : r.phases) {
    SCOPED_TRACE(std::string(files::phase_name(p.phase)));
    EXPECT_EQ(p.ops, count);
    EXPECT_TRUE(p.error.empty()) << p.error;
    EXPECT_GE(p.in_flight_max, 1u);
    EXPECT_LE(p.in_flight_max, in_flight);
    EXPECT_LE(p.in_flight_mean, in_flight + 1e-9);  // Little's law's mean over the phase
  }
  ASSERT_GE(r.phases.size(), 3u);
  EXPECT_EQ(r.phases[2].bytes, count * size);  // read whole and checked
}

}  // namespace cp::transfer::testing
