// Child processes: run a command to completion (lab setup, tc, uname), or
// keep one running with pipes to its stdin/stdout (a local agent).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cp {

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv[0] (searched in PATH) with `input` on stdin; returns its output.
// Throws Error(kIo) when it cannot start or outlives `timeout_s` (it is killed).
RunResult run_command(const std::vector<std::string>& argv, const std::string& input = {},
                      double timeout_s = 120);

// As run_command, but a non-zero exit throws Error(kIo) quoting its stderr.
std::string run_checked(const std::vector<std::string>& argv, const std::string& input = {},
                        double timeout_s = 120);

// "a b 'c d'" for messages and logs.
std::string shell_join(const std::vector<std::string>& argv);
// Quotes one word for a POSIX shell command line.
std::string shell_quote(const std::string& word);

// Who a process is, to tell a live owner from a gone one (a reused pid does
// not count): field 22 of its main thread's stat, /proc/PID/task/PID/stat,
// which is /proc/PID/stat's (start time, clock ticks after boot); nullopt when
// the process does not exist or is a zombie.
std::optional<int64_t> process_start_ticks(int64_t pid);
// /proc/sys/kernel/random/boot_id ("" when unreadable): ticks of another boot mean nothing.
std::string boot_id();
std::string host_name();  // gethostname(), "" on error
// The path of an executable `name` in $PATH, then /usr/sbin, /sbin, /usr/bin,
// /bin (tc, testparm and the daemons live in sbin, often outside an
// unprivileged PATH); "" when none.
std::string find_program(const std::string& name);
// The single-letter state of /proc/PID/stat ('R', 'S', 'T' stopped, ...); 0 when gone.
char process_state(int64_t pid);

// A running child with its stdin and stdout on pipes; stderr is inherited.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv);
  ~Child();  // kills (SIGTERM, then SIGKILL) and reaps if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return in_; }
  int stdout_fd() const { return out_; }
  void close_stdin();
  // Waits up to timeout_s for exit; returns the exit code or -1 if still running.
  int wait(double timeout_s);
  void kill(int sig);
  // Forgets the child without waiting for it or killing it (it is left to
  // finish on its own: an abandoned agent cleans up when it wakes).
  void detach();

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  int status_ = -1;
};

}  // namespace cp
