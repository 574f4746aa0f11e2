// The nfs driver's small-file operations in flight on its one connection
// (Session::run_file_ops; docs/small-files.md, "In flight"): each file's
// chain of calls is the one the synchronous calls make (open.cc's open,
// NfsFile's writes, COMMIT and close; stat; remove), sent with libnfs's
// async calls, up to ops.depth chains at once, driven by poll + nfs_service
// as NfsFile's READs and WRITEs are.
//
// NFSv4.0 (what libnfs 4.0 speaks) numbers OPEN and CLOSE per open-owner
// (their seqid), and libnfs names one open-owner per context and takes the
// seqid from it when the call is sent, raising it when the answer is in:
// two OPENs out at once would carry one seqid, and the server would answer
// the second as a replay of the first. So, as the Linux client does for an
// open-owner, one OPEN or CLOSE is out at a time (the others wait their
// turn, in order); the rest of each chain (SETATTR, WRITE, COMMIT, GETATTR,
// READ, LOOKUP, REMOVE) overlaps freely. NFSv3 has no such state: every
// call overlaps.
#include <nfsc/libnfs.h>

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "core/error.h"
#include "transfer/nfs/nfs_session.h"
#include "transfer/protocols.h"

namespace cp::transfer::nfs {
namespace {

// Where a file's chain is: the call on the wire, or about to be sent.
enum class Stage { kOpen, kChmod, kFstat, kWrite, kCommit, kRead, kClose, kStat, kRemove, kDone };

struct Chain {
  uint64_t id = 0;
  std::string path;  // "/" + the pass's relative path
  Place where;
  Stage stage = Stage::kOpen;
  bool answered = false;     // the call of `stage` is answered (or failed to queue)
  bool holds_turn = false;   // NFSv4: its OPEN or CLOSE is the one out
  int status = 0;            // the answer: >= 0, or -errno
  std::string detail;        // libnfs's text for a failure
  nfsfh* fh = nullptr;       // open
  uint64_t size = 0;         // reads: the size GETATTR gave
  uint64_t done = 0;         // bytes written or read so far
  uint64_t want = 0;         // reads: bytes to read (size, up to data + 1)
  std::vector<char> buf;     // reads: the bytes
  std::exception_ptr error;  // the chain's first failure
  // Writes: the WRITE in flight, as NfsFile's slots (write4_async answers
  // through answered(Call)).
  std::shared_ptr<Flight> flight = std::make_shared<Flight>();
};

// A call's private data: the chain stays alive until its answer, even
// after run_file_ops has thrown.
struct ChainCall {
  std::shared_ptr<Chain> chain;
};

void on_chain_answer(int status, nfs_context* nfs, void* data, void* priv) {
  std::unique_ptr<ChainCall> call(static_cast<ChainCall*>(priv));
  Chain& c = *call->chain;
  c.answered = true;
  c.status = status;
  if (status < 0) {
    // libnfs sets its error text for every failure (`data` is not always it).
    const char* e = nfs_get_error(nfs);
    c.detail = e ? e : "";
    return;
  }
  switch (c.stage) {
    case Stage::kOpen:
      c.fh = static_cast<nfsfh*>(data);
      break;
    case Stage::kFstat:
      c.size = static_cast<const nfs_stat_64*>(data)->nfs_size;
      break;
    case Stage::kRead: {
      const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(status), c.want - c.done);
      std::memcpy(c.buf.data() + c.done, data, n);
      c.status = static_cast<int>(n);
      break;
    }
    default:
      break;
  }
}

void on_chain_write(int status, nfs_context* nfs, void* data, void* priv) {
  answered(std::unique_ptr<Call>(static_cast<Call*>(priv)), status,
           status < 0 ? nfs_get_error(nfs) : nullptr, data);
}

// One phase's chains on a session.
class ChainRunner {
 public:
  ChainRunner(NfsSession& s, FileOps& ops) : s_(s), ops_(ops) {}

