#include "probe/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "core/error.h"
#include "probe/cpu.h"
#include "probe/disk.h"
#include "probe/platform.h"

namespace cp::probe {
namespace {

using files::Phase;

Error io_error(const char* op, const std::string& path, int err) {
  if (err == EEXIST || err == ELOOP) {
    return Error(ErrorKind::kIo,
                 fmt::format("cannot {} '{}': {}: a name the small-file pass makes was there "
                             "already (a planted file or link): left alone",
                             op, path, errno_text(err)),
                 "another user of the host planted it in the run directory; remove it and find "
                 "out who did");
  }
  return Error(ErrorKind::kIo, fmt::format("cannot {} '{}': {}", op, path, errno_text(err)),
               err == ENOSPC || err == EDQUOT
                   ? "free space (or inodes) on that filesystem, or lower [files] count or size"
                   : "check the directory and the device behind it");
}

void check_options(const FilesOptions& o) {
  const files::Tree& t = o.tree;
  if (t.count == 0 || t.count > kMaxFilesCount || t.dirs == 0 || t.dirs > t.count ||
      t.size > kMaxFilesSize) {
    throw Error(ErrorKind::kConfig,
                fmt::format("small-file pass of {} files of {} bytes in {} directories: count "
                            "must be 1 .. {}, dirs 1 .. count, size 0 .. {} bytes",
                            t.count, t.size, t.dirs, kMaxFilesCount, kMaxFilesSize),
                "fix [files] count, dirs or size in the plan");
  }
}

}  // namespace

FileName::FileName(uint64_t i) {
  // files::Tree's "f{:06d}", formatted by hand: a name per operation through
  // fmt and a std::string cost about 3 % of an ext4 create (perf).
  char digits[20];
  int n = 0;
  do {
    digits[n++] = char('0' + i % 10);
    i /= 10;
  } while (i > 0);
  char* p = text_;
  *p++ = 'f';
  for (int pad = n; pad < 6; ++pad) *p++ = '0';
  while (n > 0) *p++ = digits[--n];
  *p = '\0';
}

namespace {

// The pass's directory tree: the root (made 0700 by this pass), its
// directories and which files exist. Removes whatever of it is left when it
// goes (an error, a cancel, a budget that stopped the delete phase).
class PassDir {
 public:
  PassDir(int parent_fd, std::string parent_path, std::string root, const files::Tree& tree)
      : parent_fd_(parent_fd),
        root_(std::move(root)),
        path_(parent_path + "/" + root_),
        tree_(tree),
        exists_(tree.count, false) {
    if (::mkdirat(parent_fd_, root_.c_str(), 0700) != 0) throw io_error("create", path_, errno);
    root_fd_ = ::openat(parent_fd_, root_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root_fd_ < 0) {
      const int err = errno;
      ::unlinkat(parent_fd_, root_.c_str(), AT_REMOVEDIR);
      throw io_error("open", path_, err);
    }
  }
  ~PassDir() {
    for (uint64_t i = 0; i < exists_.size(); ++i) {
      if (exists_[i]) ::unlinkat(dir_fd(tree_.dir_of(i)), file_name(i).c_str(), 0);
    }
    remove_dirs();
    ::close(root_fd_);
    ::unlinkat(parent_fd_, root_.c_str(), AT_REMOVEDIR);
  }
  PassDir(const PassDir&) = delete;
  PassDir& operator=(const PassDir&) = delete;

  void make_dirs() {
    for (uint64_t d = 0; d < tree_.dirs; ++d) {
      const std::string name = tree_.dir_name(d);
      if (::mkdirat(root_fd_, name.c_str(), 0700) != 0) {
        throw io_error("create", path_ + "/" + name, errno);
      }
      const int fd =
          ::openat(root_fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        ::unlinkat(root_fd_, name.c_str(), AT_REMOVEDIR);
        throw io_error("open", path_ + "/" + name, err);
      }
      dir_fds_.push_back(fd);
    }
  }
  // Removes the directories (empty by now); false with errno when one fails.
  bool remove_dirs() {
    bool ok = true;
    while (!dir_fds_.empty()) {
      const uint64_t d = dir_fds_.size() - 1;
      ::close(dir_fds_.back());
      dir_fds_.pop_back();
      if (::unlinkat(root_fd_, tree_.dir_name(d).c_str(), AT_REMOVEDIR) != 0) ok = false;
    }
    return ok;
  }

  int dir_fd(uint64_t d) const { return dir_fds_[d]; }
  int fd_of(uint64_t i) const { return dir_fds_[tree_.dir_of(i)]; }
  // The file's name in its directory ("f000013").
  static FileName file_name(uint64_t i) { return FileName(i); }
  std::string path_of(uint64_t i) const { return path_ + "/" + tree_.file_path(i); }
  void set_exists(uint64_t i, bool on) { exists_[i] = on; }
  bool exists(uint64_t i) const { return exists_[i]; }
  int root_fd() const { return root_fd_; }

