#include "agent_server/run_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <cerrno>
#include <filesystem>

#include "core/clock.h"
#include "core/error.h"
#include "core/messages_json.h"
#include "core/process.h"
#include "core/random.h"

namespace cp::agent {
namespace {

namespace json = boost::json;

// A run directory without an owner record (an older chokepoint's) counts as
// left behind once nothing in it changed for this long, s.
constexpr double kUnownedAge = 3600;
// Directory levels remove_tree_at descends (each holds one fd).
constexpr int kMaxDepth = 64;

std::string pid_namespace() {
  std::error_code ec;
  auto target = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  return ec ? std::string() : target.string();
}

// The names in the directory `fd` (not "." and ".."); false when it cannot be read.
bool list_dir(int fd, std::vector<std::string>* names) {
  const int dup_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return false;
  DIR* d = ::fdopendir(dup_fd);
  if (!d) {
    ::close(dup_fd);
    return false;
  }
  ::rewinddir(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names->push_back(n);
  }
  ::closedir(d);
  return true;
}

std::string remove_tree(int parent_fd, const std::string& name, int depth) {
  const int fd = ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    if (errno != ENOTDIR && errno != ELOOP) return fmt::format("{}: {}", name, errno_text(errno));
    if (::unlinkat(parent_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      return fmt::format("{}: {}", name, errno_text(errno));
    }
    return {};
  }
  const DirFd dir(fd);
  if (depth >= kMaxDepth) return fmt::format("{}: nested deeper than {} levels", name, kMaxDepth);
  std::vector<std::string> names;
  if (!list_dir(fd, &names)) return fmt::format("{}: {}", name, errno_text(errno));
  std::string first_error;
  for (const std::string& n : names) {
    struct stat st {};
    std::string err;
    if (::fstatat(fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      err = remove_tree(fd, n, depth + 1);
    } else if (::unlinkat(fd, n.c_str(), 0) != 0 && errno != ENOENT) {
      err = fmt::format("{}: {}", n, errno_text(errno));
    }
    if (!err.empty() && first_error.empty()) first_error = name + "/" + err;
  }
  if (!first_error.empty()) return first_error;
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return fmt::format("{}: {}", name, errno_text(errno));
  }
  return {};
}

// The owner record of the run directory `dir_fd`, read only when it is a
// regular file of this uid under kMaxOwnerRecord bytes; else *refused says
// why not. nullopt with no refusal: there is none.
std::optional<std::string> read_owner_record(int dir_fd, std::string* refused) {
  const int fd =
      ::openat(dir_fd, kOwnerFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    *refused = errno == ELOOP ? refusal::kRecordSymlink : refusal::kRecordUnreadable;
    return std::nullopt;
  }
  const DirFd guard(fd);  // closes it
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *refused = refusal::kRecordUnreadable;
  } else if (!S_ISREG(st.st_mode)) {
    *refused = refusal::kRecordNotRegular;
  } else if (st.st_uid != ::geteuid()) {
    *refused = refusal::kRecordForeignOwner;
  } else if (st.st_size >= kMaxOwnerRecord) {
    *refused = refusal::kRecordTooLarge;
  }
  if (!refused->empty()) return std::nullopt;
  std::string text(static_cast<size_t>(kMaxOwnerRecord), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t r = ::read(fd, text.data() + got, text.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  if (got >= text.size()) {  // grew since the fstat
    *refused = refusal::kRecordTooLarge;
    return std::nullopt;
  }
  text.resize(got);
  return text;
}

// Why the owner of the run directory `dir_fd` (stat `st`) is gone ("" when it
// may be alive, or *refused is set).
std::string owner_gone(int dir_fd, const struct stat& st, std::string* refused) {
  const std::optional<std::string> text = read_owner_record(dir_fd, refused);
  if (!refused->empty()) return {};
  if (!text) {
    const double age = wall_seconds() - double(st.st_mtime);
    if (age < kUnownedAge) return {};
    return fmt::format("no owner record and untouched for {:.0f} h", age / 3600);
  }
  const json::value v = msg::parse_stored(*text);
  if (!v.is_object()) return {};  // being written right now, or not ours to judge
  msg::OwnerRecord o;
  try {
    msg::from_json(v, o, msg::Source::kStored, kOwnerFile);
  } catch (const Error&) {
    *refused = refusal::kRecordUnreadable;
    return {};
  }
  if (o.host != host_name() || o.pid_ns != pid_namespace()) {
    return {};  // another host's (a shared filesystem) or another pid namespace's
  }
  if (o.boot_id != boot_id()) {
    return fmt::format("its agent (pid {}) ran before the last reboot", o.pid);
  }
  auto ticks = process_start_ticks(o.pid);
  if (!ticks || *ticks != o.start_ticks) {
    return fmt::format("its agent (pid {}, run {}) is gone", o.pid, o.run);
  }
  return {};
}

DirFd open_base(const std::string& base) {
  // The plan's directory itself may be reached through a link: it is the user's word.
  const int fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return DirFd(fd);
}

}  // namespace

DirFd::~DirFd() {
  if (fd_ >= 0) ::close(fd_);
}

DirFd& DirFd::operator=(DirFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

std::string owner_record_json(int64_t run_id) {
  const msg::OwnerRecord o{getpid(),        process_start_ticks(getpid()).value_or(0),
                           boot_id(),       host_name(),
                           pid_namespace(), run_id,
                           wall_seconds()};
  return json::serialize(msg::to_json(o));
}

RunDir make_run_dir(const std::string& base, const std::string& owner_json, bool shared) {
  const DirFd base_fd = open_base(base);
  if (base_fd.get() < 0) {
    throw Error(ErrorKind::kConfig, fmt::format("directory '{}' does not exist on this host", base),
                shared ? "create it, or correct the share's server_dir in the plan (the "
                         "directory on the server behind the share's root)"
                       : "create it, or name another one in the plan ([server]/[client] "
                         "ram_dir, disk_dir)");
  }
  std::string name;
  for (int attempt = 0;; ++attempt) {
    name = kRunDirPrefix + random_hex(8);
    if (::mkdirat(base_fd.get(), name.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt == 8) {
      throw Error(ErrorKind::kIo,
                  fmt::format("cannot create a run directory in '{}': {}", base, errno_text(errno)),
                  "make it writable for the SSH user, or name another directory in the plan");
    }
  }
  RunDir d{base, base + "/" + name,
           DirFd(::openat(base_fd.get(), name.c_str(),
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))};
  auto fail = [&](const std::string& what, int err) {
    if (d.fd.get() >= 0) remove_tree_at(base_fd.get(), name);
    return Error(ErrorKind::kIo, fmt::format("cannot {} in '{}': {}", what, base, errno_text(err)),
                 "free some space there, or name another directory in the plan");
  };
  if (d.fd.get() < 0) throw fail("open the run directory just made", errno);
  // The owner record first, so no later orphan cleanup takes a live run's files, and
  // before the directory opens to anyone else.
  const int fd =
      ::openat(d.fd.get(), kOwnerFile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw fail("write the owner record", errno);
  const DirFd record(fd);
  size_t off = 0;
  while (off < owner_json.size()) {
    const ssize_t w = ::write(fd, owner_json.data() + off, owner_json.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw fail("write the owner record", w < 0 ? errno : ENOSPC);
    off += static_cast<size_t>(w);
  }
  if (shared) share_run_dir(d);
  return d;
}

void share_run_dir(const RunDir& d) {
  if (::fchmod(d.fd.get(), 01777) != 0) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot open up run directory '{}': {}", d.path, errno_text(errno)));
  }
}

std::string remove_tree_at(int parent_fd, const std::string& name) {
  return remove_tree(parent_fd, name, 0);
}

std::vector<msg::RunDirEntry> clean_orphan_run_dirs(const std::string& base,
                                                    std::vector<msg::RunDirEntry>* kept) {
  std::vector<msg::RunDirEntry> removed;
  const DirFd base_fd = open_base(base);
  std::vector<std::string> names;
  if (base_fd.get() < 0 || !list_dir(base_fd.get(), &names)) return removed;
  const uid_t me = ::geteuid();
  for (const std::string& name : names) {
    if (name.rfind(kRunDirPrefix, 0) != 0) continue;
    const std::string dir = base + "/" + name;
    auto keep = [&](std::string error, std::string refused) {
      if (kept) kept->push_back({dir, "", std::move(error), std::move(refused)});
    };
    struct stat st {};
    if (::fstatat(base_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      keep("", refusal::kNotADirectory);
      continue;
    }
    if (st.st_uid != me) {
      keep("", refusal::kForeignOwner);
      continue;
    }
    const DirFd dir_fd(
        ::openat(base_fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat now {};
    if (dir_fd.get() < 0 || ::fstat(dir_fd.get(), &now) != 0 || now.st_ino != st.st_ino ||
        now.st_dev != st.st_dev) {
      keep("", refusal::kNotADirectory);  // replaced since the lstat
      continue;
    }
    std::string refused;
    const std::string why = owner_gone(dir_fd.get(), now, &refused);
    if (!refused.empty()) {
      keep("", refused);
      continue;
    }
    if (why.empty()) {
      keep("", "");
      continue;
    }
    const std::string err = remove_tree_at(base_fd.get(), name);
    if (!err.empty()) {
      keep(err, "");
      continue;
    }
    removed.push_back({dir, why, "", ""});
  }
  return removed;
}

}  // namespace cp::agent