  void run() {
    const double grace_s = 2;  // after a cancel, for the chains out to end
    double last = monotonic_seconds(), cancelled_at = 0;
    bool more = true;
    for (;;) {
      if (s_.cancel_.cancelled()) {
        more = false;
        if (cancelled_at == 0) cancelled_at = monotonic_seconds();
      }
      while (more && live_.size() < ops_.depth) {
        auto c = std::make_shared<Chain>();
        std::string rel;
        if (!ops_.next(c->id, rel)) {
          more = false;
          break;
        }
        c->path = "/" + rel;
        c->where = s_.place(rel);
        c->stage = first_stage();
        live_.push_back(c);
        send(*c);
      }
      advance();
      if (live_.empty()) {
        if (!more) break;
        continue;
      }
      // libnfs answers some calls before they return (an NFSv3 close
      // sends nothing): those chains go on without waiting for the wire.
      if (std::any_of(live_.begin(), live_.end(), [](const auto& c) { return c->answered; })) {
        continue;
      }
      if (cancelled_at > 0 && monotonic_seconds() - cancelled_at > grace_s) s_.cancel_.check();
      if (service()) {
        last = monotonic_seconds();
      } else if (monotonic_seconds() - last > s_.opts_.timeout_s) {
        throw nfs_error(ETIMEDOUT,
                        fmt::format("no answer for {:.0f} s with {} files' calls outstanding",
                                    s_.opts_.timeout_s, live_.size()),
                        step_of(live_.front()->stage), live_.front()->where);
      }
    }
    s_.cancel_.check();
  }

 private:
  Stage first_stage() const {
    switch (ops_.op) {
      case FileOp::kStat:
        return Stage::kStat;
      case FileOp::kRemove:
        return Stage::kRemove;
      default:
        return Stage::kOpen;
    }
  }
  bool v4() const { return s_.opts_.version == 4; }
  bool writing() const { return ops_.op == FileOp::kCreate; }

  Step step_of(Stage st) const {
    switch (st) {
      case Stage::kOpen:
        return writing() ? Step::kOpenWrite : Step::kOpenRead;
      case Stage::kChmod:
        return Step::kOpenWrite;
      case Stage::kWrite:
        return Step::kWrite;
      case Stage::kCommit:
        return Step::kClose;
      case Stage::kClose:
        return writing() ? Step::kClose : Step::kCloseRead;
      case Stage::kRemove:
        return Step::kRemove;
      case Stage::kStat:
        return Step::kOpenRead;  // as NfsSession::stat names it
      default:
        return Step::kRead;  // GETATTR, READ
    }
  }

  // Polls the connection once (at most 100 ms) and lets libnfs run what
  // came; whether anything did.
  bool service() {
    pollfd p{nfs_get_fd(s_.ctx()), static_cast<short>(nfs_which_events(s_.ctx())), 0};
    const int r = ::poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) {
      throw Error(ErrorKind::kIo, "poll on the NFS connection failed: " + errno_text(errno));
    }
    if (r <= 0) return false;
    if (nfs_service(s_.ctx(), p.revents) < 0) {
      throw nfs_error(ECONNRESET, s_.error_text(), step_of(live_.front()->stage),
                      live_.front()->where);
    }
    return true;
  }

