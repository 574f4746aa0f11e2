// SHA-256 without a crypto library (the static server agent links none): the
// agent's --self-check hashes its own image with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cp {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex();  // finishes: 64 lower-case hex digits

 private:
  void block(const unsigned char* p);
  uint32_t h_[8];
  unsigned char buf_[64];
  size_t used_ = 0;
  uint64_t bytes_ = 0;
};

// Hex SHA-256 of a file's bytes; nullopt when it cannot be read.
std::optional<std::string> sha256_hex_of_file(const std::string& path);

// The agent's --self-check: whether the running executable (/proc/self/exe)
// hashes to `expected_hex`; `*actual` gets its hash ("" when unreadable).
bool self_check(std::string_view expected_hex, std::string* actual);

// Exit code of an agent whose --self-check failed (docs/security.md).
inline constexpr int kExitSelfCheck = 3;
// The agents' main: nullopt when `argv` is not "--self-check HEX [--serve]".
// Else 0: the hash holds, serve; -1: it holds and no --serve was given (exit
// 0); 2: bad usage; kExitSelfCheck: it differs (said on stderr), exit so.
std::optional<int> self_check_main(const char* program, int argc, char** argv);

}  // namespace cp
