#include "core/checksum.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

namespace cp {

TEST(Checksum, IncrementalEqualsWhole) {
  std::vector<char> data(1 << 20);
  fill_pattern(data.data(), data.size(), 42, 0);
  Checksum whole;
  whole.update(data.data(), data.size());
  Checksum parts;
  for (size_t off = 0; off < data.size(); off += 4099) {
    parts.update(data.data() + off, std::min<size_t>(4099, data.size() - off));
  }
  EXPECT_EQ(whole.hex(), parts.hex());
  EXPECT_EQ(whole.hex().size(), 16u);
  data[12345] ^= 1;
  Checksum flipped;
  flipped.update(data.data(), data.size());
  EXPECT_NE(flipped.hex(), whole.hex());
}

TEST(Pattern, OffsetsAgreeAndFilesDiffer) {
  std::vector<char> a(64 << 10), b(32 << 10);
  fill_pattern(a.data(), a.size(), 7, 0);
  fill_pattern(b.data(), b.size(), 7, 32 << 10);
  EXPECT_EQ(0, std::memcmp(a.data() + (32 << 10), b.data(), b.size()));
  // No 4 KiB block repeats, none is zero, and another seed gives other bytes.
  std::set<std::string> blocks;
  for (size_t off = 0; off < a.size(); off += 4096)
    blocks.insert(std::string(a.data() + off, 4096));
  EXPECT_EQ(blocks.size(), a.size() / 4096);
  EXPECT_EQ(blocks.count(std::string(4096, '\0')), 0u);
  std::vector<char> c(a.size());
  fill_pattern(c.data(), c.size(), pattern_seed("other"), 0);
  EXPECT_NE(0, std::memcmp(a.data(), c.data(), c.size()));
  EXPECT_NE(pattern_seed("a.dat"), pattern_seed("b.dat"));
}

TEST(Pattern, OddLengthTail) {
  char buf[13];
  fill_pattern(buf, sizeof buf, 1, 0);
  char big[16];
  fill_pattern(big, sizeof big, 1, 0);
  EXPECT_EQ(0, std::memcmp(buf, big, sizeof buf));
}

}  // namespace cp
