#include "app/terminal.h"

#include <gtest/gtest.h>

#include <iostream>

#include "core/error.h"

namespace cp::app {
namespace {

// `--server ''` (or blank, or with an ESC in it) is a config error naming the
// option, before anything connects.
TEST(CheckedHost, RefusesEmptyBlankAndControlCharacters) {
  EXPECT_EQ(checked_host("server", "nas"), "nas");
  EXPECT_EQ(checked_host("client", "local"), "local");
  for (const char* bad : {"", "  ", "nas\x1b[2J", "nas\nlocal"}) {
    for (const char* option : {"server", "client"}) {
      try {
        checked_host(option, bad);
        ADD_FAILURE() << "'" << bad << "' was taken";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kConfig);
        EXPECT_EQ(e.key(), std::string("--") + option);
        EXPECT_FALSE(e.hint().empty());
        EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << e.what();
      }
    }
  }
}

TEST(SecurityControlChars, EscapedStdoutEscapesWhatPassesThrough) {
  testing::internal::CaptureStdout();
  {
    EscapedStdout escaped;
    std::cout << "nas: removed /dev/shm/x\x1b]0;owned\x07 (gone)\n";
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(),
            "nas: removed /dev/shm/x\\x1b]0;owned\\x07 (gone)\n");
}

}  // namespace
}  // namespace cp::app