  // Sends the call of c's stage; an OPEN or CLOSE over NFSv4 waits its turn.
  void send(Chain& c) {
    const bool turn = v4() && (c.stage == Stage::kOpen || c.stage == Stage::kClose);
    if (turn) {
      if (turn_taken_) {
        // A CLOSE ends its chain (and frees its place): ahead of the OPENs.
        if (c.stage == Stage::kClose) {
          waiting_.push_front(&c);
        } else {
          waiting_.push_back(&c);
        }
        return;
      }
      turn_taken_ = true;
      c.holds_turn = true;
    }
    c.answered = false;
    if (c.stage == Stage::kWrite) return send_write(c);
    nfs_context* nfs = s_.ctx();
    auto call = std::make_unique<ChainCall>(ChainCall{live_of(c)});
    void* priv = call.get();
    int rc = 0;
    switch (c.stage) {
      case Stage::kOpen:
        // As NfsSession::open: a file is created O_WRONLY|O_TRUNC, 0644
        // (NFSv4: libnfs creates EXCLUSIVE4, so an existing one fails).
        rc = writing() ? nfs_create_async(nfs, c.path.c_str(), O_WRONLY | O_TRUNC, 0644,
                                          on_chain_answer, priv)
                       : nfs_open_async(nfs, c.path.c_str(), O_RDONLY, on_chain_answer, priv);
        break;
      case Stage::kChmod:
        rc = nfs_fchmod_async(nfs, c.fh, 0644, on_chain_answer, priv);
        break;
      case Stage::kFstat:
        rc = nfs_fstat64_async(nfs, c.fh, on_chain_answer, priv);
        break;
      case Stage::kRead:
        rc = nfs_pread_async(nfs, c.fh, c.done,
                             std::min(c.want - c.done, s_.request_size(Mode::kRead)),
                             on_chain_answer, priv);
        break;
      case Stage::kCommit:
        rc = nfs_fsync_async(nfs, c.fh, on_chain_answer, priv);
        break;
      case Stage::kClose:
        rc = nfs_close_async(nfs, c.fh, on_chain_answer, priv);
        break;
      case Stage::kStat:
        rc = nfs_stat64_async(nfs, c.path.c_str(), on_chain_answer, priv);
        break;
      case Stage::kRemove:
        rc = nfs_unlink_async(nfs, c.path.c_str(), on_chain_answer, priv);
        break;
      default:
        ::cp::check_failed("no call for this stage", __FILE__, __LINE__);
    }
    if (rc == 0) {
      call.release();  // the callback owns it now
    } else {
      not_sent(c, s_.error_text());
    }
  }

  // A call that could not be queued: answered at once with its failure.
  static void not_sent(Chain& c, std::string detail) {
    c.answered = true;
    c.status = -EIO;
    c.detail = std::move(detail);
  }

  // The next WRITE of the file's bytes, as NfsFile::issue sends one.
  void send_write(Chain& c) {
    if (c.flight->slots.empty()) c.flight->slots.resize(1);
    Slot& sl = c.flight->slots[0];
    for (;;) {
      sl = Slot{};
      sl.want = std::min<uint64_t>(ops_.data.size() - c.done, s_.request_size(Mode::kWrite));
      sl.offset = c.done;
      const char* buf = ops_.data.data() + c.done;
      auto call = std::make_unique<Call>(Call{c.flight, 0, false});
      std::string detail;
      int rc = 1;
#ifdef CP_LIBNFS_4_0_0
      if (s_.own_v4_writes()) {
        rc = write4_async(s_.ctx(), c.fh, sl.offset, sl.want, buf, call.get(), detail);
        if (rc == 1) s_.no_own_v4_writes();  // not 4.0.0's layout: libnfs's calls from now on
      }
#endif
      if (rc == 1) {
        rc = nfs_pwrite_async(s_.ctx(), c.fh, sl.offset, sl.want, buf, on_chain_write, call.get());
        if (rc != 0) detail = s_.error_text();
      }
      if (rc == 0) {
        call.release();
        sl.pending = true;
        return;
      }
      if (s_.shrink_write_cap(sl.want, detail)) continue;
      return not_sent(c, detail);
    }
  }

  std::shared_ptr<Chain> live_of(const Chain& c) const {
    for (const auto& p : live_) {
      if (p.get() == &c) return p;
    }
    ::cp::check_failed("a chain not live", __FILE__, __LINE__);
  }

