#include "lab/sys.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "core/text.h"

namespace cp::lab::sys {
namespace {

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

bool same_inode(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::optional<std::string> read_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Error(ErrorKind::kIo, fmt::format("cannot read {}: {}", path, errno_text(errno)));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int err = errno;
      close(fd);
      throw Error(ErrorKind::kIo, fmt::format("cannot read {}: {}", path, errno_text(err)));
    }
  }
  close(fd);
  return out;
}

void write_file(const std::string& path, std::string_view text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot write {}: {}", tmp, errno_text(errno)));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      unlink(tmp.c_str());
      throw Error(ErrorKind::kIo, fmt::format("cannot write {}: {}", tmp, errno_text(err)));
    }
    done += static_cast<size_t>(n);
  }
  // open() applies the umask; the lab's files need exactly `mode`.
  fchmod(fd, mode);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    throw Error(ErrorKind::kIo, fmt::format("cannot write {}: {}", path, errno_text(err)));
  }
}

void make_dirs(const std::string& path, mode_t mode) {
  CP_CHECK(!path.empty());
  for (size_t pos = 1;; ++pos) {
    pos = path.find('/', pos);
    const std::string part = path.substr(0, pos);
    if (mkdir(part.c_str(), mode) != 0 && errno != EEXIST) {
      throw Error(ErrorKind::kIo, fmt::format("cannot create {}: {}", part, errno_text(errno)));
    }
    if (pos == std::string::npos) break;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error(ErrorKind::kIo, fmt::format("{} is not a directory", path));
  }
}

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

namespace {
// nftw has no user pointer; remove_tree is only called under the lab lock.
thread_local std::vector<std::string>* g_remove_errors = nullptr;

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = (type == FTW_DP || type == FTW_D || type == FTW_DNR) ? rmdir(path) : unlink(path);
  if (rc != 0 && errno != ENOENT) {
    g_remove_errors->push_back(fmt::format("{}: {}", path, errno_text(errno)));
  }
  return 0;  // go on with the rest
}
}  // namespace

void remove_tree(const std::string& path) {
  if (!exists(path)) return;
  std::vector<std::string> errors;
  g_remove_errors = &errors;
  // FTW_MOUNT: never descend into another file system mounted below `path`.
  const int rc = nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  g_remove_errors = nullptr;
  if (rc != 0) errors.push_back(fmt::format("{}: {}", path, errno_text(errno)));
  if (!errors.empty() || exists(path)) {
    std::string list;
    for (size_t i = 0; i < errors.size() && i < 5; ++i) list += (i ? "; " : "") + errors[i];
    throw Error(ErrorKind::kIo, fmt::format("cannot remove {} ({})", path, list),
                "something may be mounted below it (see `findmnt -R " + path +
                    "`): unmount it and run `chokepoint lab down` again");
  }
}

std::string tail(const std::string& path, size_t max_lines) {
  std::optional<std::string> text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return {};
  }
  if (!text) return {};
  std::string s(trim(*text));
  size_t pos = s.size();
  for (size_t n = 0; n < max_lines && pos != std::string::npos && pos > 0; ++n) {
    pos = s.rfind('\n', pos - 1);
  }
  return pos == std::string::npos ? s : s.substr(pos + 1);
}

bool process_is(pid_t pid, const std::string& comm, const std::string& needle) {
  if (pid <= 0 || !process_alive(pid)) return false;
  if (process_comm(pid) != comm) return false;
  return process_cmdline(pid).find(needle) != std::string::npos;
}

pid_t read_pid_file(const std::string& path) {
  const std::optional<std::string> text = read_file(path);
  const std::vector<pid_t> pids = text ? parse_pids(*text) : std::vector<pid_t>{};
  return pids.size() == 1 ? pids[0] : 0;
}

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  const std::string stat = cp::read_file(fmt::format("/proc/{}/stat", pid)).value_or("");
  // "pid (comm) S ...": the state follows the last ')'.
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return false;
  const char state = stat[close_paren + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

std::string process_comm(pid_t pid) {
  return std::string(trim(cp::read_file(fmt::format("/proc/{}/comm", pid)).value_or("")));
}

std::string process_cmdline(pid_t pid) {
  std::string s = cp::read_file(fmt::format("/proc/{}/cmdline", pid)).value_or("");
  for (char& c : s)
    if (c == '\0') c = ' ';
  return std::string(trim(s));
}

void stop_process(pid_t pid, double grace_s) {
  if (pid <= 0 || !process_alive(pid)) return;
  ::kill(pid, SIGTERM);
  if (!wait_exit({pid}, grace_s).empty()) {
    ::kill(pid, SIGKILL);
    wait_exit({pid}, grace_s);
  }
}

std::vector<pid_t> wait_exit(const std::vector<pid_t>& pids, double timeout_s) {
  const double deadline = monotonic_seconds() + timeout_s;
  std::vector<pid_t> alive;
  for (;;) {
    alive.clear();
    for (pid_t p : pids)
      if (process_alive(p)) alive.push_back(p);
    if (alive.empty() || monotonic_seconds() >= deadline) return alive;
    sleep_s(0.05);
  }
}

bool netns_exists(const std::string& name) { return exists("/run/netns/" + name); }

bool process_in_netns(pid_t pid, const std::string& name) {
  return same_inode(fmt::format("/proc/{}/ns/net", pid), "/run/netns/" + name);
}

bool same_netns_as_self(const std::string& name) {
  return same_inode("/proc/self/ns/net", "/run/netns/" + name);
}

std::vector<pid_t> parse_pids(std::string_view text) {
  std::vector<pid_t> out;
  pid_t cur = 0;
  bool in_number = false, clean = true;
  auto flush = [&] {
    if (in_number && clean && cur > 0) out.push_back(cur);
    cur = 0;
    in_number = false;
    clean = true;
  };
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      if (cur > 100000000) clean = false;  // beyond any pid_max
      cur = cur * 10 + (c - '0');
      in_number = true;
    } else if (c == '\n' || c == ' ' || c == '\t') {
      flush();
    } else {
      clean = false;
      in_number = true;
    }
  }
  flush();
  return out;
}

