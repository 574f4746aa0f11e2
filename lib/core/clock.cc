#include "core/clock.h"

#include <fmt/format.h>

#include <ctime>

#include "core/error.h"

namespace cp {

double monotonic_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string iso_time(double wall) {
  time_t t = static_cast<time_t>(wall);
  tm tmv;
  gmtime_r(&t, &tmv);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tmv.tm_year + 1900, tmv.tm_mon + 1,
                     tmv.tm_mday, tmv.tm_hour, tmv.tm_min, tmv.tm_sec);
}

void CancelToken::check() const {
  if (cancelled()) throw Error(ErrorKind::kCancelled, "cancelled");
}

}  // namespace cp
