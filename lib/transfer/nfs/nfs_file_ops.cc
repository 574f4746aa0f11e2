// The nfs driver's small-file operations in flight on its one connection
// (Session::run_file_ops; docs/small-files.md, "In flight" and "Round
// trips"): up to ops.depth files' chains of calls at once (1: one at a
// time), driven by poll + nfs_service as NfsFile's READs and WRITEs are.
// The calls are a kernel client's, not those of libnfs's path calls:
// - NFSv3, by handle (nfs_raw3.cc): each directory's handle looked up once;
//   create = CREATE (GUARDED, mode 0644), WRITE, COMMIT; stat = LOOKUP;
//   read = LOOKUP, READ; delete = REMOVE.
// - NFSv4, libnfs's calls (the path walked inside each COMPOUND): create =
//   OPEN, then SETATTR of the mode (libnfs creates EXCLUSIVE4, which sets
//   none) with the first WRITE beside it, COMMIT, CLOSE; stat = one
//   COMPOUND (LOOKUPs, GETATTR); read = OPEN, READ (read4_async: its answer
//   says end of file, so no GETATTR first), CLOSE; delete = REMOVE.
// Each chain counts what it sends (NfsSession::sent_), which the lab test
// holds against file_round_trips().
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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "core/error.h"
#include "transfer/nfs/nfs_chain.h"
#include "transfer/nfs/nfs_session.h"
#include "transfer/protocols.h"

namespace cp::transfer::nfs {
namespace {

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

#ifdef CP_LIBNFS_4_0_0
void on_chain_read4(void* priv, int status, const char* detail, const char* data, bool eof) {
  std::unique_ptr<ChainCall> call(static_cast<ChainCall*>(priv));
  Chain& c = *call->chain;
  c.answered = true;
  c.status = status;
  if (status < 0) {
    c.detail = detail ? detail : "";
    return;
  }
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(status), c.want - c.done);
  if (n > 0) std::memcpy(c.buf.data() + c.done, data, n);
  c.status = static_cast<int>(n);
  c.eof = eof;
}
#endif

// A relative path's directory ("a/b" of "a/b/c"; "" the share's root) and
// its last component ("c").
std::pair<std::string, std::string> split_path(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
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
      while (more && live_.size() < ops_.depth) more = start();
      advance();
      if (live_.empty()) {
        if (!more) break;
        continue;
      }
      // libnfs answers some calls before they return (an NFSv3 close
      // sends nothing): those chains go on without waiting for the wire.
      if (std::any_of(live_.begin(), live_.end(), [](const auto& c) { return ready(*c); })) {
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
  // Starts the next operation's chain; false when there is none.
  bool start() {
    auto c = std::make_shared<Chain>();
    std::string rel;
    if (!ops_.next(c->id, rel)) return false;
    c->path = "/" + rel;
    c->where = s_.place(rel);
    c->stage = first_stage();
    if (!v4()) {
      // The directory's handle: looked up at its first file (a sync call,
      // which also runs the answers of the chains out).
      auto [dir, name] = split_path(rel);
      c->name = std::move(name);
      try {
        c->dir_fh = s_.dir_handle3(dir, writing() ? Step::kOpenWrite : Step::kOpenRead);
      } catch (const Error&) {
        ops_.ended(c->id, {}, std::current_exception());
        return true;
      }
    }
    live_.push_back(c);
    send(*c);
    return true;
  }

  // Whether c's chain can move on: its call answered (a SETATTR's WRITE
  // beside it too).
  static bool ready(const Chain& c) {
    return c.answered && !(c.write_out && c.flight->slots[0].pending);
  }

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
        return writing() ? Step::kOpenWrite : Step::kOpenRead;  // as NfsSession::stat names it
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
      ++c.serial;
    }
    c.answered = false;
    ++c.round_trips;
    ++c.calls;
    if (c.stage == Stage::kWrite) {
      std::string detail;
      if (!send_write(c, detail)) not_sent(c, detail);
      return;
    }
    std::string detail;
    const int rc = v4() ? send4(c, detail) : send3(s_, live_of(c), writing(), ops_.data, detail);
    if (rc != 0) return not_sent(c, detail);
    if (c.stage == Stage::kChmod && c.done < ops_.data.size()) {
      // The first WRITE goes beside the SETATTR (they do not depend on each
      // other): one round trip for the two. A WRITE that cannot be queued
      // fails as if answered so.
      ++c.calls;
      c.write_out = true;
      if (!send_write(c, detail)) {
        Slot& sl = c.flight->slots[0];
        sl.pending = false;
        sl.error = -EIO;
        sl.detail = detail;
      }
    }
  }

