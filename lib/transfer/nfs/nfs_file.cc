// The nfs driver's files: up to `depth` READs or WRITEs in flight on the
// session's connection through libnfs's async calls (see nfs_session.h).
#include <nfsc/libnfs.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "transfer/nfs/nfs_session.h"
#include "transfer/protocols.h"

namespace cp::transfer::nfs {
namespace {

// libnfs's callback for nfs_pread_async / nfs_pwrite_async.
void on_answer(int status, nfs_context* nfs, void* data, void* priv) {
  // On failure `data` is a string for some and the RPC's result for others;
  // libnfs's error text is set for both.
  answered(std::unique_ptr<Call>(static_cast<Call*>(priv)), status,
           status < 0 ? nfs_get_error(nfs) : nullptr, data);
}

}  // namespace

// Ends a call: `status` is bytes moved, or -errno with `detail` saying why.
void answered(std::unique_ptr<Call> call, int64_t status, const char* detail, const void* data) {
  Slot& s = call->flight->slots[call->index];
  s.pending = false;
  if (status < 0) {
    s.error = static_cast<int>(status);
    s.detail = detail ? detail : "";
    return;
  }
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(status), s.want - s.done);
  if (call->read) {
    if (n > 0) std::memcpy((s.direct ? s.direct : s.buf.data()) + s.done, data, n);
    if (n == 0) s.short_eof = true;
  } else if (n == 0) {
    s.error = -EIO;
    s.detail = "the server wrote 0 bytes";
  }
  s.done += n;
  call->flight->max_answer = std::max(call->flight->max_answer, n);
}

NfsFile::NfsFile(NfsSession& s, nfsfh* fh, Mode mode, Place where, uint64_t size)
    : s_(s), fh_(fh), mode_(mode), where_(std::move(where)), size_(size) {
  fl_->slots.resize(s_.depth());
  for (size_t i = s_.depth(); i-- > 0;) idle_.push_back(i);
}

NfsFile::~NfsFile() {
  if (!fh_) return;
  try {
    drain();
  } catch (...) {
  }
  nfs_close(s_.ctx(), fh_);
}

void NfsFile::note() {
  uint64_t bytes = 0;
  for (const Slot& sl : fl_->slots) {
    if (sl.pending) bytes += sl.want - sl.done;
  }
  peak_ = std::max(peak_, bytes);
}

void NfsFile::issue(size_t i) {
  Slot& sl = fl_->slots[i];
  CP_CHECK(!sl.pending && sl.done < sl.want);
  for (;;) {
    auto call = std::make_unique<Call>(Call{fl_, i, mode_ == Mode::kRead});
    const uint64_t off = sl.offset + sl.done;
    // Writes: at most what libnfs can encode (NFSv4, see write_cap()).
    const uint64_t count = mode_ == Mode::kRead
                               ? sl.want - sl.done
                               : std::min(sl.want - sl.done, s_.request_size(Mode::kWrite));
    std::string detail;
    int rc = 1;
#ifdef CP_LIBNFS_4_0_0
    if (mode_ == Mode::kWrite && s_.own_v4_writes()) {
      rc = write4_async(s_.ctx(), fh_, off, count, sl.buf.data() + sl.done, call.get(), detail);
      if (rc == 1) s_.no_own_v4_writes();  // not 4.0.0's layout: libnfs's calls from now on
    }
#endif
    if (rc == 1) {
      rc = mode_ == Mode::kRead ? nfs_pread_async(s_.ctx(), fh_, off, count, on_answer, call.get())
                                : nfs_pwrite_async(s_.ctx(), fh_, off, count,
                                                   sl.buf.data() + sl.done, on_answer, call.get());
      if (rc != 0) detail = s_.error_text();
    }
    if (rc == 0) {
      call.release();  // the callback owns it now
      break;
    }
    // Queueing failed before anything was sent: the text says why.
    if (mode_ == Mode::kWrite && s_.shrink_write_cap(count, detail)) continue;
    throw nfs_error(EIO, detail, mode_ == Mode::kRead ? Step::kRead : Step::kWrite, where_);
  }
  sl.pending = true;
  note();
}

void NfsFile::check(Slot& sl, Step step) {
  if (sl.error == 0) return;
  if (mode_ == Mode::kWrite) failed_ = true;
  const int err = -sl.error;
  sl.error = 0;
  throw nfs_error(err, sl.detail, step, where_);
}

