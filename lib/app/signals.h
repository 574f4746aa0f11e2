// The one signal setup of the commands that run stages (diagnose, tune).
#pragma once

#include "core/clock.h"

namespace cp::app {

// SIGINT, SIGTERM and SIGHUP cancel `token` (the command then ends in order:
// agents stopped, remote files removed, the run marked); SIGPIPE is ignored
// (a dead peer is an error on write). With `exit_on_second`, a second signal
// exits at once with kExitInterrupted. `token` must outlive the process's
// handling of signals (a static).
void install_stop_signals(CancelToken& token, bool exit_on_second);

}  // namespace cp::app
