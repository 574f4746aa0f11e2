#include "app/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "app/run_status.h"

namespace cp::app {
namespace {

std::atomic<CancelToken*> g_token{nullptr};
std::atomic<bool> g_exit_on_second{false};
std::atomic<int> g_signals{0};

void on_stop_signal(int) {
  if (g_signals.fetch_add(1) >= 1 && g_exit_on_second.load()) {
    static const char msg[] = "\nchokepoint: second signal: exiting now\n";
    [[maybe_unused]] ssize_t n = write(2, msg, sizeof msg - 1);
    _exit(kExitInterrupted);
  }
  if (CancelToken* t = g_token.load()) t->cancel();
}

}  // namespace

void install_stop_signals(CancelToken& token, bool exit_on_second) {
  g_token.store(&token);
  g_exit_on_second.store(exit_on_second);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace cp::app
