// What a call throws, for tests (not part of a library).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"

namespace cp::testing {

// Runs `f`, expects a cp::Error of `kind`, returns its message.
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

// The kind of the cp::Error `f` throws (a test failure when it throws none).
inline ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no error";
  return ErrorKind::kUsage;
}

}  // namespace cp::testing