  // NFSv4: libnfs's call for c's stage (read4_async for a READ); 0 queued.
  int send4(Chain& c, std::string& detail) {
    nfs_context* nfs = s_.ctx();
    auto call = std::make_unique<ChainCall>(ChainCall{live_of(c), ""});
    void* priv = call.get();
    int rc = 0;
    switch (c.stage) {
      case Stage::kOpen:
        // 0644; libnfs creates EXCLUSIVE4 whatever the flags, so an
        // existing file fails (never truncated). No O_TRUNC: libnfs would
        // send a SETATTR of size 0 after the OPEN, a round trip for a file
        // that is new.
        rc = writing()
                 ? nfs_create_async(nfs, c.path.c_str(), O_WRONLY, 0644, on_chain_answer, priv)
                 : nfs_open_async(nfs, c.path.c_str(), O_RDONLY, on_chain_answer, priv);
        break;
      case Stage::kChmod:
        rc = nfs_fchmod_async(nfs, c.fh, 0644, on_chain_answer, priv);
        break;
      case Stage::kFstat:
        rc = nfs_fstat64_async(nfs, c.fh, on_chain_answer, priv);
        break;
      case Stage::kRead: {
        const uint64_t n = std::min(c.want - c.done, s_.request_size(Mode::kRead));
        rc = 1;
#ifdef CP_LIBNFS_4_0_0
        if (s_.own_v4_reads()) {
          rc = read4_async(nfs, c.fh, c.done, static_cast<uint32_t>(n), on_chain_read4, priv,
                           detail);
          if (rc == 1) s_.no_own_v4_reads();  // not 4.0.0's layout: GETATTR then libnfs's
          if (rc < 0) return rc;
        }
#endif
        if (rc == 1) rc = nfs_pread_async(nfs, c.fh, c.done, n, on_chain_answer, priv);
        break;
      }
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
    if (rc != 0) {
      detail = s_.error_text();
      return -1;
    }
    call.release();  // the callback owns it now
    return 0;
  }

  // A call that could not be queued: answered at once with its failure.
  static void not_sent(Chain& c, std::string detail) {
    c.answered = true;
    c.status = -EIO;
    c.detail = std::move(detail);
  }

  // The next WRITE of the file's bytes, as NfsFile::issue sends one (NFSv3:
  // by handle); false when it could not be queued (`detail` says why).
  bool send_write(Chain& c, std::string& detail) {
    if (!v4()) {
      c.stage = Stage::kWrite;  // (it is already, but for a SETATTR's)
      return send3(s_, live_of(c), true, ops_.data, detail) == 0;
    }
    if (c.flight->slots.empty()) c.flight->slots.resize(1);
    Slot& sl = c.flight->slots[0];
    for (;;) {
      sl = Slot{};
      sl.want = std::min<uint64_t>(ops_.data.size() - c.done, s_.request_size(Mode::kWrite));
      sl.offset = c.done;
      const char* buf = ops_.data.data() + c.done;
      auto call = std::make_unique<Call>(Call{c.flight, 0, false});
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
        return true;
      }
      if (s_.shrink_write_cap(sl.want, detail)) continue;
      return false;
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
      if (v4() && c.stage == Stage::kWrite && !c.answered && !c.flight->slots.empty() &&
          !c.flight->slots[0].pending) {
        const Slot& sl = c.flight->slots[0];
        c.answered = true;
        c.status = sl.error ? sl.error : static_cast<int>(sl.done);
        c.detail = sl.detail;
      }
      if (!ready(c)) {
        ++k;
        continue;
      }
      if (c.holds_turn) pass_turn(c);
      if (c.write_out) took_write(c);
      next_stage(c);
      if (c.stage != Stage::kDone) {
        if (!c.answered) send(c);
        ++k;
        continue;
      }
      auto done = live_[k];
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(k));
      if (!done->error) {
        NfsOpsSent& sent = s_.sent_[static_cast<size_t>(ops_.op)];
        ++sent.ops;
        sent.round_trips += done->round_trips;
        sent.calls += done->calls;
        sent.serial += done->serial;
      }
      // Reads: the bytes read; the others give none.
      const size_t got = ops_.op == FileOp::kRead ? static_cast<size_t>(done->done) : 0;
      ops_.ended(done->id, {done->buf.data(), got}, done->error);
    }
  }

  // NFSv4: the SETATTR and the WRITE beside it are both answered: the
  // SETATTR's failure first, else the WRITE's, else its bytes count.
  static void took_write(Chain& c) {
    c.write_out = false;
    const Slot& sl = c.flight->slots[0];
    if (c.status < 0) return;
    if (sl.error) {
      c.status = sl.error;
      c.detail = sl.detail;
      c.stage = Stage::kWrite;  // the step the error names
      return;
    }
    if (sl.done == 0) {
      c.status = -EIO;
      c.detail = "the server wrote 0 bytes";
      c.stage = Stage::kWrite;
      return;
    }
    c.done += sl.done;
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
          // NFSv3: a CREATE answer without the handle: LOOKUP it (kStat).
          c.stage = v4() ? Stage::kChmod : c.fh3.empty() ? Stage::kStat : write_or_commit(c);
        } else if (v4() && !s_.own_v4_reads()) {
          c.stage = Stage::kFstat;
        } else {
          // NFSv3: LOOKUP gave the size; NFSv4: READ until its end of file.
          start_read(c, v4() ? ops_.data.size() + 1 : c.size);
        }
        return;
      case Stage::kStat:
        c.stage = writing() ? write_or_commit(c) : Stage::kDone;
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
        c.stage = v4() ? Stage::kClose : Stage::kDone;
        return;
      case Stage::kFstat:
        start_read(c, c.size);
        return;
      case Stage::kRead:
        c.done += static_cast<uint64_t>(c.status);
        if (c.status == 0 || c.eof || c.done == c.want)
          c.stage = v4() ? Stage::kClose : Stage::kDone;
        return;
      case Stage::kClose:
        c.fh = nullptr;  // libnfs freed it
        c.stage = Stage::kDone;
        return;
      default:  // kRemove
        c.stage = Stage::kDone;
        return;
    }
  }

  // Reads a file of `size` bytes (or what it holds, up to that): exactly
  // that, as NfsFile reads, up to a byte more than written (a longer file
  // shows).
  void start_read(Chain& c, uint64_t size) {
    c.want = std::min<uint64_t>(size, ops_.data.size() + 1);
    c.buf.resize(c.want);
    c.stage = c.want > 0 ? Stage::kRead : v4() ? Stage::kClose : Stage::kDone;
  }

  // After the bytes: COMMIT (none for an empty file: nothing to make stable).
  Stage write_or_commit(const Chain& c) const {
    if (c.done < ops_.data.size()) return Stage::kWrite;
    if (!ops_.data.empty()) return Stage::kCommit;
    return v4() ? Stage::kClose : Stage::kDone;
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
  // TCP_NODELAY while the chains run, as the kernel's RPC client keeps it
  // on its connections (libnfs 4.0 leaves it off): a call sent while
  // another is unanswered (NFSv4's WRITE beside the SETATTR, any call of
  // several in flight) would otherwise wait in Nagle's queue for the first
  // answer's ACK, a round trip more (seen at 2 ms RTT: the WRITE answered
  // one RTT after the SETATTR). Set back after, so the big-file transfers
  // of the session keep what they were measured with.
  struct NoDelay {
    int fd, was = 0;
    socklen_t len = sizeof was;
    explicit NoDelay(int f) : fd(f) {
      if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &was, &len) != 0) fd = -1;
      const int on = 1;
      if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    ~NoDelay() {
      if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &was, sizeof was);
    }
  } nodelay(nfs_get_fd(nfs_));
  ChainRunner(*this, ops).run();
}

// What the chains above send for a file that fits one READ or WRITE: each
// wait for an answer is a round trip; NFSv4's OPEN and CLOSE take turns on
// the connection (serial). A kernel client's, but NFSv4's create sends a
// SETATTR beside its first WRITE (libnfs opens EXCLUSIVE4, without the mode).
std::array<RoundTrips, 4> NfsSession::file_round_trips() const {
  if (opts_.version != 4) return {{{3, 0}, {1, 0}, {2, 0}, {1, 0}}};
  const RoundTrips read = own_v4_reads() ? RoundTrips{3, 2} : RoundTrips{4, 2};
  return {{{4, 2}, {1, 0}, read, {1, 0}}};
}

}  // namespace cp::transfer::nfs
