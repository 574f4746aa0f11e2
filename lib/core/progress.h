// The one progress callback type: the disk and TCP probes, the agent's file
// and transfer requests and the orchestrator's agent link report through it.
#pragma once

#include <cstdint>
#include <functional>

namespace cp {

// Bytes moved so far and seconds so far of a transfer or a long request. May
// be empty (no reports).
using ProgressFn = std::function<void(uint64_t bytes, double seconds)>;

}  // namespace cp
