// The journal of original values that makes every knob change revertible,
// even after the agent is killed. It is data, never a script: an agent that
// finds a journal it did not write (its writer died) runs an entry only when
// the entry's knob is in the knob table and every action has the exact shape
// that knob's mechanism produces (program and arguments, path); anything
// else is refused, reported and never run.
//
// The journal lives at $CHOKEPOINT_TUNE_STATE_DIR (tests), else
// $XDG_STATE_HOME/chokepoint, else ~/.local/state/chokepoint ($HOME, else the
// user's home from the password database; never /tmp), named after the host
// name (the lab's hosts share a filesystem): tune-journal-HOST.json. Its
// directory is created 0700 and must be the agent user's own, writable by
// nobody else; the file is read only when it is a regular file (O_NOFOLLOW),
// the user's own, mode 0600 and at most kMaxJournalBytes; it is written to an
// O_EXCL temp file, fsynced and renamed over. It holds, per changed knob,
// the original value and the actions that restore it, written before the
// first change. The agent applying knobs holds an flock on
// tune-journal-HOST.lock; an agent that starts and can take that lock while
// a journal exists reverts it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tune_agent/apply.h"
#include "tune_agent/knobs.h"

namespace cp::tune {

struct JournalEntry {
  std::string knob, target, original;
  std::vector<Action> revert;
};

// What a revert did: per entry, restored or the error.
struct Reverted {
  std::string knob, target, original, error;  // error empty: restored
};

// Why a journal, or one entry of it, was not run.
enum class Refusal {
  kSymlink,      // the journal is a symlink
  kNotRegular,   // a FIFO, a device, a directory
  kNotOwner,     // another user's file
  kMode,         // readable or writable by group or others (not 0600)
  kTooLarge,     // over kMaxJournalBytes
  kMalformed,    // not the journal's JSON
  kUnknownKnob,  // an entry names no knob of the table that lives on a host
  kActionShape,  // an action the entry's knob never produces
};
// "symlink", "not_regular", "not_owner", "mode", "too_large", "malformed",
// "unknown_knob", "action_shape": the reason as it goes over the wire.
const char* to_string(Refusal r);

struct Refused {
  Refusal reason;
  std::string knob;    // the entry's knob; "" when the whole journal is refused
  std::string action;  // the refused action as shown; "" for the whole entry or file
  std::string detail;  // one sentence: what is wrong and what to do
};

// What the agent found at its start: the entries it reverted, and what it
// refused to run (left in place for a person to look at).
struct StartReport {
  std::vector<Reverted> reverted;
  std::vector<Refused> refused;
  std::string journal;  // its path
};

// 1 MiB: a journal holds smb.conf and afp.conf texts byte for byte.
inline constexpr size_t kMaxJournalBytes = 1u << 20;

// The refusal of an entry found in a journal: nullopt when its knob is in
// the table and every revert action has the exact shape of that knob's
// mechanism. `fs_root` prefixes the kernel paths (/proc/sys, /sys/block):
// "" on a host, a fake tree in tests.
std::optional<Refused> check_entry(const JournalEntry& e, const std::string& fs_root = "");

// Throws Error(kUnsupported) naming the fix when no directory can hold it
// (no $HOME and no home in the password database).
std::string journal_dir();
std::string journal_path();  // journal_dir()/tune-journal-<hostname>.json

// The agent's journal. One per process (the agent applies knobs from its
// worker thread; revert_all also runs at exit).
class Journal {
 public:
  // `fs_root`: as for check_entry.
  explicit Journal(std::string path, std::string fs_root = "");
  ~Journal();
  // Applies `value` of `knob`: takes the lock (Error(kUnsupported) when
  // another live session holds it, or when a journal there was refused),
  // journals the original first when this knob/target has no entry yet,
  // then runs the apply actions.
  Resolved apply(const Knob& knob, const std::string& value, const Where& where);
  // The same for actions already resolved (apply() resolves, then this).
  Resolved apply_resolved(const Knob& knob, Resolved r);
  // Reverts every entry, newest first; entries that fail stay journaled, as
  // do refused ones (never run). Releases the lock when nothing is left.
  // Error(kUnsupported) when another live process holds the lock.
  std::vector<Reverted> revert_all();
  // At agent start: when a journal exists and no live process holds its
  // lock, reverts what passes check_entry and reports what does not.
  StartReport revert_stale();
  std::vector<JournalEntry> entries() const;
  // What the last load refused (never run).
  const std::vector<Refused>& refused() const { return refused_; }
  bool holds_lock() const { return lock_fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  struct Loaded;
  bool lock(bool wait);
  void unlock();
  // The file's entries, checked: those that pass, and what was refused.
  Loaded load() const;
  // Reads the file into this object when it has not yet; Error(kUnsupported)
  // when any of it was refused.
  void adopt();
  void save() const;
  std::vector<Reverted> revert_entries(std::vector<Refused>* refused);

  std::string path_, fs_root_;
  int lock_fd_ = -1;
  bool adopted_ = false;
  std::vector<JournalEntry> entries_;     // this process's, or adopted after the checks
  std::vector<std::string> refused_raw_;  // refused entries as JSON, kept in the file
  std::vector<Refused> refused_;
};

}  // namespace cp::tune
