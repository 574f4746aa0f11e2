#include "core/json_util.h"

#include <gtest/gtest.h>

namespace cp {

TEST(JsonUtil, NullAndEmptyForBadText) {
  EXPECT_TRUE(parse_json_or_null("").is_null());
  EXPECT_TRUE(parse_json_or_null("{nope").is_null());
  EXPECT_EQ(parse_json_or_null("[1,2]").as_array().size(), 2u);
  EXPECT_TRUE(parse_json_object("[1,2]").empty());
  EXPECT_TRUE(parse_json_object("").empty());
  EXPECT_EQ(parse_json_object(R"({"a":1})").at("a").as_int64(), 1);
}

}  // namespace cp
