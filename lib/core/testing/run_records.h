// Stored records for tests (not part of a library): a file moved at a rate,
// and the head of a complete run, as the analysis and report tests build them.
#pragma once

#include <cstdint>
#include <string>

#include "core/model.h"

namespace cp::testing {

// A sample of one file of `size` bytes moved at `mbps` MB/s (10^6 bytes/s).
inline SampleRecord file_sample(const std::string& op, uint64_t size, double mbps) {
  SampleRecord s;
  s.op = op;
  s.size = size;
  s.bytes = size;
  s.seconds = double(size) / (mbps * 1e6);
  return s;
}

// A complete run `id` of chokepoint 0.1.0 from the server "nas" to `client`.
inline RunHead complete_run(int64_t id, const std::string& label, const std::string& client) {
  RunHead r;
  r.id = id;
  r.label = label;
  r.status = kComplete;
  r.server = "nas";
  r.client = client;
  r.version = "0.1.0";
  return r;
}

}  // namespace cp::testing
