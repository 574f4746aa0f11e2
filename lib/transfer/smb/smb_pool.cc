// The smb driver's helper processes (option connections > 1): each its own
// libsmbclient context and SMB connection, forked at connect, moving one
// call's data through its slot of a shared mapping; SmbPoolFile spreads a
// file's calls over them.
#include <fcntl.h>
#include <libsmbclient.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/clock.h"
#include "core/error.h"
#include "transfer/forked_session.h"
#include "transfer/protocols.h"
#include "transfer/smb/smb_session.h"

namespace cp::transfer::smb {

void SmbSession::start_workers() {
  shm_size_ = connections_ * io_size_;
  void* m = ::mmap(nullptr, shm_size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    shm_size_ = 0;
    throw Error(ErrorKind::kIo,
                fmt::format("SMB: cannot map {} bytes for {} connections: {}", shm_size_,
                            connections_, errno_text(errno)),
                "give fewer connections or a smaller io_size");
  }
  shm_ = static_cast<char*>(m);
  for (unsigned i = 0; i < connections_; ++i) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      throw Error(ErrorKind::kIo, "SMB: socketpair for a helper: " + errno_text(errno));
    }
    char* slot = shm_ + i * io_size_;
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw Error(ErrorKind::kIo, "SMB: cannot start a helper process: " + errno_text(errno));
    }
    if (pid == 0) worker_main(sv[1], slot);
    ::close(sv[1]);
    Worker w;
    w.pid = pid;
    w.fd = sv[0];
    w.slot = slot;
    workers_.push_back(w);
  }
  // Each logs in on its own connection. One that cannot (a server that
  // refuses or aborts more connections of a client than one, as one with
  // `max connections` does) leaves the session on its own connection, which
  // works: the samples then say so rather than fail.
  std::optional<Error> first;
  int first_errno = 0;
  for (Worker& w : workers_) {
    try {
      wait_reply(w, Step::kConnect, where_);
    } catch (const Error& e) {
      if (!first) {
        first = e;
        first_errno = helper_errno_;
      }
    }
  }
  if (first) {
    helper_errno_ = first_errno;
    degrade(*first);
  }
}

void SmbSession::degrade(const Error& e) noexcept {
  const bool aborted = helper_errno_ == ECONNABORTED || helper_errno_ == ECONNRESET ||
                       helper_errno_ == EPIPE || helper_errno_ == ETIMEDOUT;
  stop_workers();
  connections_ = 1;
  degraded_reason_ = aborted ? "helpers_aborted" : "helpers_refused";
  degraded_error_ = e.what();
}

