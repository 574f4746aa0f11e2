#include "core/units.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace cp {

TEST(Units, ParseSizeDecimalAndBinary) {
  EXPECT_EQ(parse_size("10MB"), 10'000'000u);
  EXPECT_EQ(parse_size("1MiB"), 1u << 20);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size(" 100 mb "), 100'000'000u);
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("1.5GB"), 1'500'000'000u);
}

TEST(Units, ParseSizeRejectsWithFieldName) {
  try {
    parse_size("ten", "disk.sizes");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("disk.sizes"), std::string::npos);
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  }
  EXPECT_THROW(parse_size("10 parsecs"), Error);
  EXPECT_THROW(parse_size("0.5"), Error);  // not whole bytes
  EXPECT_THROW(parse_size("-1MB"), Error);
}

TEST(Units, PercentAndChange) {
  EXPECT_EQ(format_percent(0.123), "12 %");
  EXPECT_EQ(format_percent(1.0), "100 %");
  EXPECT_EQ(format_change(0.123), "+12.3 %");
  EXPECT_EQ(format_change(-0.05), "-5.0 %");
}

TEST(Units, ParseRateAndDuration) {
  EXPECT_EQ(parse_rate_bits("1gbit"), 1'000'000'000u);
  EXPECT_EQ(parse_rate_bits("200mbit"), 200'000'000u);
  EXPECT_THROW(parse_rate_bits("200MB"), Error);
  EXPECT_DOUBLE_EQ(parse_duration("2s"), 2.0);
  EXPECT_DOUBLE_EQ(parse_duration("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("3"), 3.0);
  EXPECT_THROW(parse_duration("2 fortnights"), Error);
}

// Past uint64_t a rate would wrap (to 0, which [link] nominal reads as
// "detect"): every figure outside 1 bit/s .. kMaxRateBits is a config error.
TEST(Units, ParseRateRefusesOverflowAndZero) {
  EXPECT_EQ(parse_rate_bits("100000gbit"), 100'000'000'000'000u);  // kMaxRateBits itself
  for (const char* bad :
       {"99999999999999999999999gbit", "100001gbit", "18446744073709551616bit", "0bit", "0.5bit"}) {
    try {
      parse_rate_bits(bad, "link.nominal");
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConfig) << bad;
      EXPECT_EQ(std::string(e.what()).rfind("link.nominal: ", 0), 0u) << e.what();
      EXPECT_FALSE(e.hint().empty()) << bad;
    }
  }
}

TEST(Units, Format) {
  EXPECT_EQ(format_size(10'000'000), "10 MB");
  EXPECT_EQ(format_size(1u << 20), "1 MiB");
  EXPECT_EQ(format_size(100'000'000), "100 MB");
  EXPECT_EQ(format_mbps(117e6), "117 MB/s");
  EXPECT_EQ(format_mbps(49.1e6), "49.1 MB/s");
  EXPECT_EQ(format_rate_bits(1e9), "1 Gbit/s");
  EXPECT_EQ(format_rate_bits(936e6), "936 Mbit/s");
}

}  // namespace cp
