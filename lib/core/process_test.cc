#include "core/process.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <thread>

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

// The start time that tells a live process from a reused pid is the same
// whichever thread asks (qemu-user fakes /proc/self/stat per thread), and a
// reaped child has none.
TEST(Process, StartTicksAreTheProcesssFromEveryThread) {
  const std::optional<int64_t> main_ticks = process_start_ticks(getpid());
  ASSERT_TRUE(main_ticks.has_value());
  std::optional<int64_t> other;
  std::thread([&] { other = process_start_ticks(getpid()); }).join();
  EXPECT_EQ(other, main_ticks);
  Child gone({"true"});
  const int64_t pid = gone.pid();
  ASSERT_EQ(gone.wait(10), 0);
  EXPECT_FALSE(process_start_ticks(pid).has_value());
}

TEST(Process, MissingProgramIsAnError) {
  EXPECT_THROW(run_command({"/nonexistent/program"}), Error);
}

// Found (or not) before spawning, so it holds where the spawn forks instead of
// vforking (qemu-user): a name on no PATH dir, and a file that is not executable.
TEST(Process, ProgramNotOnPathOrNotExecutableIsAnError) {
  EXPECT_THROW(run_command({"chokepoint-no-such-program-here"}), Error);
  char tmpl[] = "/tmp/cp_process_test_XXXXXX";
  const int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ::chmod(tmpl, 0644);
  EXPECT_THROW(run_command({tmpl}), Error);
  ::unlink(tmpl);
  // A program on PATH still runs.
  EXPECT_EQ(run_command({"true"}).exit_code, 0);
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
