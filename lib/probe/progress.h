// Progress reports shared by the probes (disk and TCP).
#pragma once

#include <cstdint>
#include <functional>

namespace cp::probe {

// Called at most every ~0.25 s while a transfer runs: bytes so far, seconds so far.
// May be empty (no reports).
using Progress = std::function<void(uint64_t bytes, double seconds)>;

// Interval between progress reports, seconds.
inline constexpr double kProgressInterval = 0.25;

}  // namespace cp::probe
