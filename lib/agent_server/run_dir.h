// The agent's run directories (chokepoint-run-*): made with a random name and
// the owner record first, opened to a protocol server's user with the sticky
// bit, removed without following a symbolic link, and the orphan cleanup that removes
// those of agents that are gone. A run directory behind a share is writable by
// every local user (01777), so nothing here trusts a name in one: entries are
// reached through directory fds (openat, fstatat, unlinkat), never through a
// link, and only directories of the agent's own uid are swept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/messages.h"

namespace cp::agent {

// Each run directory holds this record of its owner, so a later agent can
// tell a live run's directory from one whose agent was killed.
inline constexpr const char* kOwnerFile = ".chokepoint-owner";
inline constexpr const char* kRunDirPrefix = "chokepoint-run-";
// Largest owner record read, bytes: a record is ~250; anything bigger is not one.
inline constexpr int64_t kMaxOwnerRecord = 4096;

// Why the orphan cleanup left a directory alone (RunDirEntry::refused): it is not
// provably a run directory of this uid.
namespace refusal {
inline constexpr const char* kNotADirectory = "not_a_directory";  // a symlink, FIFO, file
inline constexpr const char* kForeignOwner = "foreign_owner";     // owned by another uid
inline constexpr const char* kRecordSymlink = "owner_record_symlink";
inline constexpr const char* kRecordNotRegular = "owner_record_not_regular";  // FIFO, device, dir
inline constexpr const char* kRecordForeignOwner = "owner_record_foreign_owner";
inline constexpr const char* kRecordTooLarge = "owner_record_too_large";  // >= kMaxOwnerRecord
inline constexpr const char* kRecordUnreadable = "owner_record_unreadable";
}  // namespace refusal

// An open directory fd (O_DIRECTORY), closed with this object.
class DirFd {
 public:
  DirFd() = default;
  explicit DirFd(int fd) : fd_(fd) {}
  ~DirFd();
  DirFd(DirFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  DirFd& operator=(DirFd&& o) noexcept;
  DirFd(const DirFd&) = delete;
  DirFd& operator=(const DirFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

struct RunDir {
  std::string base;  // the plan's directory it was made in
  std::string path;  // base + "/chokepoint-run-" + 16 random hex digits
  DirFd fd;          // the run directory itself
};

// This agent's owner record for run `run_id`, as stored JSON.
std::string owner_record_json(int64_t run_id);

// Makes a run directory in `base` (a random name, 0700), writes `owner_json`
// into it first (O_CREAT|O_EXCL|O_NOFOLLOW), then with `shared` opens it to a
// protocol server's user (share_run_dir). Throws Error(kConfig) when `base` is
// not a directory, Error(kIo) when it cannot be made or written (nothing left).
RunDir make_run_dir(const std::string& base, const std::string& owner_json, bool shared);

// Opens a run directory to a protocol server's user: 01777, so that user may
// create files but no user may remove or rename another's (the agent's own
// files, the owner record among them, stay the agent's).
void share_run_dir(const RunDir& d);

// Removes run directory `name` in the directory `parent_fd` and everything in
// it, through directory fds: a symbolic link inside is removed, never
// followed; nesting deeper than 64 is left (an error). "" when all is gone,
// else why not.
std::string remove_tree_at(int parent_fd, const std::string& name);

// Removes the run directories in `base` whose owner agent is gone: its pid
// no longer runs with the recorded start time on this host and boot, or (no
// owner record) nothing changed in it for an hour. Only a directory of this
// uid (lstat: not a link) whose owner record is a regular file of this uid
// under kMaxOwnerRecord bytes, opened O_NOFOLLOW|O_NONBLOCK (a FIFO never
// blocks it), counts. Returns those removed (path, reason); `kept` (optional)
// gets the others: a live run's, another host's on a shared filesystem, one
// that could not be removed (its error), or one left alone (its refused code,
// refusal::*).
std::vector<msg::RunDirEntry> clean_orphan_run_dirs(const std::string& base,
                                                    std::vector<msg::RunDirEntry>* kept);

}  // namespace cp::agent
