// Checksums of transferred files (XXH3-64: fast enough to run at memory
// speed beside a transfer) and the deterministic file content both ends can
// regenerate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cp {

class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;
  void update(const void* data, size_t n);
  // 16 hex digits.
  std::string hex() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Fills buf with the content of a pattern file at `offset` (a multiple of 8):
// pseudo-random, non-repeating across blocks and files, never sparse.
void fill_pattern(char* buf, size_t n, uint64_t seed, uint64_t offset);

// A seed from a file name, so distinct files get distinct content.
uint64_t pattern_seed(const std::string& name);

}  // namespace cp
