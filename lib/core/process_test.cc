#include "core/process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/error.h"

namespace cp {

TEST(Process, RunCapturesOutputAndExit) {
  RunResult r = run_command({"sh", "-c", "cat; echo err >&2; exit 3"}, "hello");
  EXPECT_EQ(r.out, "hello");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.exit_code, 3);
}

TEST(Process, RunCheckedQuotesStderr) {
  try {
    run_checked({"sh", "-c", "echo boom >&2; exit 1"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos);
  }
}

TEST(Process, MissingProgramIsAnError) {
  EXPECT_THROW(run_command({"/nonexistent/program"}), Error);
}

TEST(Process, TimeoutKills) { EXPECT_THROW(run_command({"sleep", "5"}, "", 0.2), Error); }

TEST(Process, ChildPipes) {
  Child c({"cat"});
  ASSERT_EQ(write(c.stdin_fd(), "ping", 4), 4);
  c.close_stdin();
  char buf[8] = {};
  ASSERT_EQ(read(c.stdout_fd(), buf, sizeof buf), 4);
  EXPECT_STREQ(buf, "ping");
  EXPECT_EQ(c.wait(5), 0);
}

TEST(Process, ShellQuote) {
  EXPECT_EQ(shell_quote("plain-word_1.txt"), "plain-word_1.txt");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_join({"a", "b c"}), "a 'b c'");
}

}  // namespace cp
