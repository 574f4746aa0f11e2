#include "core/checksum.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>

#include "core/error.h"

namespace cp {

struct Checksum::State {
  XXH3_state_t* st = XXH3_createState();
  ~State() { XXH3_freeState(st); }
};

Checksum::Checksum() : s_(std::make_unique<State>()) {
  CP_CHECK(s_->st != nullptr);
  XXH3_64bits_reset(s_->st);
}

Checksum::~Checksum() = default;

void Checksum::update(const void* data, size_t n) { XXH3_64bits_update(s_->st, data, n); }

std::string Checksum::hex() const {
  return fmt::format("{:016x}", static_cast<uint64_t>(XXH3_64bits_digest(s_->st)));
}

namespace {
// splitmix64: one multiply-xorshift per 8 bytes, fast and well mixed.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

void fill_pattern(char* buf, size_t n, uint64_t seed, uint64_t offset) {
  CP_CHECK(offset % 8 == 0);
  size_t i = 0;
  uint64_t word = offset / 8;
  for (; i + 8 <= n; i += 8, ++word) {
    const uint64_t v = mix(seed ^ (word * 0xd1342543de82ef95ull));
    std::memcpy(buf + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = mix(seed ^ (word * 0xd1342543de82ef95ull));
    std::memcpy(buf + i, &v, n - i);
  }
}

uint64_t pattern_seed(const std::string& name) { return XXH3_64bits(name.data(), name.size()); }

}  // namespace cp
