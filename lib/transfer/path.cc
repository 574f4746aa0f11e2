// The path driver: copies through any mounted filesystem (kernel CIFS or
// NFS, a Mac's AFP mount, sshfs, rclone/smbnetfs FUSE), the way the hand
// method timed `cp`. Share.url is an absolute path or a file:// URL. The
// client's page cache is kept out of the figures with distinct files (the
// pipeline's job) and posix_fadvise(DONTNEED) before and after each read;
// writes end with fsync so the data reached the server. O_DIRECT is not
// used: most network filesystems ignore or refuse it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "core/error.h"
#include "core/mountinfo.h"
#include "core/text.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"
#include "transfer/share_url.h"

namespace cp::transfer {
namespace {

// "Not a regular file": no errno says it; path_error's own code (beyond errno's range).
constexpr int kNotRegular = 4096;

// The root directory a Share's url names.
std::string share_root(const std::string& url) {
  if (!url.empty() && url.front() == '/') {
    std::string p = url;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
  }
  const ShareUrl u = parse_share_url(url);
  if (u.scheme != "file") {
    throw Error(ErrorKind::kConfig,
                fmt::format("the path driver takes an absolute path or a file:// URL, not '{}'",
                            redact_url(url)),
                "mount the share (mount -t cifs/nfs, sshfs, ...) and give its mount point, like "
                "/mnt/nas; or use the ftp or smb driver");
  }
  if (!u.host.empty() && u.host != "localhost") {
    throw Error(ErrorKind::kConfig,
                fmt::format("file:// URL '{}' names host '{}'; the path driver reads only "
                            "this machine's filesystems",
                            url, u.host),
                "write file:///mount/point (three slashes)");
  }
  if (u.path.empty() || u.path.front() != '/') {
    throw Error(ErrorKind::kConfig, fmt::format("file:// URL '{}' has no absolute path", url),
                "write file:///mount/point (three slashes)");
  }
  return u.path;
}

class PathFile : public File {
 public:
  PathFile(int fd, Mode mode, Place where) : fd_(fd), mode_(mode), where_(std::move(where)) {}
  ~PathFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  size_t read(char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kRead && fd_ >= 0);
    for (;;) {
      const ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) throw path_error(errno, Step::kRead, where_);
    }
  }

  size_t pread(char* buf, size_t n, uint64_t offset) override {
    CP_CHECK(mode_ == Mode::kRead && fd_ >= 0);
    for (;;) {
      const ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(offset));
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) throw path_error(errno, Step::kRead, where_);
    }
  }

  void pwrite(const char* buf, size_t n, uint64_t offset) override {
    CP_CHECK(mode_ == Mode::kWrite && fd_ >= 0);
    while (n > 0) {
      const ssize_t w = ::pwrite(fd_, buf, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        throw path_error(errno, Step::kWrite, where_);
      }
      buf += w;
      offset += static_cast<uint64_t>(w);
      n -= static_cast<size_t>(w);
    }
  }

  void write(const char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kWrite && fd_ >= 0);
    while (n > 0) {
      const ssize_t w = ::write(fd_, buf, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw path_error(errno, Step::kWrite, where_);
      }
      buf += w;
      n -= static_cast<size_t>(w);
    }
  }

  void close() override {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    // Network filesystems report write errors (a full disk on the server)
    // at fsync or close; both count.
    int err = 0;
    if (mode_ == Mode::kWrite && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
    // Drop what this file left in the client's page cache (a later read of
    // the same name must cross the network again).
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
    if (err != 0) throw path_error(err, Step::kClose, where_);
  }

 private:
  int fd_;
  Mode mode_;
  Place where_;
};

// An fd closed with this object.
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Paths below the root are walked one directory at a time through fds
// (openat, O_NOFOLLOW): a share is shared, and another user of it may plant a
// symbolic link at a name the run uses; no link below the root is followed.
// Files are created O_EXCL (never an existing one) and read only when regular
// (O_NONBLOCK, then fstat: a planted FIFO never blocks the open).
class PathSession : public Session {
 public:
  PathSession(std::string root, MountEntry mount)
      : root_(std::move(root)), mount_(std::move(mount)) {}

