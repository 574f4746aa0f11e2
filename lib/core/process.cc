#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"

extern char** environ;

namespace cp {
namespace {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorKind::kIo, "pipe: " + errno_text(errno));
    r = fds[0];
    w = fds[1];
  }
};

// Whether execvp would find `program`: a path with a '/' as it is, else the
// first executable file of that name in $PATH (execvp's default when unset).
// 0, or the errno execvp would give. Checked before spawning because
// posix_spawnp reports a failed exec only where the C library spawns with
// CLONE_VFORK: qemu-user (the aarch64 tests) and some libcs fork instead, and
// a missing program then looks like a child that exited 127.
int find_executable(const std::string& program) {
  auto check = [](const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (!S_ISREG(st.st_mode)) return EACCES;
    return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (program.find('/') != std::string::npos) return check(program);
  const char* env = std::getenv("PATH");
  const std::string path = env != nullptr ? env : "/bin:/usr/bin";
  int first = ENOENT;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find(':', pos);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end == pos ? "." : path.substr(pos, end - pos);
    pos = end + 1;
    const int rc = check(dir + "/" + program);
    if (rc == 0) return 0;
    if (rc == EACCES && first == ENOENT) first = EACCES;  // as execvp: EACCES wins over ENOENT
  }
  return first;
}

pid_t spawn(const std::vector<std::string>& argv, int in, int out, int err) {
  CP_CHECK(!argv.empty());
  if (const int rc = find_executable(argv[0]); rc != 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot run '{}': {}", argv[0], errno_text(rc)),
                "install it (scripts/install-deps.sh installs what chokepoint needs)");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_adddup2(&fa, out, 1);
  if (err >= 0) posix_spawn_file_actions_adddup2(&fa, err, 2);
  // The child starts with default signal dispositions and an empty mask.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot run '{}': {}", argv[0], errno_text(rc)),
                "install it (scripts/install-deps.sh installs what chokepoint needs)");
  }
  return pid;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string shell_quote(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,@%+") == std::string::npos) {
    return w;
  }
  std::string out = "'";
  for (char c : w) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += shell_quote(a);
  }
  return s;
}

RunResult run_command(const std::vector<std::string>& argv, const std::string& input,
                      double timeout_s) {
  Pipe in, out, err;
  pid_t pid;
  try {
    pid = spawn(argv, in.r, out.w, err.w);
  } catch (...) {
    for (int fd : {in.r, in.w, out.r, out.w, err.r, err.w}) close(fd);
    throw;
  }
  close(in.r);
  close(out.w);
  close(err.w);
  RunResult res;
  size_t written = 0;
  int win = in.w;
  if (input.empty()) {
    close(win);
    win = -1;
  } else {
    fcntl(win, F_SETFL, O_NONBLOCK);
  }
  int rout = out.r, rerr = err.r;
  const double deadline = monotonic_seconds() + timeout_s;
  char buf[65536];
  while (rout >= 0 || rerr >= 0) {
    pollfd fds[3];
    int n = 0;
    if (rout >= 0) fds[n++] = {rout, POLLIN, 0};
    if (rerr >= 0) fds[n++] = {rerr, POLLIN, 0};
    if (win >= 0) fds[n++] = {win, POLLOUT, 0};
    const double left = deadline - monotonic_seconds();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      for (int fd : {rout, rerr, win})
        if (fd >= 0) close(fd);
      throw Error(ErrorKind::kIo,
                  fmt::format("'{}' did not finish within {:.0f} s", shell_join(argv), timeout_s));
    }
    int rc = poll(fds, n, static_cast<int>(left * 1000) + 1);
    if (rc < 0 && errno == EINTR) continue;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == win) {
        ssize_t w = write(win, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) written = input.size();
        if (written == input.size()) {
          close(win);
          win = -1;
        }
        continue;
      }
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (fds[i].fd == rout ? res.out : res.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        close(fds[i].fd);
        (fds[i].fd == rout ? rout : rerr) = -1;
      }
    }
  }
  if (win >= 0) close(win);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  res.exit_code = decode_status(status);
  return res;
}

std::string run_checked(const std::vector<std::string>& argv, const std::string& input,
                        double timeout_s) {
  RunResult r = run_command(argv, input, timeout_s);
  if (r.exit_code != 0) {
    std::string err = r.err.empty() ? r.out : r.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    throw Error(ErrorKind::kIo,
                fmt::format("'{}' failed (exit {}): {}", shell_join(argv), r.exit_code, err));
  }
  return r.out;
}

Child::Child(const std::vector<std::string>& argv) {
  Pipe in, out;
  try {
    pid_ = spawn(argv, in.r, out.w, -1);
  } catch (...) {
    for (int fd : {in.r, in.w, out.r, out.w}) close(fd);
    throw;
  }
  close(in.r);
  close(out.w);
  in_ = in.w;
  out_ = out.r;
}

namespace {

// Fields 3.. of /proc/PID/task/PID/stat (after the last ')': comm may hold
// spaces or ')'): the main thread's, whose state and start time are the
// process's. Not /proc/PID/stat, which qemu-user (the aarch64 tests) fakes for
// its own pid with a start time per calling thread, so that one thread of a
// live process saw another's record as of a gone process.
std::optional<std::string> stat_fields(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  auto stat = read_file(fmt::format("/proc/{}/task/{}/stat", pid, pid));
  if (!stat) return std::nullopt;
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  return stat->substr(close + 1);
}

}  // namespace

std::optional<int64_t> process_start_ticks(int64_t pid) {
  auto fields = stat_fields(pid);
  if (!fields) return std::nullopt;
  std::istringstream rest(*fields);
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
    if (i == 3 && (field == "Z" || field == "X")) return std::nullopt;
  }
  char* end = nullptr;
  long long ticks = std::strtoll(field.c_str(), &end, 10);
  if (end == field.c_str() || *end != '\0') return std::nullopt;
  return ticks;
}

char process_state(int64_t pid) {
  auto fields = stat_fields(pid);
  if (!fields) return 0;
  std::istringstream rest(*fields);
  std::string state;
  rest >> state;
  return state.empty() ? 0 : state[0];
}

std::string boot_id() {
  auto id = read_file("/proc/sys/kernel/random/boot_id");
  if (!id) return {};
  while (!id->empty() && (id->back() == '\n' || id->back() == ' ')) id->pop_back();
  return *id;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

Child::~Child() {
  close_stdin();
  if (wait(0) < 0) {
    kill(SIGTERM);
    if (wait(2) < 0) {
      kill(SIGKILL);
      wait(5);
    }
  }
  if (out_ >= 0) close(out_);
}

void Child::close_stdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

void Child::kill(int sig) {
  if (pid_ > 0 && status_ < 0) ::kill(pid_, sig);
}

void Child::detach() {
  close_stdin();
  if (out_ >= 0) close(out_);
  out_ = -1;
  status_ = 0;  // nothing left to wait for
}

int Child::wait(double timeout_s) {
  if (status_ >= 0) return status_;
  const double deadline = monotonic_seconds() + timeout_s;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = decode_status(status);
      return status_;
    }
    if (monotonic_seconds() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string find_program(const std::string& name) {
  const char* env = std::getenv("PATH");
  const std::string path = std::string(env ? env : "") + ":/usr/sbin:/sbin:/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find(':', pos);
    if (end == std::string::npos) end = path.size();
    const std::string dir = path.substr(pos, end - pos);
    pos = end + 1;
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace cp
