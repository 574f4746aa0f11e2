// A Session served by a helper process: for a driver whose sessions cannot
// run in threads side by side (libsmbclient: Debian 12's build has no
// smbc_thread_posix), the small-file pass keeps its extra operations in
// flight through sessions each in a process of its own, driven from a
// thread of the pass. Each call is a request over a socketpair and its
// answer; a file's bytes travel whole (the pass's files are at most 1 MiB),
// so a call's time includes a local copy to the helper and back.
#pragma once

#include <functional>
#include <memory>

#include "transfer/driver.h"

namespace cp::transfer {

// In a helper process: closes every descriptor but its socket `fd` (the
// parent's connections and the agent's channel are the parent's) and puts
// stdin, stdout and stderr on /dev/null.
void keep_only(int fd);

// Forks a helper that runs `connect()` (in the helper: its own connection
// and login) and serves the session's calls until the returned Session is
// destroyed (then it logs out and ends; it also ends with this process).
// The helper's failure to connect is thrown here, as the Error it was.
std::unique_ptr<Session> fork_session(const std::function<std::unique_ptr<Session>()>& connect);

}  // namespace cp::transfer