void NfsFile::wait_slot(size_t i) {
  const Step step = mode_ == Mode::kRead ? Step::kRead : Step::kWrite;
  Slot& sl = fl_->slots[i];
  for (;;) {
    s_.run_until([&] { return !sl.pending; }, where_, step);
    check(sl, step);
    if (sl.done == sl.want || sl.short_eof) return;
    issue(i);  // a short answer (the server's limit): ask for the rest
  }
}

void NfsFile::retire_head() {
  const size_t i = order_.front();
  wait_slot(i);
  order_.pop_front();
  idle_.push_back(i);
}

void NfsFile::read_head_out() {
  const size_t i = order_.front();
  const Slot& sl = fl_->slots[i];
  order_.pop_front();
  idle_.push_back(i);
  head_pos_ = 0;
  if (sl.short_eof) {
    size_ = sl.offset + sl.done;  // the file ended early (it shrank since open)
    next_ = std::min(next_, size_);
  }
  fill_reads();
}

void NfsFile::retire_all() {
  while (!order_.empty()) retire_head();
}

void NfsFile::drop_queued() {
  drain();
  for (size_t j : order_) idle_.push_back(j);
  order_.clear();
}

void NfsFile::send_staged() {
  if (stage_ == SIZE_MAX || fl_->slots[stage_].want == 0) return;
  order_.push_back(stage_);
  issue(stage_);
  stage_ = SIZE_MAX;
}

void NfsFile::drain() {
  for (size_t i = 0; i < fl_->slots.size(); ++i) {
    Slot& sl = fl_->slots[i];
    s_.run_until([&] { return !sl.pending; }, where_,
                 mode_ == Mode::kRead ? Step::kRead : Step::kWrite);
  }
}

void NfsFile::fill_reads() {
  const uint64_t req = s_.request_size(Mode::kRead);
  while (!idle_.empty() && next_ < size_) {
    const size_t i = idle_.back();
    idle_.pop_back();
    Slot& sl = fl_->slots[i];
    sl.offset = next_;
    sl.want = std::min(req, size_ - next_);
    sl.done = 0;
    sl.short_eof = false;
    sl.buf.resize(req);
    next_ += sl.want;
    order_.push_back(i);
    issue(i);
  }
}

size_t NfsFile::read(char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kRead && fh_);
  fill_reads();
  if (order_.empty()) return 0;
  const size_t i = order_.front();
  Slot& sl = fl_->slots[i];
  if (sl.pending && sl.done == 0 && head_pos_ == 0 && n >= sl.want) {
    // Not here yet and the caller takes all of it: straight into its buffer.
    sl.direct = buf;
    try {
      wait_slot(i);
    } catch (...) {
      sl.direct = nullptr;  // later answers must not land in a buffer we gave back
      throw;
    }
    sl.direct = nullptr;
    if (!(sl.short_eof && sl.done == 0)) {
      const size_t k = static_cast<size_t>(sl.done);
      read_head_out();
      s_.record({"read", s_.request_size(Mode::kRead), s_.depth(), peak_, fl_->max_answer});
      return k;
    }
  }
  wait_slot(i);
  if (sl.short_eof && head_pos_ >= sl.done) {
    // The file ended early (it shrank since open): nothing after this.
    size_ = sl.offset + sl.done;
    drop_queued();
    next_ = size_;
    return 0;
  }
  const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sl.done - head_pos_));
  std::memcpy(buf, sl.buf.data() + head_pos_, k);
  head_pos_ += k;
  if (head_pos_ == sl.done && (sl.done == sl.want || sl.short_eof)) read_head_out();
  s_.record({"read", s_.request_size(Mode::kRead), s_.depth(), peak_, fl_->max_answer});
  return k;
}

size_t NfsFile::pread(char* buf, size_t n, uint64_t offset) {
  CP_CHECK(mode_ == Mode::kRead && fh_);
  // A random read starts afresh: nothing read ahead is kept.
  drop_queued();
  head_pos_ = 0;
  if (offset >= size_) return 0;
  const size_t i = idle_.back();
  Slot& sl = fl_->slots[i];
  sl.offset = offset;
  sl.want =
      std::min<uint64_t>({static_cast<uint64_t>(n), s_.request_size(Mode::kRead), size_ - offset});
  sl.done = 0;
  sl.short_eof = false;
  sl.buf.resize(sl.want);
  issue(i);
  wait_slot(i);
  std::memcpy(buf, sl.buf.data(), sl.done);
  next_ = offset + sl.done;  // sequential reads go on from here
  s_.record({"read", sl.want, 1, peak_, fl_->max_answer});
  return static_cast<size_t>(sl.done);
}

