// System helpers for the lab: files, /proc, /sys, namespaces, a lock, a TCP
// probe. Internal to lib/lab (lab.cc and status.cc).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cp::lab::sys {

// The file's bytes; nullopt when it does not exist; Error(kIo) on other failures.
std::optional<std::string> read_file(const std::string& path);
// Writes via a temporary file and rename, so readers never see half a file.
void write_file(const std::string& path, std::string_view text, mode_t mode);
// mkdir -p; Error(kIo) naming the path.
void make_dirs(const std::string& path, mode_t mode);
bool exists(const std::string& path);
// Removes `path` and what it holds without crossing into other file systems
// (a mount below it stays, and the error names it). Absent path: no-op.
void remove_tree(const std::string& path);
// The last `max_lines` lines of a text file, for error messages; "" if absent.
std::string tail(const std::string& path, size_t max_lines);

// Exists and has not exited (a zombie counts as exited).
bool process_alive(pid_t pid);
// /proc/<pid>/comm, or "" when gone.
std::string process_comm(pid_t pid);
// /proc/<pid>/cmdline with NULs as spaces, or "" when gone.
std::string process_cmdline(pid_t pid);
// Alive, named `comm` (/proc/<pid>/comm), with `needle` in its command line
// (the lab's config file): a daemon the lab started, not a reused pid.
bool process_is(pid_t pid, const std::string& comm, const std::string& needle);
// The one pid a daemon's pid file holds; 0 when absent, empty or several.
pid_t read_pid_file(const std::string& path);
// Waits up to timeout_s for all of `pids` to exit; returns those still alive.
std::vector<pid_t> wait_exit(const std::vector<pid_t>& pids, double timeout_s);
// SIGTERM, then SIGKILL if it still runs after grace_s seconds (waits for
// that too); nothing when pid <= 0 or it has exited.
void stop_process(pid_t pid, double grace_s);

// A named network namespace (/run/netns/<name>) exists.
bool netns_exists(const std::string& name);
// `pid` lives in the named network namespace.
bool process_in_netns(pid_t pid, const std::string& name);
// `pid` lives in the same network namespace as this process.
bool same_netns_as_self(const std::string& name);
// Processes in the named network namespace (`ip netns pids`); empty when it is gone.
std::vector<pid_t> netns_pids(const std::string& name);
// "12\n345\n" -> {12, 345}; ignores anything that is not a number.
std::vector<pid_t> parse_pids(std::string_view text);
// A network interface of that name exists in this process's namespace.
bool link_exists(const std::string& ifname);

// Loop devices ("/dev/loop3") whose backing file is `file` (even if deleted).
std::vector<std::string> loop_devices_backed_by(const std::string& file);
// The device's backing file, "" when it is detached.
std::string loop_backing_file(const std::string& device);

// Connects to ipv4:port and reads an SSH banner ("SSH-2.0-...") within timeout_s.
bool ssh_banner(const std::string& ipv4, int port, double timeout_s);
// Connects to ipv4:port from inside the named network namespace (on a
// helper thread that joins it) within timeout_s; true when it accepted.
bool tcp_accepts_in_netns(const std::string& netns, const std::string& ipv4, int port,
                          double timeout_s);

// A local account, copied out of the passwd database. Never hold getpwnam()'s
// own answer: it lives in a static buffer that the next getpwnam anywhere in
// the process overwrites, and a lookup that finds nothing leaves the database's
// last line there (libnfs 4.0 calls getpwnam for each NFSv4 owner it parses).
struct User {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string comment;  // the GECOS field
  std::string home;
};
// nullopt when there is no such user; Error(kIo) when the lookup itself fails.
std::optional<User> find_user(const std::string& name);

// An exclusive flock on `path` (created if missing), held for the object's
// life. Waits up to timeout_s, then throws Error(kIo) naming the lock.
class FileLock {
 public:
  FileLock(const std::string& path, double timeout_s);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace cp::lab::sys
