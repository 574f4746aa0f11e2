#include "agent_server/files_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <string>

#include "core/checksum.h"
#include "core/error.h"
#include "probe/disk.h"

namespace cp::agent {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The tree's root (or one of its directories, `sub` non-empty) opened
// without following a link.
int open_dir(const RunFile& at, const std::string& sub = {}) {
  const int root =
      ::openat(at.dir_fd, at.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0 || sub.empty()) return root;
  const int d = ::openat(root, sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ::close(root);
  return d;
}

Error tree_error(const RunFile& at, const std::string& what, int err) {
  return Error(ErrorKind::kIo, fmt::format("{} {}: {}", what, at.path, errno_text(err)),
               "check the share directory's space and permissions on the server");
}

// "d0003/f000013" -> {"d0003", "f000013"}.
std::pair<std::string, std::string> split(const std::string& rel) {
  const size_t slash = rel.find('/');
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

// File `i` of the tree under `root`, opened with `flags` (O_NOFOLLOW and
// O_CLOEXEC added; its directory not followed through a link either); -1
// when it cannot be.
int open_tree_file(int root, const files::Tree& tree, uint64_t i, int flags, mode_t mode = 0) {
  const auto [dir, name] = split(tree.file_path(i));
  Fd d{::openat(root, dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  return d.fd < 0 ? -1 : ::openat(d.fd, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

// A peer's tree within docs/small-files.md's ranges.
void check(const files::Tree& t) {
  if (t.count < 1 || t.count > 1'000'000 || t.size > (1u << 20) || t.dirs < 1) {
    throw Error(ErrorKind::kPeer,
                fmt::format("message 'files_tree': {} files of {} bytes in {} directories is "
                            "outside 1 .. 1000000 files of 0 .. 1 MiB",
                            t.count, t.size, t.dirs),
                "the orchestrator and agent builds differ: redeploy the agent");
  }
}

}  // namespace

msg::FilesTreeResult lay_out_tree(const RunFile& at, const files::Tree& tree,
                                  const CancelToken& cancel) {
  check(tree);
  const double start = monotonic_seconds();
  if (::mkdirat(at.dir_fd, at.name.c_str(), 0755) != 0) {
    throw tree_error(at, "cannot make the small-file tree", errno);
  }
  Fd root{open_dir(at)};
  if (root.fd < 0) throw tree_error(at, "cannot open the small-file tree", errno);
  for (uint64_t d = 0; d < std::min(tree.dirs, tree.count); ++d) {
    if (::mkdirat(root.fd, tree.dir_name(d).c_str(), 0755) != 0) {
      throw tree_error(at, "cannot make a directory of", errno);
    }
  }
  std::string data(static_cast<size_t>(tree.size), '\0');
  fill_pattern(data.data(), data.size(), 1, 0);
  msg::FilesTreeResult r;
  for (uint64_t i = 0; i < tree.count; ++i) {
    cancel.check();
    Fd f{open_tree_file(root.fd, tree, i, O_WRONLY | O_CREAT | O_EXCL, 0644)};
    if (f.fd < 0) throw tree_error(at, "cannot create a file in", errno);
    for (size_t off = 0; off < data.size();) {
      const ssize_t w = ::write(f.fd, data.data() + off, data.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw tree_error(at, "cannot write a file in", errno);
      off += static_cast<size_t>(w);
    }
    ++r.files;
    r.bytes += data.size();
  }
  // Written back once, as a copy pays it, so the drop below leaves nothing dirty.
  if (::syncfs(root.fd) != 0) throw tree_error(at, "cannot sync", errno);
  msg::FilesTreeResult dropped = drop_tree(at, tree, cancel);
  r.cache_possible = dropped.cache_possible;
  r.cache_reason = dropped.cache_reason;
  r.seconds = monotonic_seconds() - start;
  return r;
}

msg::FilesTreeResult drop_tree(const RunFile& at, const files::Tree& tree,
                               const CancelToken& cancel) {
  check(tree);
  const double start = monotonic_seconds();
  Fd root{open_dir(at)};
  if (root.fd < 0) throw tree_error(at, "cannot open the small-file tree", errno);
  msg::FilesTreeResult r;
  for (uint64_t i = 0; i < tree.count; ++i) {
    cancel.check();
    Fd f{open_tree_file(root.fd, tree, i, O_RDONLY | O_NONBLOCK)};
    if (f.fd < 0) continue;  // not made (a budget cut the create phase)
    struct stat st {};
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    // Dirty pages stay in the cache: written back first.
    ::fdatasync(f.fd);
    ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
    ++r.files;
    r.bytes += static_cast<uint64_t>(st.st_size);
  }
  // A filesystem with a cache of its own (ZFS's ARC) may still serve them.
  const probe::os::CacheVerdict v = probe::cache_verdict_of(at.path, r.bytes, true);
  r.cache_possible = v.cache_possible;
  r.cache_reason = v.reason;
  r.seconds = monotonic_seconds() - start;
  return r;
}

msg::FilesTreeResult remove_tree(const RunFile& at, const files::Tree& tree) {
  check(tree);
  const double start = monotonic_seconds();
  msg::FilesTreeResult r;
  Fd root{open_dir(at)};
  if (root.fd < 0) {
    if (errno == ENOENT) return r;
    throw tree_error(at, "cannot open the small-file tree", errno);
  }
  for (uint64_t d = 0; d < std::min(tree.dirs, tree.count); ++d) {
    Fd dir{::openat(root.fd, tree.dir_name(d).c_str(),
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (dir.fd < 0) continue;
    for (uint64_t i = d; i < tree.count; i += tree.dirs) {
      const std::string name = split(tree.file_path(i)).second;
      if (::unlinkat(dir.fd, name.c_str(), 0) == 0) ++r.files;
    }
    if (::unlinkat(root.fd, tree.dir_name(d).c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      throw tree_error(at, "cannot remove a directory of", errno);
    }
  }
  if (::unlinkat(at.dir_fd, at.name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    throw tree_error(at, "cannot remove the small-file tree", errno);
  }
  r.seconds = monotonic_seconds() - start;
  return r;
}

}  // namespace cp::agent