size_t NfsFile::free_write_slot() {
  if (idle_.empty()) retire_head();  // all in flight: the oldest must finish first
  // Others that finished meanwhile are free too (and their errors seen).
  while (!order_.empty() && !fl_->slots[order_.front()].pending) retire_head();
  const size_t i = idle_.back();
  idle_.pop_back();
  return i;
}

void NfsFile::write(const char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kWrite && fh_);
  while (n > 0) {  // write_buffer refuses a file whose earlier write failed
    const std::span<char> room = write_buffer(n);
    std::memcpy(room.data(), buf, room.size());
    buf += room.size();
    n -= room.size();
    staged(room.size());
  }
  s_.record({"write", s_.request_size(Mode::kWrite), s_.depth(), peak_, fl_->max_answer});
}

std::span<char> NfsFile::write_buffer(size_t max) {
  CP_CHECK(mode_ == Mode::kWrite && fh_ && max > 0);
  if (failed_) {
    throw Error(ErrorKind::kIo,
                fmt::format("NFS: an earlier write to {}/{} failed; the file is incomplete",
                            where_.share, where_.file),
                "see the first error; remove the file and write it again");
  }
  const uint64_t req = s_.request_size(Mode::kWrite);
  if (stage_ == SIZE_MAX) {
    stage_ = free_write_slot();
    Slot& sl = fl_->slots[stage_];
    sl.buf.resize(req);
    sl.offset = next_;
    sl.want = 0;
    sl.done = 0;
  }
  Slot& sl = fl_->slots[stage_];
  return {sl.buf.data() + sl.want, static_cast<size_t>(std::min<uint64_t>(max, req - sl.want))};
}

void NfsFile::commit_write(size_t n) {
  staged(n);
  s_.record({"write", s_.request_size(Mode::kWrite), s_.depth(), peak_, fl_->max_answer});
}

// `n` bytes were put into the staging slot's free part: a full slot goes out.
void NfsFile::staged(size_t n) {
  CP_CHECK(stage_ != SIZE_MAX);
  Slot& sl = fl_->slots[stage_];
  CP_CHECK(sl.want + n <= sl.buf.size());
  sl.want += n;
  next_ += n;
  if (sl.want == sl.buf.size()) {
    order_.push_back(stage_);
    issue(stage_);
    stage_ = SIZE_MAX;
  }
}

void NfsFile::pwrite(const char* buf, size_t n, uint64_t offset) {
  CP_CHECK(mode_ == Mode::kWrite && fh_);
  // Whatever sequential writes are staged go first, at their own offsets.
  if (stage_ != SIZE_MAX && fl_->slots[stage_].want == 0) {
    idle_.push_back(stage_);
    stage_ = SIZE_MAX;
  }
  send_staged();
  next_ = offset;
  write(buf, n);
  send_staged();
  // A random write is done before the next one starts (one at a time, as
  // pread reads): the sweep's random cells are request-by-request figures.
  retire_all();
}

void NfsFile::close() {
  if (!fh_) return;
  nfsfh* fh = fh_;
  try {
    if (mode_ == Mode::kWrite && !failed_) {
      send_staged();
      retire_all();
      s_.record({"write", s_.request_size(Mode::kWrite), s_.depth(), peak_, fl_->max_answer});
      // COMMIT: the UNSTABLE writes reach the server's disk (or its cache
      // policy) before the sample ends, as at a Linux client's close.
      const int rc = nfs_fsync(s_.ctx(), fh);
      if (rc != 0) s_.fail(rc, Step::kClose, where_);
    } else {
      drain();
    }
  } catch (...) {
    fh_ = nullptr;
    try {
      drain();
    } catch (...) {
    }
    nfs_close(s_.ctx(), fh);
    throw;
  }
  fh_ = nullptr;
  const int rc = nfs_close(s_.ctx(), fh);
  if (rc != 0) s_.fail(rc, mode_ == Mode::kRead ? Step::kCloseRead : Step::kClose, where_);
}

}  // namespace cp::transfer::nfs
