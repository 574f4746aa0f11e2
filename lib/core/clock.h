// Time sources. Code that measures takes a Clock& so tests can use a fake.
#pragma once

#include <atomic>
#include <string>

namespace cp {

// Seconds on CLOCK_MONOTONIC; for durations.
double monotonic_seconds();
// Seconds since the Unix epoch; for timestamps stored with samples.
double wall_seconds();
// "2026-11-30T01:56:32Z" (UTC) for a wall_seconds() value.
std::string iso_time(double wall);

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;  // monotonic seconds
};

class SteadyClock : public Clock {
 public:
  double now() const override { return monotonic_seconds(); }
};

// Set from another thread (a signal watcher, a closed channel) to stop work
// between blocks; long loops poll it.
class CancelToken {
 public:
  void cancel() { flag_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return flag_.load(std::memory_order_relaxed); }
  // Throws Error(kCancelled) when cancelled.
  void check() const;

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace cp