// The helper process: never returns.
void SmbSession::worker_main(int fd, char* slot) {
  // Only its socket stays open: the parent's SMB connection, the agent's
  // channel and the other helpers' sockets are the parent's.
  keep_only(fd);
  auto answer = [&](int64_t result, int err) {
    if (result >= 0) alive();
    WorkerReply r;
    r.result = result;
    r.err = err;
    const std::string st = result < 0 ? smb_status_from_log(t_log) : "";
    std::snprintf(r.status, sizeof r.status, "%s", st.c_str());
    if (::send(fd, &r, sizeof r, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof r)) ::_exit(0);
  };
  SMBCCTX* ctx = nullptr;
  try {
    t_log.clear();
    ctx = make_context();
    SMBCFILE* dir = smbc_getFunctionOpendir(ctx)(ctx, base_.c_str());
    if (!dir) {
      answer(-1, errno);
      ::_exit(1);
    }
    smbc_getFunctionClosedir(ctx)(ctx, dir);
    alive();
    smbc_setDebug(ctx, 0);
  } catch (const Error&) {
    answer(-1, errno ? errno : EIO);
    ::_exit(1);
  }
  answer(0, 0);
  SMBCFILE* f = nullptr;
  for (;;) {
    WorkerRequest q;
    if (::recv(fd, &q, sizeof q, 0) != static_cast<ssize_t>(sizeof q) || q.op == kWQuit) {
      ::_exit(0);
    }
    t_log.clear();
    q.url[sizeof q.url - 1] = '\0';
    if (q.op == kWOpen) {
      if (f) smbc_getFunctionClose(ctx)(ctx, f);
      // Writing: created if the session's own create (at the same time) has not yet.
      f = smbc_getFunctionOpen(ctx)(ctx, q.url, q.write ? O_WRONLY | O_CREAT : O_RDONLY, 0644);
      answer(f ? 0 : -1, f ? 0 : errno);
    } else if (q.op == kWClose) {
      const int rc = f ? smbc_getFunctionClose(ctx)(ctx, f) : 0;
      f = nullptr;
      answer(rc == 0 ? 0 : -1, rc == 0 ? 0 : errno);
    } else if (!f || q.slot_off > io_size_ || q.len > io_size_ - q.slot_off) {
      answer(-1, EBADF);
    } else if (smbc_getFunctionLseek(ctx)(ctx, f, static_cast<off_t>(q.offset), SEEK_SET) < 0) {
      answer(-1, errno);
    } else if (q.op == kWRead) {
      const ssize_t n = smbc_getFunctionRead(ctx)(ctx, f, slot + q.slot_off, q.len);
      answer(n, n < 0 ? errno : 0);
    } else {
      uint64_t done = 0;
      int err = 0;
      while (done < q.len) {
        const ssize_t n =
            smbc_getFunctionWrite(ctx)(ctx, f, slot + q.slot_off + done, q.len - done);
        if (n <= 0) {
          err = n < 0 ? errno : EIO;
          break;
        }
        done += static_cast<uint64_t>(n);
      }
      answer(err ? -1 : static_cast<int64_t>(done), err);
    }
  }
}

Error SmbSession::helper_gone(const Worker& w) const {
  return Error(ErrorKind::kIo,
               fmt::format("SMB: helper process {} for {} ended", w.pid, where_.server),
               "see the server's log; the helper's connection may have been dropped");
}

void SmbSession::stop_workers() noexcept {
  for (Worker& w : workers_) {
    WorkerRequest q;
    q.op = kWQuit;
    if (w.fd >= 0) {
      (void)::send(w.fd, &q, sizeof q, MSG_NOSIGNAL);
      ::close(w.fd);
    }
  }
  // Each ends on its own; one that does not within 5 s is killed.
  const double deadline = monotonic_seconds() + 5;
  for (Worker& w : workers_) {
    while (::waitpid(w.pid, nullptr, WNOHANG) == 0) {
      if (monotonic_seconds() > deadline) {
        ::kill(w.pid, SIGKILL);
        ::waitpid(w.pid, nullptr, 0);
        break;
      }
      ::usleep(2000);
    }
  }
  workers_.clear();
  if (shm_) ::munmap(shm_, shm_size_);
  shm_ = nullptr;
}

// Waits out one answer from each of the first `n` helpers, errors dropped.
void SmbSession::drop_replies(size_t n) noexcept {
  for (size_t i = 0; i < n && i < workers_.size(); ++i) {
    try {
      wait_reply(workers_[i], Step::kOpenRead, where_);
    } catch (const Error&) {
    }
    workers_[i].state = Worker::kIdle;
  }
}

void SmbSession::send_request(Worker& w, uint32_t op, uint64_t offset, uint64_t len,
                              const std::string& url, bool write, uint64_t slot_off) {
  WorkerRequest q;
  q.op = op;
  q.write = write ? 1 : 0;
  q.offset = offset;
  q.len = len;
  q.slot_off = slot_off;
  CP_CHECK(url.size() < sizeof q.url);
  std::memcpy(q.url, url.data(), url.size());
  if (::send(w.fd, &q, sizeof q, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof q)) {
    helper_errno_ = ECONNABORTED;
    throw helper_gone(w);
  }
}

