// How often the probes (disk and TCP) call their ProgressFn
// (core/progress.h) while a transfer runs.
#pragma once

#include "core/progress.h"

namespace cp::probe {

// Interval between progress reports, seconds.
inline constexpr double kProgressInterval = 0.25;

}  // namespace cp::probe
