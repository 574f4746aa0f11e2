#include "core/ini.h"

#include <gtest/gtest.h>

namespace cp {
namespace {

using Kind = IniLine::Kind;

TEST(Ini, SectionsEntriesAndLineNumbers) {
  const auto lines = read_ini("# top\n[disk]\nsizes = 10MB, 100MB\n\n[ share a ]\nurl=smb://h/s\n");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].kind, Kind::kSection);
  EXPECT_EQ(lines[0].section, "disk");
  EXPECT_EQ(lines[0].line, 2);
  EXPECT_EQ(lines[1].kind, Kind::kEntry);
  EXPECT_EQ(lines[1].section, "disk");
  EXPECT_EQ(lines[1].key, "sizes");
  EXPECT_EQ(lines[1].value, "10MB, 100MB");
  EXPECT_EQ(lines[1].line, 3);
  EXPECT_EQ(lines[2].section, "share a");
  EXPECT_EQ(lines[3].key, "url");
  EXPECT_EQ(lines[3].value, "smb://h/s");
  EXPECT_EQ(lines[3].line, 6);
}

TEST(Ini, OddLinesAreLeftToTheCaller) {
  const auto lines = read_ini("[disk\ncount 3\n[tcp] extra\n= 1\n");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].kind, Kind::kOther);  // no ']'
  EXPECT_EQ(lines[1].kind, Kind::kOther);  // no '='
  EXPECT_EQ(lines[2].kind, Kind::kSection);
  EXPECT_EQ(lines[2].text, "[tcp] extra");  // the plan refuses what follows ']'
  EXPECT_EQ(lines[3].kind, Kind::kEntry);
  EXPECT_EQ(lines[3].key, "");
}

TEST(Ini, InlineCommentsOnlyWhenAsked) {
  EXPECT_EQ(read_ini("[a]\ncount = 3  # few\n", {.inline_comments = true})[1].value, "3");
  EXPECT_EQ(read_ini("[a]\ncount = 3  # few\n")[1].value, "3  # few");
}

TEST(Ini, SambaStyleCommentsAndContinuations) {
  const IniSyntax samba{.comment_chars = "#;", .continuation = true};
  const auto lines = read_ini(
      "; c\n[Global]\n  server string = a \\\n    b\n\t# x\nmin protocol = SMB2 ; kept\n", samba);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].section, "Global");
  EXPECT_EQ(lines[1].key, "server string");
  EXPECT_EQ(lines[1].value, "a b");
  EXPECT_EQ(lines[1].line, 3);               // where the continued line starts
  EXPECT_EQ(lines[2].value, "SMB2 ; kept");  // smb.conf has no inline comments
}

}  // namespace
}  // namespace cp