// The helper's answer; its failure as the error for `step`.
WorkerReply SmbSession::wait_reply(Worker& w, Step step, const Place& where) {
  WorkerReply r;
  pollfd p{w.fd, POLLIN, 0};
  const int n = ::poll(&p, 1, static_cast<int>(timeout_ * 1000) * 2 + 1000);
  if (n == 0) {
    helper_errno_ = ETIMEDOUT;
    throw Error(ErrorKind::kIo,
                fmt::format("SMB: helper process {} for {} did not answer in {} s", w.pid,
                            where_.server, timeout_ * 2 + 1),
                "the server or the network is stuck; see the server's log");
  }
  if (::recv(w.fd, &r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) {
    helper_errno_ = ECONNABORTED;
    throw helper_gone(w);
  }
  if (r.result < 0) {
    helper_errno_ = r.err;
    throw smb_error(r.err, r.status, step, where);
  }
  return r;
}

// In flight now: calls of `lens` bytes, folded into the file's record.
void SmbSession::note_pool(Mode mode, const std::vector<uint64_t>& lens) {
  Flight all;
  all.op = mode == Mode::kRead ? "read" : "write";
  for (uint64_t len : lens) {
    const Flight one = flight_of(mode, len);
    all.request_size = std::max(all.request_size, one.request_size);
    all.requests += one.requests;
    all.in_flight += one.in_flight;
  }
  std::lock_guard<std::mutex> lock(flight_mu_);
  if (flight_.op != all.op || all.in_flight > flight_.in_flight) flight_ = all;
}

std::unique_ptr<File> SmbSession::make_pool_file(SMBCFILE* f, Mode mode, Place where, uint64_t size,
                                                 const std::string& url, bool sent,
                                                 uint64_t size_hint) {
  auto own = std::make_unique<SmbFile>(*this, f, mode, where, size);
  std::optional<Error> first;
  int first_errno = 0;
  size_t asked = workers_.size();  // helpers that owe an answer to the open
  if (!sent) {
    asked = 0;
    try {
      for (Worker& w : workers_) {
        send_request(w, kWOpen, 0, 0, url, mode == Mode::kWrite);
        ++asked;
      }
    } catch (const Error& e) {
      first = e;
      first_errno = helper_errno_;
    }
  }
  for (size_t i = 0; i < asked; ++i) {
    Worker& w = workers_[i];
    try {
      wait_reply(w, mode == Mode::kRead ? Step::kOpenRead : Step::kOpenWrite, where);
    } catch (const Error& e) {
      if (!first) {
        first = e;
        first_errno = helper_errno_;
      }
    }
    w.state = Worker::kIdle;
  }
  if (first) {
    helper_errno_ = first_errno;
    // This connection opened it and a helper could not: the file (and the
    // session's later ones) go on through this connection alone.
    degrade(*first);
    return own;
  }
  ++pool_files_;
  return std::make_unique<SmbPoolFile>(*this, std::move(own), mode, std::move(where), size,
                                       size_hint);
}

SmbPoolFile::~SmbPoolFile() {
  if (closed_) return;
  drain();
  std::vector<bool> asked(s_.workers(), false);
  for (size_t i = 0; i < s_.workers(); ++i) {
    try {
      s_.send_request(s_.worker(i), kWClose, 0, 0);
      asked[i] = true;
    } catch (const Error&) {
    }
  }
  for (size_t i = 0; i < s_.workers(); ++i) {
    try {
      if (asked[i]) s_.wait_reply(s_.worker(i), Step::kClose, where_);
    } catch (const Error&) {
    }
  }
}

void SmbPoolFile::init() {
  half_ = s_.io_size() / 2;
  ring_.resize(2 * s_.workers());
}
Helper& SmbPoolFile::helper_of(uint64_t k) { return s_.worker(k % s_.workers()); }
uint64_t SmbPoolFile::half_of(uint64_t k) const { return (k / s_.workers()) % 2 * half_; }

WorkerReply SmbPoolFile::answer(Helper& w, Step step) {
  CP_CHECK(w.queued > 0);
  --w.queued;  // answered or failed, it is owed no more
  return s_.wait_reply(w, step, where_);
}

void SmbPoolFile::drain() noexcept {
  const Step step = mode_ == Mode::kRead ? Step::kRead : Step::kWrite;
  for (size_t i = 0; i < s_.workers(); ++i) {
    auto& w = s_.worker(i);
    while (w.queued > 0) {
      try {
        answer(w, step);
      } catch (const Error&) {
      }
    }
  }
  holding_ = false;
}

// In flight: one call per busy helper (libsmbclient is synchronous: a
// helper's next call waits in its socket, not on the wire).
void SmbPoolFile::note() {
  std::vector<uint64_t> lens(s_.workers(), 0);
  if (mode_ == Mode::kRead) {
    for (uint64_t k = taken_; k < issued_; ++k) {
      auto& len = lens[k % s_.workers()];
      len = std::max(len, ring_[k % ring_.size()].len);
    }
  } else {
    for (size_t i = 0; i < s_.workers(); ++i) {
      if (s_.worker(i).queued > 0) lens[i] = half_;
    }
  }
  std::erase(lens, 0);
  s_.note_pool(mode_, lens);
}

// A helper's calls are up to half its slot. The first calls of a file are
// staggered: call k < connections - 1 is (k + 1) / connections of that, the
// rest whole. Calls that all start together share the path evenly and end
// together, and then every connection idles for a round trip at once; one
// that starts a fraction of a call ahead ends while the others still move
// data.
uint64_t SmbPoolFile::call_len(uint64_t k) const {
  const uint64_t n = s_.workers();
  if (k + 1 >= n) return half_;
  return std::max<uint64_t>((half_ * (k + 1) / n) & ~uint64_t{0xffff},
                            std::min<uint64_t>(half_, 1 << 16));
}

// Sends calls in order, up to the end of the file, while a half is free (call
// k's half is call k - 2 * helpers's, free once that was handed out). Its
// size unknown, the calls stop at the expected size (a short answer would
// cost libsmbclient another round trip) and one more call starts there: its
// empty answer is the end, in flight with the last ones; a full one says the
// file is larger, and the calls go on.
void SmbPoolFile::issue() {
  const uint64_t freed = holding_ ? taken_ - 1 : taken_;
  while (next_off_ < size_ && next_off_ <= ahead_ && issued_ < freed + ring_.size()) {
    Call c;
    c.off = next_off_;
    c.len = std::min<uint64_t>(call_len(issued_), size_ - c.off);
    if (c.off < ahead_) c.len = std::min(c.len, ahead_ - c.off);
    auto& w = helper_of(issued_);
    s_.send_request(w, kWRead, c.off, c.len, {}, false, half_of(issued_));
    ++w.queued;
    ring_[issued_ % ring_.size()] = c;
    next_off_ += c.len;
    ++issued_;
  }
  note();
}

size_t SmbPoolFile::read(char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kRead && !closed_);
  if (own_only_) return own_->read(buf, n);
  if (failed_) {
    throw Error(ErrorKind::kIo,
                fmt::format("SMB: an earlier read of {}/{} failed", where_.share, where_.file),
                "see the first error; open the file again");
  }
  try {
    return read_pool(buf, n);
  } catch (const Error& e) {
    // A helper failed: the file goes on from the first byte not handed out,
    // through the session's own connection, which fails this read in turn
    // when the fault is the file's rather than the helpers'.
    drain();
    own_only_ = true;
    own_->restart_at(handed_);
    s_.degrade(e);
    return own_->read(buf, n);
  }
}

