#include "core/json_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace cp {

TEST(JsonUtil, NullAndEmptyForBadText) {
  EXPECT_TRUE(parse_json_or_null("").is_null());
  EXPECT_TRUE(parse_json_or_null("{nope").is_null());
  EXPECT_EQ(parse_json_or_null("[1,2]").as_array().size(), 2u);
  EXPECT_TRUE(parse_json_object("[1,2]").empty());
  EXPECT_TRUE(parse_json_object("").empty());
  EXPECT_EQ(parse_json_object(R"({"a":1})").at("a").as_int64(), 1);
}

TEST(JsonUtil, IntegerInRangeOfItsType) {
  namespace json = boost::json;
  EXPECT_EQ(json_integer<uint64_t>(json::value(int64_t{7})), 7u);
  EXPECT_EQ(json_integer<uint64_t>(json::value(UINT64_MAX)), UINT64_MAX);
  EXPECT_EQ(json_integer<uint64_t>(json::value(int64_t{-1})), std::nullopt);
  EXPECT_EQ(json_integer<int64_t>(json::value(int64_t{-5})), -5);
  EXPECT_EQ(json_integer<int64_t>(json::value(uint64_t{INT64_MAX})), INT64_MAX);
  EXPECT_EQ(json_integer<int64_t>(json::value(uint64_t{INT64_MAX} + 1)), std::nullopt);
  EXPECT_EQ(json_integer<int64_t>(json::value("5")), std::nullopt);
  EXPECT_EQ(json_integer<int64_t>(json::value(nullptr)), std::nullopt);
}

TEST(JsonUtil, DoubleIsAnIntegerOnlyWhenTruncatedInRange) {
  namespace json = boost::json;
  EXPECT_EQ(json_integer<int64_t>(json::value(2.9)), std::nullopt);
  EXPECT_EQ(json_integer<int64_t>(json::value(2.9), true), 2);
  EXPECT_EQ(json_integer<int64_t>(json::value(-2.9), true), -2);
  EXPECT_EQ(json_integer<uint64_t>(json::value(-0.5), true), std::nullopt);
  EXPECT_EQ(json_integer<uint64_t>(json::value(1e19), true), uint64_t{10000000000000000000u});
  EXPECT_EQ(json_integer<uint64_t>(json::value(0x1p64), true), std::nullopt);
  EXPECT_EQ(json_integer<int64_t>(json::value(0x1p63), true), std::nullopt);
  EXPECT_EQ(json_integer<int64_t>(json::value(-0x1p63), true), INT64_MIN);
  EXPECT_EQ(json_integer<int64_t>(json::value(std::nan("")), true), std::nullopt);
}

}  // namespace cp
