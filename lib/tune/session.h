// What the sweep (sweep.cc) and a stored session's reading (session.cc) share
// (internal to lib/tune): the layer a sample counts for. The sessions
// themselves are tables of the store (Store::begin_tune_session ...).
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "tune_agent/knobs.h"

namespace cp::tune::detail {

// "smb disk read 100 MB", "tcp server->client send".
std::string layer_key(const std::string& layer, const std::string& where, const std::string& op,
                      uint64_t size);
bool affects_any(const std::vector<const Knob*>& knobs, const std::string& layer,
                 const std::string& where, const std::string& op);

}  // namespace cp::tune::detail