size_t SmbPoolFile::read_pool(char* buf, size_t n) {
  for (;;) {
    if (holding_) {
      if (hold_pos_ < hold_len_) {
        const uint64_t k = taken_ - 1;
        const size_t m = std::min(n, hold_len_ - hold_pos_);
        std::memcpy(buf, helper_of(k).slot + half_of(k) + hold_pos_, m);
        hold_pos_ += m;
        if (hold_pos_ == hold_len_) {
          holding_ = false;
          issue();
        }
        handed_ += m;  // (after issue(): a failure there re-reads these bytes)
        return m;
      }
      holding_ = false;
    }
    issue();
    if (taken_ == issued_) return 0;
    const uint64_t k = taken_;
    WorkerReply r;
    try {
      r = answer(helper_of(k), Step::kRead);
    } catch (...) {
      failed_ = true;  // the calls after it were dropped: no later read may go on
      drain();
      throw;
    }
    const Call c = ring_[k % ring_.size()];
    ++taken_;
    holding_ = true;
    hold_pos_ = 0;
    // A call past the end (sent before the end was known) hands out nothing.
    hold_len_ = c.off >= size_ ? 0 : static_cast<size_t>(r.result);
    if (r.result < static_cast<int64_t>(c.len)) {
      // The end of the file (or it shrank since open): later calls are dropped.
      size_ = std::min(size_, c.off + static_cast<uint64_t>(r.result));
    } else if (c.off + c.len > ahead_) {
      ahead_ = kSizeUnknown;  // larger than expected: read on to its end
    }
    issue();  // this helper's next call, before its data is handed out
  }
}

