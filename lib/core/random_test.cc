#include "core/random.h"

#include <gtest/gtest.h>

#include <set>

namespace cp {
namespace {

TEST(RandomHex, GivesTwoLowerCaseHexDigitsPerByte) {
  const std::string s = random_hex(16);
  ASSERT_EQ(s.size(), 32u);
  EXPECT_EQ(s.find_first_not_of("0123456789abcdef"), std::string::npos) << s;
}

// 128 bits: 64 draws never repeat unless the source is broken (p ~ 2^-116).
TEST(RandomHex, DrawsDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) seen.insert(random_hex(16));
  EXPECT_EQ(seen.size(), 64u);
}

}  // namespace
}  // namespace cp
