// The plan: what a diagnosis measures and where. Read from an INI-style
// file (examples/plan.ini documents every key); every key has a default, so
// no plan file is needed. Unknown sections or keys are errors naming the
// line, never silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cp::pipeline {

struct EndpointPlan {
  std::string ram_dir = "/dev/shm";   // a tmpfs: the RAM side of protocol stages
  std::string disk_dir = "/var/tmp";  // on the disk under test
};

struct Plan {
  EndpointPlan server, client;

  bool disk_enabled = true;
  std::vector<uint64_t> disk_sizes = {10'000'000, 100'000'000};  // bytes per file
  int disk_count = 10;                                           // files per size and op
  uint32_t disk_block = 1u << 20;                                // bytes per read/write call

  bool tcp_enabled = true;
  double tcp_seconds = 2;            // per sample; >= 2 s for a stable figure
  int tcp_count = 5;                 // samples per direction
  uint32_t tcp_buffer = 128u << 10;  // bytes per send/recv call
  std::string data_address;          // the server's address on the data path; "" = SSH host

  uint64_t link_bits = 0;  // nominal link speed, bit/s; 0 = detect from interfaces

  std::string source;  // file it came from, or "(defaults)"
};

// Parses plan text; `name` is used in messages ("plan.ini:12: ...").
// Throws Error(kConfig) naming the line and key.
// Keys the text sets override `base` (the defaults, or the lab's dirs).
Plan parse_plan(const std::string& text, const std::string& name, Plan base = {});
Plan load_plan(const std::string& path, Plan base = {});  // reads the file, then parse_plan

// The effective plan as JSON text (stored with each run).
std::string plan_to_json(const Plan& plan);

}  // namespace cp::pipeline