void SmbPoolFile::write(const char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kWrite && !closed_);
  if (failed_) {
    throw Error(ErrorKind::kIo,
                fmt::format("SMB: an earlier write to {}/{} failed; the file is incomplete",
                            where_.share, where_.file),
                "see the first error; remove the file and write it again");
  }
  while (n > 0) {
    auto& w = helper_of(issued_);
    const size_t want = static_cast<size_t>(call_len(issued_));
    // Call issued_'s half is free once the call before it there was
    // answered: at most the other half's call still owed.
    while (fill_ == 0 && w.queued >= 2) {
      try {
        answer(w, Step::kWrite);
      } catch (...) {
        failed_ = true;
        throw;
      }
    }
    const size_t k = std::min(n, want - fill_);
    std::memcpy(w.slot + half_of(issued_) + fill_, buf, k);
    fill_ += k;
    buf += k;
    n -= k;
    if (fill_ == want) {
      s_.send_request(w, kWWrite, next_off_, want, {}, false, half_of(issued_));
      ++w.queued;
      next_off_ += want;
      ++issued_;
      fill_ = 0;
      note();
    }
  }
}

void SmbPoolFile::pwrite(const char* buf, size_t n, uint64_t offset) {
  CP_CHECK(mode_ == Mode::kWrite && !closed_);
  own_->pwrite(buf, n, offset);
}

void SmbPoolFile::close() {
  if (closed_) return;
  closed_ = true;
  std::optional<Error> first;
  auto keep = [&](const Error& e) {
    if (!first) first = e;
  };
  const Step data_step = mode_ == Mode::kWrite ? Step::kWrite : Step::kRead;
  if (mode_ == Mode::kWrite && !failed_ && fill_ > 0) {
    auto& w = helper_of(issued_);
    try {
      while (w.queued >= 2) answer(w, Step::kWrite);
      s_.send_request(w, kWWrite, next_off_, fill_, {}, false, half_of(issued_));
      ++w.queued;
      next_off_ += fill_;
      ++issued_;
    } catch (const Error& e) {
      keep(e);
    }
    fill_ = 0;
  }
  for (size_t i = 0; i < s_.workers(); ++i) {
    auto& w = s_.worker(i);
    while (w.queued > 0) {
      try {
        answer(w, data_step);
      } catch (const Error& e) {
        keep(e);
      }
    }
  }
  holding_ = false;
  // Every handle closes at once: the helpers' and this connection's round
  // trips overlap.
  const Step step = mode_ == Mode::kWrite ? Step::kClose : Step::kCloseRead;
  std::vector<bool> asked(s_.workers(), false);
  for (size_t i = 0; i < s_.workers(); ++i) {
    try {
      s_.send_request(s_.worker(i), kWClose, 0, 0);
      asked[i] = true;
    } catch (const Error& e) {
      keep(e);
    }
  }
  try {
    own_->close();
  } catch (const Error& e) {
    keep(e);
  }
  for (size_t i = 0; i < s_.workers(); ++i) {
    try {
      if (asked[i]) s_.wait_reply(s_.worker(i), step, where_);
    } catch (const Error& e) {
      keep(e);
    }
  }
  if (first) throw *first;
}

}  // namespace cp::transfer::smb
