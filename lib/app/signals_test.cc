#include "app/signals.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "app/run_status.h"

namespace cp::app {
namespace {

// In a child, so the test runner's own handlers stay as they were.
int child_exit(bool exit_on_second, int signals) {
  const pid_t pid = fork();
  if (pid == 0) {
    static CancelToken token;
    install_stop_signals(token, exit_on_second);
    for (int i = 0; i < signals; ++i) raise(i % 2 ? SIGTERM : SIGINT);
    // 0: not cancelled, 1: cancelled and still running.
    _exit(token.cancelled() ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

TEST(StopSignals, FirstSignalCancelsAndTheCommandGoesOn) {
  EXPECT_EQ(child_exit(true, 1), 1);
  EXPECT_EQ(child_exit(false, 1), 1);
}

TEST(StopSignals, SecondSignalExitsAtOnceOnlyWhenAsked) {
  EXPECT_EQ(child_exit(true, 2), kExitInterrupted);
  // tune: a second signal must not cut the knobs' restore short.
  EXPECT_EQ(child_exit(false, 2), 1);
}

TEST(StopSignals, NoSignalLeavesTheTokenAlone) { EXPECT_EQ(child_exit(true, 0), 0); }

}  // namespace
}  // namespace cp::app
