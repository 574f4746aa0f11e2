// What a call throws (core/testing/error_of.h), for the transfer tests.
#pragma once

#include "core/testing/error_of.h"

namespace cp::transfer::testing {

using cp::testing::error_of;
using cp::testing::kind_of;

}  // namespace cp::transfer::testing