  std::unique_ptr<File> open(const std::string& rel, Mode mode, uint64_t) override {
    check_relative_path(rel);
    Place where = place(rel);
    const bool write = mode == Mode::kWrite;
    const size_t slash = rel.rfind('/');
    const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    FdGuard dir{parent_of(rel, write, write ? Step::kOpenWrite : Step::kOpenRead)};
    if (!write) {
      const int fd =
          ::openat(dir.fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      if (fd < 0) throw path_error(errno, Step::kOpenRead, where);
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw path_error(kNotRegular, Step::kOpenRead, where);
      }
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
      return std::make_unique<PathFile>(fd, mode, std::move(where));
    }
    const int fd =
        ::openat(dir.fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw path_error(errno, Step::kOpenWrite, where);
    return std::make_unique<PathFile>(fd, mode, std::move(where));
  }

  void remove(const std::string& rel) override {
    check_relative_path(rel);
    const size_t slash = rel.rfind('/');
    const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    FdGuard dir{parent_of(rel, false, Step::kRemove)};
    // unlinkat never follows a link: a planted one goes, its target stays.
    if (::unlinkat(dir.fd, name.c_str(), 0) == 0) return;
    int err = errno;
    if (err == EISDIR || err == EPERM) {
      if (::unlinkat(dir.fd, name.c_str(), AT_REMOVEDIR) == 0) return;
      if (errno != ENOTDIR) err = errno;
    }
    throw path_error(err, Step::kRemove, place(rel));
  }

  FileInfo stat(const std::string& rel) override {
    check_relative_path(rel);
    FdGuard dir{parent_of(rel, false, Step::kOpenRead)};
    struct stat st {};
    if (::fstatat(dir.fd, leaf(rel).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      throw path_error(errno, Step::kOpenRead, place(rel));
    }
    return {.size = uint64_t(st.st_size), .mtime = st.st_mtime, .is_dir = S_ISDIR(st.st_mode)};
  }

  void mkdir(const std::string& rel) override {
    check_relative_path(rel);
    FdGuard dir{parent_of(rel, false, Step::kOpenWrite)};
    if (::mkdirat(dir.fd, leaf(rel).c_str(), 0755) != 0) {
      throw path_error(errno, Step::kOpenWrite, place(rel));
    }
  }

  void rmdir(const std::string& rel) override {
    check_relative_path(rel);
    FdGuard dir{parent_of(rel, false, Step::kRemove)};
    if (::unlinkat(dir.fd, leaf(rel).c_str(), AT_REMOVEDIR) != 0) {
      throw path_error(errno, Step::kRemove, place(rel));
    }
  }

  std::map<std::string, std::string> properties() const override {
    std::map<std::string, std::string> p = {{"root", root_}};
    if (!mount_.mount_point.empty()) {
      p["mount_point"] = mount_.mount_point;
      p["fstype"] = mount_.fstype;
      p["source"] = mount_.source;
      // Kernel CIFS shows the dialect (vers=3.1.1) and rsize/wsize here; NFS
      // its version and rsize/wsize.
      p["mount_options"] = mount_.options;
    }
    return p;
  }

 private:
  Place place(const std::string& rel) const { return Place{"", root_, "", rel}; }
  static std::string leaf(const std::string& rel) {
    const size_t slash = rel.rfind('/');
    return slash == std::string::npos ? rel : rel.substr(slash + 1);
  }

  // The directory holding `rel`'s last component, opened (the root as the
  // user named it, each directory below without following a link); `create`:
  // mkdir -p the missing ones (0755). Errors name `open_step`.
  int parent_of(const std::string& rel, bool create, Step open_step) const {
    int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw path_error(errno, Step::kConnect, place(""));
    size_t start = 0, pos;
    while ((pos = rel.find('/', start)) != std::string::npos) {
      const std::string part = rel.substr(start, pos - start);
      start = pos + 1;
      if (part.empty()) continue;
      if (create && ::mkdirat(fd, part.c_str(), 0755) != 0 && errno != EEXIST) {
        const int err = errno;
        ::close(fd);
        throw path_error(err, open_step, place(rel.substr(0, pos)));
      }
      const int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int err = errno;
      struct stat st {};
      // O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR: name it as the link it is.
      if (next < 0 && err == ENOTDIR &&
          ::fstatat(fd, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        err = ELOOP;
      }
      ::close(fd);
      if (next < 0) throw path_error(err, open_step, place(rel.substr(0, pos)));
      fd = next;
    }
    return fd;
  }

  std::string root_;
  MountEntry mount_;
};

class PathDriver : public Driver {
 public:
  std::string name() const override { return "path"; }

  std::unique_ptr<Session> connect(const Share& share, const CancelToken&) override {
    const std::string root = share_root(share.url);
    const Place where{"", root, "", ""};
    struct stat st;
    if (::stat(root.c_str(), &st) != 0) throw path_error(errno, Step::kConnect, where);
    if (!S_ISDIR(st.st_mode)) throw path_error(ENOTDIR, Step::kConnect, where);
    if (::access(root.c_str(), R_OK | X_OK) != 0) throw path_error(errno, Step::kConnect, where);
    MountEntry mount;
    char resolved[PATH_MAX];
    if (::realpath(root.c_str(), resolved)) {
      mount = mount_holding(read_file("/proc/self/mountinfo").value_or(""), resolved);
    }
    return std::make_unique<PathSession>(root, std::move(mount));
  }
};

}  // namespace

Error path_error(int err, Step step, const Place& w) {
  const std::string target = w.target();
  const std::string sys = errno_text(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return Error(
          ErrorKind::kIo,
          fmt::format("the filesystem behind {} is full writing {} ({})", w.share, target, sys),
          "free space on the server's share (or its quota), or use smaller files");
    case EROFS:
      return Error(
          ErrorKind::kIo,
          fmt::format("{} is mounted read-only: cannot write {} ({})", w.share, target, sys),
          "mount the share read-write, or measure reads only");
    case EACCES:
    case EPERM:
      if (writes(step) || step == Step::kRemove) {
        return Error(
            ErrorKind::kIo,
            fmt::format("permission denied writing {} ({}): the share refuses writes", target, sys),
            "give the mounting user write access on the server, or mount read-write");
      }
      return Error(ErrorKind::kIo, fmt::format("permission denied reading {} ({})", target, sys),
                   "give the mounting user read access, or mount with the right credentials");
    case ENOENT:
      if (step == Step::kConnect) {
        return Error(ErrorKind::kConfig, fmt::format("no directory {} ({})", w.share, sys),
                     "mount the share first and give its mount point (or a directory in it)");
      }
      return Error(ErrorKind::kIo, fmt::format("no file {} ({})", target, sys),
                   "check that the file was laid out on the server and the mount shows it");
    case ENOTDIR:
      return Error(ErrorKind::kConfig, fmt::format("{} is not a directory", target),
                   "give the share's mount point, or a directory inside it");
    case ELOOP:
      return Error(
          ErrorKind::kIo,
          fmt::format("{} is a symbolic link, not a file this run made: left alone", target),
          "another user of the share planted it; remove it and find out who did");
    case EEXIST:
      return Error(ErrorKind::kIo,
                   fmt::format("{} exists already: the path driver creates only new files", target),
                   "another user of the share planted it, or an earlier run left it; remove it");
    case kNotRegular:
      return Error(ErrorKind::kIo,
                   fmt::format("{} is not a regular file (a FIFO or device): left alone", target),
                   "another user of the share planted it; remove it and find out who did");
    case ESTALE:
    case ENOTCONN:
    case EIO:
    case ETIMEDOUT:
    case EHOSTDOWN:
    case EHOSTUNREACH:
      return Error(ErrorKind::kIo,
                   fmt::format("the mount behind {} failed on {} ({})", w.share, target, sys),
                   "check that the server is up and remount the share (umount; mount)");
    default:
      return Error(ErrorKind::kIo, fmt::format("{} failed on {}: {}",
                                               step == Step::kConnect  ? "opening the share"
                                               : step == Step::kRead   ? "reading"
                                               : step == Step::kRemove ? "removing"
                                                                       : "writing",
                                               target, sys));
  }
}

namespace {
constexpr std::string_view kPathPrefixes[] = {"/", "file://"};
std::unique_ptr<Driver> make() { return std::make_unique<PathDriver>(); }
}  // namespace

const DriverSpec kPathDriver = {
    .name = "path",
    .summary = "a mounted filesystem (kernel CIFS or NFS, FUSE, ...), like timing cp",
    .url_prefixes = kPathPrefixes,
    .caps = {.random_access = true,
             .random_write = true,
             .stat = true,
             .mkdir = true,
             .max_in_flight = 64},  // threads, each its own session (small-files.md)
    .options = {},
    .make = make,
    .display = "mounted path",
    .hints = {.samba_config = true, .client_cache = true},
};

}  // namespace cp::transfer