 private:
  int parent_fd_;
  std::string root_;
  std::string path_;
  files::Tree tree_;
  int root_fd_ = -1;
  std::vector<int> dir_fds_;
  std::vector<bool> exists_;
};

void write_all(int fd, const char* p, size_t n, const PassDir& dir, uint64_t i) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw io_error("write", dir.path_of(i), errno);
    if (w == 0) throw io_error("write", dir.path_of(i), ENOSPC);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Opens an existing file of the pass for reading: not a link (O_NOFOLLOW),
// never blocking on a FIFO (O_NONBLOCK), a regular file.
int open_existing(const PassDir& dir, uint64_t i) {
  const int fd = ::openat(dir.fd_of(i), dir.file_name(i).c_str(),
                          O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw io_error("open", dir.path_of(i), errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw io_error("open", dir.path_of(i), ELOOP);
  }
  return fd;
}

// Times one phase: `op(i)` per file of `order` until all are done or, once
// `min_files` are, the deadline passed; `tail` (syncfs, the directories' removal)
// runs inside the phase's time after the last operation, and its own time is
// returned in `tail_seconds`. Per operation it costs one clock read (an
// operation's end is the next one's start and deadline check, so a latency
// includes the loop's few ns), a histogram bucket and a relaxed atomic load
// (the cancel flag): no allocation, no call through a std::function.
struct PhaseRun {
  const CancelToken& cancel;
  const ProgressFn& progress;
  double pass_start;
  double deadline;  // monotonic s; 0: none
  uint64_t min_files;
  bool with_cpu;
  uint64_t& moved;  // bytes of data so far in the pass (progress)
  const std::function<void(Phase, uint64_t)>& on_op;
  double last_report = 0;

  template <typename Op, typename Tail>
  FilesPhaseResult run(Phase phase, const std::vector<uint64_t>& order, uint64_t bytes_per_op,
                       Op&& op, Tail&& tail, double* tail_seconds = nullptr) {
    FilesPhaseResult out;
    out.stats.phase = phase;
    files::LatencyHistogram hist;
    CpuSampler cpu;
    if (with_cpu) cpu.start();
    const double start = monotonic_seconds();
    double t = start;  // the last clock read
    for (uint64_t i : order) {
      cancel.check();
      if (deadline > 0 && out.stats.ops >= min_files && t >= deadline) {
        out.stats.budget_hit = true;
        break;
      }
      if (on_op) on_op(phase, i);
      const double t0 = on_op ? monotonic_seconds() : t;
      op(i);
      t = monotonic_seconds();
      hist.add(t - t0);
      ++out.stats.ops;
      if (bytes_per_op) {
        out.stats.bytes += bytes_per_op;
        moved += bytes_per_op;
      }
      if (progress && t - last_report >= 0.25) {
        last_report = t;
        progress(moved, t - pass_start);
        t = monotonic_seconds();  // the report's own time is no operation's
      }
    }
    const double tail_start = monotonic_seconds();
    tail();
    const double end = monotonic_seconds();
    if (tail_seconds) *tail_seconds = end - tail_start;
    out.stats.seconds = end - start;
    if (with_cpu) out.cpu = cpu.stop();
    out.stats.latency = files::summarize(hist);
    return out;
  }
};

// The files a phase after the create visits: those created, a directory at a
// time (files::directory_order), or shuffled by the pass's seed and the phase
// (bonnie++'s random pass draws a new order per phase too).
std::vector<uint64_t> later_order(const files::Tree& tree, const std::vector<uint64_t>& created,
                                  bool random, uint64_t seed, Phase phase) {
  std::vector<uint64_t> sorted = created;
  files::sort_directory_major(tree, sorted);
  if (!random) return sorted;
  const auto perm = files::visit_order(sorted.size(), true, seed + 1 + uint64_t(phase));
  std::vector<uint64_t> out;
  out.reserve(sorted.size());
  for (uint64_t k : perm) out.push_back(sorted[k]);
  return out;
}

void fill_data(std::vector<char>& buf, uint64_t seed) {
  uint64_t s = seed | 1;
  for (size_t i = 0; i < buf.size(); ++i) {
    s ^= s << 13;  // xorshift64: incompressible enough that no filesystem elides it
    s ^= s >> 7;
    s ^= s << 17;
    buf[i] = static_cast<char>(s | 1);  // never zero: no sparse file
  }
}

void cache_verdict(const std::string& parent_path, uint64_t bytes, FilesPassResult& r) {
  try {
    r.fs_type = fs_type(parent_path);
  } catch (const Error&) {
    r.fs_type = "unknown";
  }
  if (r.fs_type == "tmpfs" || r.fs_type == "ramfs") {
    r.cache_possible = true;
    r.cache_reason = r.fs_type + ": the files live in RAM, so no read of them is cold";
  } else if (r.fs_type == "zfs") {
    const os::CacheVerdict v = cache_verdict_of(parent_path, bytes, true);
    r.cache_possible = v.cache_possible;
    r.cache_reason = v.reason;
  }
}

}  // namespace

FilesPassResult files_pass(int parent_fd, const std::string& parent_path, const std::string& root,
                           const FilesOptions& options, const CancelToken& cancel,
                           const ProgressFn& progress, bool with_cpu) {
  check_options(options);
  cancel.check();
  const files::Tree& tree = options.tree;
  const uint64_t min_files =
      options.min_files ? options.min_files : std::max<uint64_t>(1, tree.count / 10);
  std::vector<char> data(tree.size);
  fill_data(data, options.seed ^ tree.count);
  std::vector<char> rbuf(std::max<uint64_t>(tree.size, 4096) + 1);

  PassDir dir(parent_fd, parent_path, root, tree);
  const double pass_start = monotonic_seconds();
  uint64_t moved = 0;
  PhaseRun run{
      cancel,    progress, pass_start, options.budget > 0 ? pass_start + options.budget : 0,
      min_files, with_cpu, moved,      options.on_op};
  FilesPassResult out;
  std::vector<uint64_t> created;
  created.reserve(tree.count);

  // create: the directories, then each file written whole and closed; one
  // syncfs at the end (the journal's commit paid once, as a copy pays it),
  // its own time kept too. Sequential: a directory at a time, as `cp -r`.
  dir.make_dirs();
  double sync_seconds = 0;
  out.phases.push_back(run.run(
      Phase::create,
      options.random ? files::visit_order(tree.count, true, options.seed)
                     : files::directory_order(tree),
      tree.size,
      [&](uint64_t i) {
        const int fd = ::openat(dir.fd_of(i), dir.file_name(i).c_str(),
                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) throw io_error("create", dir.path_of(i), errno);
        dir.set_exists(i, true);
        created.push_back(i);
        if (!data.empty()) std::memcpy(data.data(), &i, std::min<size_t>(sizeof i, data.size()));
        try {
          write_all(fd, data.data(), data.size(), dir, i);
        } catch (...) {
          ::close(fd);
          throw;
        }
        if (::close(fd) != 0) throw io_error("close", dir.path_of(i), errno);
      },
      [&] {
        if (::syncfs(dir.root_fd()) != 0) throw io_error("syncfs", parent_path, errno);
      },
      &sync_seconds));
  out.phases.back().stats.sync_seconds = sync_seconds;

  // stat: by name, never following a link.
  out.phases.push_back(run.run(
      Phase::stat, later_order(tree, created, options.random, options.seed, Phase::stat), 0,
      [&](uint64_t i) {
        struct stat st {};
        if (::fstatat(dir.fd_of(i), dir.file_name(i).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
          throw io_error("stat", dir.path_of(i), errno);
        }
        if (!S_ISREG(st.st_mode) || uint64_t(st.st_size) != tree.size) {
          throw io_error("stat", dir.path_of(i), ELOOP);
        }
      },
      [] {}));

  // read, cold: the data pages dropped first (clean since the syncfs). The
  // inodes and directory entries stay cached: dropping those takes root.
  cache_verdict(parent_path, uint64_t(created.size()) * tree.size, out);
  for (uint64_t i : created) {
    cancel.check();
    const int fd = open_existing(dir, i);
    os::evict_file_cache(fd);
    ::close(fd);
  }
  out.phases.push_back(run.run(
      Phase::read, later_order(tree, created, options.random, options.seed, Phase::read), tree.size,
      [&](uint64_t i) {
        const int fd = open_existing(dir, i);
        uint64_t got = 0;
        for (;;) {
          const ssize_t n = ::read(fd, rbuf.data(), rbuf.size());
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) {
            const int err = errno;
            ::close(fd);
            throw io_error("read", dir.path_of(i), err);
          }
          if (n == 0) break;
          got += uint64_t(n);
        }
        ::close(fd);
        if (got != tree.size) throw io_error("read", dir.path_of(i), EIO);
      },
      [] {}));

  // delete: the files, then (all of them gone) the directories.
  bool all_gone = true;
  out.phases.push_back(run.run(
      Phase::remove, later_order(tree, created, options.random, options.seed, Phase::remove), 0,
      [&](uint64_t i) {
        if (::unlinkat(dir.fd_of(i), dir.file_name(i).c_str(), 0) != 0) {
          throw io_error("delete", dir.path_of(i), errno);
        }
        dir.set_exists(i, false);
      },
      [&] {
        for (uint64_t i : created) all_gone = all_gone && !dir.exists(i);
        if (all_gone && !dir.remove_dirs())
          throw io_error("delete", parent_path + "/" + root, errno);
      }));
  // A phase after a create the budget cut short visited fewer than `count` files too.
  for (auto& p : out.phases) p.stats.budget_hit = p.stats.budget_hit || p.stats.ops < tree.count;
  return out;  // ~PassDir removes the rest (a delete phase the budget stopped) and the root
}

}  // namespace cp::probe
