// The nfs driver's small-file chains (Session::run_file_ops): one file's
// calls, from nfs_file_ops.cc's runner, and the NFSv3 calls it sends by
// handle (nfs_raw3.cc). Internal to lib/transfer/nfs/, as nfs_session.h.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transfer/nfs/nfs_session.h"

namespace cp::transfer::nfs {

// Where a file's chain is: the call on the wire, or about to be sent.
// NFSv3 (by handle): kOpen is CREATE (create) or LOOKUP (read), kStat a
// LOOKUP, and there is no close. NFSv4 (libnfs's calls): kOpen is OPEN and
// kClose CLOSE; kChmod is the SETATTR of the mode, sent with the first WRITE.
enum class Stage { kOpen, kChmod, kFstat, kWrite, kCommit, kRead, kClose, kStat, kRemove, kDone };

struct Chain {
  uint64_t id = 0;
  std::string path;    // "/" + the pass's relative path
  std::string name;    // its last component (NFSv3: looked up in dir_fh)
  std::string dir_fh;  // NFSv3: the handle of its directory
  Place where;
  Stage stage = Stage::kOpen;
  bool answered = false;     // the call of `stage` is answered (or failed to queue)
  bool holds_turn = false;   // NFSv4: its OPEN or CLOSE is the one out
  bool write_out = false;    // NFSv4: a WRITE went out with the SETATTR (kChmod)
  bool eof = false;          // reads: the server said the file ends here
  int status = 0;            // the answer: >= 0, or -errno
  std::string detail;        // the failure in words
  nfsfh* fh = nullptr;       // NFSv4: open
  std::string fh3;           // NFSv3: the file's handle
  uint64_t size = 0;         // reads: the size GETATTR or LOOKUP gave
  uint64_t done = 0;         // bytes written or read so far
  uint64_t want = 0;         // reads: bytes to read (size, up to data + 1)
  std::vector<char> buf;     // reads: the bytes
  std::exception_ptr error;  // the chain's first failure
  // What it sent (the checked round trips): the waits for answers, the
  // calls (two in one wait: SETATTR and WRITE), and the OPENs and CLOSEs
  // that took turns.
  unsigned round_trips = 0, calls = 0, serial = 0;
  // Writes: the WRITE in flight, as NfsFile's slots (write4_async answers
  // through answered(Call)).
  std::shared_ptr<Flight> flight = std::make_shared<Flight>();
};

// A call's private data: the chain stays alive until its answer, even
// after run_file_ops has thrown.
struct ChainCall {
  std::shared_ptr<Chain> chain;
  const char* op = "";  // NFSv3: the procedure, for a refusal's words
};

// NFSv3: sends the call of c's stage by handle on the session's connection
// (raw RPCs: CREATE GUARDED with mode 0644, WRITE UNSTABLE, COMMIT, LOOKUP,
// READ, REMOVE). `data`: the bytes each file holds. 0: queued, its answer
// sets c.answered; else -1 and `detail` says why.
int send3(NfsSession& s, const std::shared_ptr<Chain>& c, bool writing, std::span<const char> data,
          std::string& detail);

}  // namespace cp::transfer::nfs
