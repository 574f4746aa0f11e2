// Test helper: runs `f`, expects a cp::Error of `kind`, returns its message.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"

namespace cp::transfer::testing {

inline std::string error_of(const std::function<void()>& f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace cp::transfer::testing