  // Moves each answered chain on: its next call, or its end (ops.ended).
  void advance() {
    for (size_t k = 0; k < live_.size();) {
      Chain& c = *live_[k];
      if (c.stage == Stage::kWrite && !c.answered && !c.flight->slots.empty() &&
          !c.flight->slots[0].pending) {
        const Slot& sl = c.flight->slots[0];
        c.answered = true;
        c.status = sl.error ? sl.error : static_cast<int>(sl.done);
        c.detail = sl.detail;
      }
      if (!c.answered) {
        ++k;
        continue;
      }
      if (c.holds_turn) pass_turn(c);
      next_stage(c);
      if (c.stage != Stage::kDone) {
        if (!c.answered) send(c);
        ++k;
        continue;
      }
      auto done = live_[k];
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(k));
      // Reads: the bytes read; the others give none.
      const size_t got = ops_.op == FileOp::kRead ? static_cast<size_t>(done->done) : 0;
      ops_.ended(done->id, {done->buf.data(), got}, done->error);
    }
  }

  // NFSv4: the OPEN or CLOSE `c` sent is answered: the next one waiting goes.
  void pass_turn(Chain& c) {
    c.holds_turn = false;
    turn_taken_ = false;
    if (waiting_.empty()) return;
    Chain* next = waiting_.front();
    waiting_.pop_front();
    send(*next);
  }

  // c's call is answered: the stage after it (not sent yet: c.answered is
  // cleared by send), or kDone.
  void next_stage(Chain& c) {
    c.answered = false;
    if (c.status < 0) {
      if (!c.error) {
        c.error =
            std::make_exception_ptr(nfs_error(-c.status, c.detail, step_of(c.stage), c.where));
      }
      // A file left open is closed (its answer does not matter then).
      c.stage = c.fh && c.stage != Stage::kClose ? Stage::kClose : Stage::kDone;
      if (c.stage == Stage::kDone) c.fh = nullptr;
      return;
    }
    switch (c.stage) {
      case Stage::kOpen:
        if (writing()) {
          c.stage = v4() ? Stage::kChmod : write_or_commit(c);
        } else {
          c.stage = Stage::kFstat;
        }
        return;
      case Stage::kChmod:
        c.stage = write_or_commit(c);
        return;
      case Stage::kWrite:
        if (c.status == 0) {
          c.status = -EIO;
          c.detail = "the server wrote 0 bytes";
          return next_stage(c);
        }
        c.done += static_cast<uint64_t>(c.status);
        c.stage = write_or_commit(c);
        return;
      case Stage::kCommit:
        c.stage = Stage::kClose;
        return;
      case Stage::kFstat:
        // Exactly the size GETATTR gave, as NfsFile reads, up to a byte
        // more than written (a longer file shows).
        c.want = std::min<uint64_t>(c.size, ops_.data.size() + 1);
        c.buf.resize(c.want);
        c.stage = c.want > 0 ? Stage::kRead : Stage::kClose;
        return;
      case Stage::kRead:
        c.done += static_cast<uint64_t>(c.status);
        if (c.status == 0 || c.done == c.want) c.stage = Stage::kClose;
        return;
      case Stage::kClose:
        c.fh = nullptr;  // libnfs freed it
        c.stage = Stage::kDone;
        return;
      default:  // kStat, kRemove
        c.stage = Stage::kDone;
        return;
    }
  }

  Stage write_or_commit(const Chain& c) const {
    return c.done < ops_.data.size() ? Stage::kWrite : Stage::kCommit;
  }

  NfsSession& s_;
  FileOps& ops_;
  std::vector<std::shared_ptr<Chain>> live_;  // chains started, not ended
  bool turn_taken_ = false;                   // NFSv4: an OPEN or CLOSE is out
  std::deque<Chain*> waiting_;                // NFSv4: OPENs and CLOSEs waiting their turn
};

}  // namespace

void NfsSession::run_file_ops(FileOps& ops) {
  CP_CHECK(ops.depth >= 1 && ops.next && ops.ended);
  ChainRunner(*this, ops).run();
}

}  // namespace cp::transfer::nfs
