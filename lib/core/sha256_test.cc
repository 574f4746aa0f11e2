#include "core/sha256.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

namespace cp {
namespace {

std::string sha_of(std::string_view s) {
  Sha256 h;
  h.update(s.data(), s.size());
  return h.hex();
}

// FIPS 180-2's vectors, and one over several blocks fed in odd pieces.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  Sha256 h;
  for (size_t i = 0; i < million.size(); i += 997)
    h.update(million.data() + i, std::min<size_t>(997, million.size() - i));
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, OfAFileAndOfTheRunningExecutable) {
  const std::string p = "/tmp/sha256-test-" + std::to_string(getpid());
  std::ofstream(p) << "abc";
  EXPECT_EQ(sha256_hex_of_file(p),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  unlink(p.c_str());
  EXPECT_FALSE(sha256_hex_of_file(p).has_value());
  std::string self;
  const std::string mine = *sha256_hex_of_file("/proc/self/exe");
  EXPECT_TRUE(self_check(mine, &self));
  EXPECT_EQ(self, mine);
  EXPECT_FALSE(self_check(std::string(64, '0'), &self));
}

}  // namespace
}  // namespace cp
