// The small-file pass on a local disk (docs/small-files.md): one pass of a
// files::Tree in a fresh directory the probe makes inside a directory it is
// given (the agent's run directory), its four phases each timed, per-op
// latency into a files::LatencyHistogram, and the CPU per phase.
//
// Safety as the rest of the agent: everything is reached relative to open
// directory fds (openat, fstatat, unlinkat), never through a symbolic link
// (O_NOFOLLOW), files are created O_EXCL, the pass's root is made 0700 by the
// probe itself (mkdirat: a planted name fails with EEXIST), and only the names
// the tree lays out, made by this pass, are removed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/cpu_message.h"
#include "core/files_pass.h"
#include "core/progress.h"

namespace cp::probe {

struct FilesOptions {
  files::Tree tree;
  bool random = false;  // the phases visit the files in a seeded shuffled order
  uint64_t seed = 0;    // of the random order (stored: it reproduces it)
  // s per pass: once `min_files` are in, a phase stops at the pass's deadline
  // (the delete phase then removes the rest untimed). 0: no budget.
  double budget = 30;
  uint64_t min_files = 0;  // 0: count / 10 (at least 1)
  // Called before each operation with its phase and file index (tests watch
  // the order and plant names through it); may be empty.
  std::function<void(files::Phase, uint64_t)> on_op;
};

// One phase's figures and both CPU figures of this end while it ran.
struct FilesPhaseResult {
  files::PhaseStats stats;
  msg::CpuSummary cpu;
};

struct FilesPassResult {
  std::vector<FilesPhaseResult> phases;  // create, stat, read, delete
  std::string fs_type;                   // of the directory ("ext4", "tmpfs")
  // The read phase may have been served from a cache (tmpfs: the files live
  // in RAM; ZFS: the ARC keeps what fadvise drops), and why; "" otherwise.
  bool cache_possible = false;
  std::string cache_reason;
};

// Runs one pass in `parent_fd`/`root` (a plain name the probe creates; the
// directory is removed with everything in it before returning, also on an
// error or a cancel). `parent_path` names the parent in messages.
// Throws Error(kConfig) for a bad tree (count 0, dirs 0 or > count, size >
// 1 MiB), Error(kIo) naming the path and errno (EEXIST for a planted name,
// ELOOP for a link, ENOSPC), Error(kCancelled) when `cancel` fires (checked
// between operations). `progress` gets the bytes of data moved and seconds.
// `with_cpu`: sample this end's CPU per phase (tests may skip it).
FilesPassResult files_pass(int parent_fd, const std::string& parent_path, const std::string& root,
                           const FilesOptions& options, const CancelToken& cancel,
                           const ProgressFn& progress, bool with_cpu = true);

// A file's name in its directory as files::Tree names it ("f000013"), made
// without an allocation (one per operation).
class FileName {
 public:
  explicit FileName(uint64_t index);
  const char* c_str() const { return text_; }

 private:
  char text_[24];  // "f" + up to 20 digits + NUL
};

// The most files and bytes per file a pass takes (docs/small-files.md).
inline constexpr uint64_t kMaxFilesCount = 1000000;
inline constexpr uint64_t kMaxFilesSize = 1u << 20;

}  // namespace cp::probe