std::vector<pid_t> netns_pids(const std::string& name) {
  if (!netns_exists(name)) return {};
  RunResult r = run_command({"ip", "netns", "pids", name}, {}, 30);
  if (r.exit_code != 0) return {};
  return parse_pids(r.out);
}

bool link_exists(const std::string& ifname) {
  return run_command({"ip", "-o", "link", "show", "dev", ifname}, {}, 30).exit_code == 0;
}

std::string loop_backing_file(const std::string& device) {
  const size_t slash = device.rfind('/');
  const std::string name = slash == std::string::npos ? device : device.substr(slash + 1);
  return std::string(trim(cp::read_file("/sys/block/" + name + "/loop/backing_file").value_or("")));
}

std::vector<std::string> loop_devices_backed_by(const std::string& file) {
  std::vector<std::string> out;
  DIR* d = opendir("/sys/block");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("loop", 0) != 0) continue;
    std::string backing = loop_backing_file(name);
    constexpr std::string_view kDeleted = " (deleted)";
    if (backing.ends_with(kDeleted)) backing.resize(backing.size() - kDeleted.size());
    if (!backing.empty() && backing == file) out.push_back("/dev/" + name);
  }
  closedir(d);
  return out;
}

bool ssh_banner(const std::string& ipv4, int port, double timeout_s) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  CP_CHECK(inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr) == 1);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const double deadline = monotonic_seconds() + timeout_s;
  auto wait_for = [&](short events) {
    for (;;) {
      const double left = deadline - monotonic_seconds();
      if (left <= 0) return false;
      pollfd p{fd, events, 0};
      int rc = poll(&p, 1, static_cast<int>(left * 1000) + 1);
      if (rc < 0 && errno == EINTR) continue;
      return rc > 0;
    }
  };
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || errno == EINPROGRESS) {
    int err = 0;
    socklen_t len = sizeof err;
    if (wait_for(POLLOUT) && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
      std::string got;
      char buf[256];
      while (got.size() < 4 && wait_for(POLLIN)) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
      ok = got.rfind("SSH-", 0) == 0;
    }
  }
  close(fd);
  return ok;
}

bool tcp_accepts_in_netns(const std::string& netns, const std::string& ipv4, int port,
                          double timeout_s) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  CP_CHECK(inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr) == 1);
  bool ok = false;
  // setns changes only the calling thread's namespace: a throwaway thread
  // keeps this process where it is.
  std::thread t([&] {
    const int ns = open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0) return;
    const bool joined = setns(ns, CLONE_NEWNET) == 0;
    close(ns);
    if (!joined) return;
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = poll(&p, 1, static_cast<int>(timeout_s * 1000) + 1) > 0 &&
           getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    close(fd);
  });
  t.join();
  return ok;
}

FileLock::FileLock(const std::string& path, double timeout_s) {
  // O_CLOEXEC: the hosts' sshds, started while this is held, must not inherit it.
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot open lock {}: {}", path, errno_text(errno)));
  }
  const double deadline = monotonic_seconds() + timeout_s;
  while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || monotonic_seconds() >= deadline) {
      const int err = errno;
      close(fd_);
      fd_ = -1;
      throw Error(ErrorKind::kIo,
                  fmt::format("another `chokepoint lab up/down` holds {} ({})", path,
                              err == EWOULDBLOCK ? "still busy after waiting" : errno_text(err)),
                  "wait for it to finish, then try again");
    }
    sleep_s(0.1);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);  // releases the flock
}

std::optional<User> find_user(const std::string& name) {
  // getpwnam_r writes into our buffer: nothing else in the process can change
  // the answer. The buffer holds the entry's strings; ERANGE: a bigger one.
  const long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 1024);
  passwd entry{};
  passwd* found = nullptr;
  for (;;) {
    const int rc = getpwnam_r(name.c_str(), &entry, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    // glibc reports "not found" as 0 with no entry; some NSS modules as ENOENT.
    if (rc == 0 || rc == ENOENT || rc == ESRCH) break;
    throw Error(ErrorKind::kIo, fmt::format("cannot look up user {}: {}", name, errno_text(rc)),
                "check /etc/nsswitch.conf and the passwd database (`getent passwd " + name + "`)");
  }
  if (!found) return std::nullopt;
  User u;
  u.name = found->pw_name ? found->pw_name : "";
  u.uid = found->pw_uid;
  u.gid = found->pw_gid;
  u.comment = found->pw_gecos ? found->pw_gecos : "";
  u.home = found->pw_dir ? found->pw_dir : "";
  return u;
}

}  // namespace cp::lab::sys
