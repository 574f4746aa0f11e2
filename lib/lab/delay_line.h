// The lab's user-space delay line, for kernels without netem: a process in
// the switch namespace that forwards every frame between the switch's two
// ports (AF_PACKET sockets) after a fixed one-way delay, each direction on
// its own thread, with a bounded queue per direction (frames that do not fit
// are dropped and counted). Rate limits stay with tbf on the ports.
//
// Frames keep their GSO/checksum-offload metadata (PACKET_VNET_HDR): veth
// hands the sockets TCP super-frames of up to 64 KiB, which are forwarded as
// such instead of being cut to the MTU, so the line carries Gbit/s with few
// system calls. PACKET_IGNORE_OUTGOING keeps a port's socket from reading
// back what it sent.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace cp::lab {

// One direction's queue: a frame pushed at time t leaves at t + delay, in
// order; the queue holds at most limit_bytes of frames. Times in nanoseconds
// on any monotonic clock (the caller's), so it runs on a fake clock in tests.
class DelayQueue {
 public:
  DelayQueue(int64_t delay_ns, uint64_t limit_bytes);

  // Takes the frame, or drops it (false, counted) when it would overflow the limit.
  bool push(int64_t now_ns, std::vector<uint8_t> frame);
  // When the oldest frame is due; INT64_MAX when empty.
  int64_t next_due_ns() const;
  // Moves the frames due at `now_ns` (oldest first) to `out`; returns how many.
  size_t pop_due(int64_t now_ns, std::vector<std::vector<uint8_t>>* out);

  size_t frames_queued() const { return q_.size(); }
  uint64_t bytes_queued() const { return bytes_; }
  uint64_t frames_in() const { return frames_in_; }
  uint64_t frames_dropped() const { return frames_dropped_; }
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t max_bytes_queued() const { return max_bytes_; }

 private:
  struct Entry {
    int64_t due_ns;
    std::vector<uint8_t> frame;
  };
  int64_t delay_ns_;
  uint64_t limit_bytes_;
  std::deque<Entry> q_;
  uint64_t bytes_ = 0;
  uint64_t frames_in_ = 0, frames_dropped_ = 0, bytes_in_ = 0, max_bytes_ = 0;
};

// Queue bound per direction, bytes: what `delay_s` holds at `rate_bits`
// (10 Gbit/s when unshaped), twice; from 4 MiB to 256 MiB.
uint64_t delay_line_queue_bytes(uint64_t rate_bits, double delay_s);

struct DelayLineConfig {
  std::string netns;   // the switch namespace (/run/netns/<netns>)
  std::string port_a;  // e.g. "sw-s"
  std::string port_b;  // e.g. "sw-c"
  double delay_s = 0;  // one-way, each direction
  uint64_t queue_bytes = 0;
  std::string pid_file;    // written by the delay line once it forwards
  std::string stats_file;  // JSON counters, rewritten every second and at exit
  std::string log_file;    // its stdout/stderr
};

// Counters per direction, as in the stats file.
struct DelayLineStats {
  std::string from, to;
  uint64_t frames = 0, bytes = 0, dropped = 0, send_errors = 0, max_queued_bytes = 0;
};
// Parses the stats file's text; empty on anything unparsable.
std::vector<DelayLineStats> parse_delay_line_stats(const std::string& text);

// The process name ("comm") the delay line runs under.
inline constexpr const char* kDelayLineComm = "cp-delay-line";

// Starts the delay line as a daemon (its own session, reparented to init)
// inside cfg.netns and returns its pid once both sockets are open and it
// forwards. Throws Error(kIo) with its reason when it cannot start.
pid_t start_delay_line(const DelayLineConfig& cfg);

// The recorded pid is a live delay line (by its name).
bool delay_line_alive(pid_t pid);

// TERM, then KILL after a few seconds; no-op when it is not a delay line.
void stop_delay_line(pid_t pid);

}  // namespace cp::lab
