#include "core/text.h"

#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

namespace cp {
namespace {

using Views = std::vector<std::string_view>;

TEST(Text, TrimDropsSurroundingWhitespaceOnly) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t "), "");
}

TEST(Text, SplitKeepsEmptyPieces) {
  EXPECT_EQ(split("a,,b", ','), (Views{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (Views{""}));
  EXPECT_EQ(split("a,", ','), (Views{"a", ""}));
}

TEST(Text, SplitWsDropsRuns) {
  EXPECT_EQ(split_ws("  cpu  1 2\n"), (Views{"cpu", "1", "2"}));
  EXPECT_TRUE(split_ws(" \n").empty());
}

TEST(Text, LowerJoinAndYesNo) {
  EXPECT_EQ(lower("SMB3_11 Global"), "smb3_11 global");
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(parse_yes_no("on"), true);
  EXPECT_EQ(parse_yes_no("0"), false);
  EXPECT_EQ(parse_yes_no("Yes"), std::nullopt);
  EXPECT_EQ(parse_yes_no(""), std::nullopt);
}

TEST(Text, ReadFileReadsWholeFilesAndProcFiles) {
  char dir[] = "/tmp/cp_text_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/f";
  std::string big(100000, 'x');
  big[99999] = 'y';
  std::ofstream(path) << big;
  EXPECT_EQ(read_file(path), big);
  // /proc files report a size of 0 but have content.
  const auto self = read_file("/proc/self/stat");
  ASSERT_TRUE(self.has_value());
  EXPECT_FALSE(self->empty());
  EXPECT_EQ(read_file(std::string(dir) + "/missing"), std::nullopt);
  EXPECT_EQ(read_file(dir), std::nullopt);  // a directory cannot be read
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace cp
