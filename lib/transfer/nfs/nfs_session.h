// The nfs driver: libnfs (Debian 12: 4.0), NFSv3 or NFSv4 over TCP, one
// context (one TCP connection) per session. nfs://host[:port]/export[/dir]:
// the URL's whole path is what is mounted (NFSv4: a path in the server's
// pseudo file system; NFSv3: an export or a directory below one, as the
// server's MOUNT allows).
//
// Reads and writes are pipelined: the driver keeps up to `depth` requests of
// `request_size` bytes in flight on the one connection with libnfs's async
// calls (nfs_pread_async / nfs_pwrite_async, driven by poll + nfs_service),
// like the Linux client's readahead and writeback. What libnfs 4.0 does with
// a call, and so why request_size is capped:
// - NFSv3: a call larger than the server's FSINFO rtmax/wtmax is split into
//   several RPCs; the driver caps request_size at them so that `depth` is the
//   real number of READs/WRITEs on the wire.
// - NFSv4: one READ/WRITE per call whatever its size, and libnfs does not ask
//   the server's maxread/maxwrite; a server that answers a READ short (its
//   limit) gets the rest asked again, and a short WRITE is sent again from
//   where it stopped. The largest answer seen is recorded.
// - NFSv4 WRITEs: libnfs 4.0's own (nfs_pwrite_async) cannot carry more than
//   ~3.8 KiB (see write4_async below for why), so the driver sends each WRITE
//   COMPOUND itself through libnfs's PDU calls, on the same connection and
//   state, with an encode buffer sized to the data, as libnfs does for NFSv3.
// - Writes are UNSTABLE; close() sends COMMIT (nfs_fsync) before CLOSE, as
//   the Linux client does at close, so a write sample includes it.
// - A read's data arrives in libnfs's buffer and is copied once into the
//   driver's (libnfs 4.0 has no call that reads into the caller's buffer).
//
// Auth is AUTH_SYS: the uid/gid the server checks. Options uid=/gid= set
// them; else the share's user, looked up on this host (like a Linux client,
// which sends its local ids); else the agent's own. A password is not used.
//
// Depth: a request's round trip is idle time unless others are out, so the
// default depth=auto sizes the requests in flight to the path once mounted:
// twice the bytes the path holds (the least RTT the kernel timed on the
// mount's connection x option path_rate, which the protocol stage sets from
// the TCP stage; 10 Gbit/s when unknown) plus two requests, at least 4,
// within 32 MiB (nfs_auto_depth). Properties: depth_chosen, path_rtt_ms,
// path_rate, and per file in_flight_bytes (the most it kept out).
//
// Share options: version=3|4 (default 4, as Linux mounts today),
// request_size (bytes per READ/WRITE, default 1MiB, the Linux client's
// default rsize/wsize; READs at most 1 MiB, what libnfs takes), depth
// (requests in flight: auto, the default, or 1-1024), path_rate (for
// depth=auto), uid, gid, timeout (seconds without an answer before a call
// fails, default 30).
//
// This header is internal to lib/transfer/nfs/: the session (nfs_session.cc),
// a file's pipeline of requests (nfs_file.cc), libnfs 4.0.0's NFSv4 WRITEs
// (nfs_write4.cc), error mapping (nfs_error.cc) and the options
// (nfs_options.cc). Pure helpers for tests are in transfer/protocols.h.
// Every file that includes it is compiled with the same CP_LIBNFS_4_0_0.
#pragma once

#include <nfsc/libnfs.h>
#include <poll.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/share_url.h"

namespace cp::transfer::nfs {

// One request of a pipelined file: a range and where its bytes are.
struct Slot {
  uint64_t offset = 0;     // where the range starts in the file
  uint64_t want = 0;       // its length, bytes
  uint64_t done = 0;       // bytes read into buf / written from it so far
  bool pending = false;    // a call is on the wire
  int error = 0;           // -errno of a failed call, 0 if none
  std::string detail;      // libnfs's text for it
  bool short_eof = false;  // reads: the server said end of file inside the range
  std::vector<char> buf;   // request_size bytes
  // Reads: where answers go instead of buf: the caller's buffer while read()
  // waits for this very slot (saves a copy of every byte it catches there).
  char* direct = nullptr;
};

// A file's requests, shared with the callbacks so that a call answered after
// its File is gone (a failed transfer) still finds live memory.
struct Flight {
  std::vector<Slot> slots;
  uint64_t max_answer = 0;  // largest READ answer / WRITE count seen, bytes
};

struct Call {
  std::shared_ptr<Flight> flight;
  size_t index;
  bool read;
};

// Ends a call: `status` is bytes moved, or -errno with `detail` saying why.
void answered(std::unique_ptr<Call> call, int64_t status, const char* detail, const void* data);

#ifdef CP_LIBNFS_4_0_0
// Queues one NFSv4 WRITE (UNSTABLE4, the open's stateid) of `count` bytes at
// `offset`. 0: queued, its answer goes to answered(call); -1: failed,
// `error` says why; 1: libnfs is not laid out as 4.0.0 (use
// nfs_pwrite_async). nfs_write4.cc says why the driver sends these itself.
int write4_async(nfs_context* nfs, nfsfh* fh, uint64_t offset, uint64_t count, const char* buf,
                 Call* call, std::string& error);
// Queues one NFSv4 READ (the open's stateid) of `count` bytes at `offset`;
// its answer goes to done(priv, bytes or -errno, why, data, end of file).
// 0: queued; -1: failed, `error` says why; 1: libnfs is not laid out as
// 4.0.0 (use nfs_pread_async, which does not tell the end of file).
using Read4Done = void (*)(void* priv, int status, const char* detail, const char* data, bool eof);
int read4_async(nfs_context* nfs, nfsfh* fh, uint64_t offset, uint32_t count, Read4Done done,
                void* priv, std::string& error);
#endif

constexpr uint64_t kLibnfsMaxXfer = 1 << 20;  // NFS_MAX_XFER_SIZE, bytes

struct FileRecord {  // what one file kept in flight, for properties()
  std::string op;
  uint64_t request_size = 0, depth = 0, in_flight = 0, max_answer = 0;
};

class NfsSession;

class NfsFile : public File {
 public:
  NfsFile(NfsSession& s, nfsfh* fh, Mode mode, Place where, uint64_t size);
  ~NfsFile() override;
  size_t read(char* buf, size_t n) override;
  size_t pread(char* buf, size_t n, uint64_t offset) override;
  void write(const char* buf, size_t n) override;
  // The free part of the request being staged: the caller's bytes land in
  // the WRITE's own buffer (no copy in write()).
  std::span<char> write_buffer(size_t max) override;
  void commit_write(size_t n) override;
  void pwrite(const char* buf, size_t n, uint64_t offset) override;
  void close() override;

 private:
  void issue(size_t i);      // sends the rest of slot i
  void wait_slot(size_t i);  // until slot i is complete (resending short answers)
  void drain();              // until nothing is on the wire
  void retire_head();        // waits out the oldest slot in order_ and frees it
  void read_head_out();      // reads: the head slot is handed out: free it, read further
  void retire_all();         // retire_head() until order_ is empty (writes: all answered)
  void drop_queued();        // reads: drain(), then frees every slot queued ahead
  void send_staged();        // writes: the slot being filled goes out as it is (if not empty)
  void fill_reads();         // keeps `depth` reads ahead of the reader
  void check(Slot& s, Step step);
  void note();
  size_t free_write_slot();
  void staged(size_t n);

  NfsSession& s_;
  nfsfh* fh_;
  Mode mode_;
  Place where_;
  uint64_t size_;  // reads: the size at open
  std::shared_ptr<Flight> fl_ = std::make_shared<Flight>();
  std::deque<size_t> order_;  // slots in file order (reads: queued ahead; writes: in flight)
  std::vector<size_t> idle_;  // free slots
  uint64_t next_ = 0;         // reads: next offset to ask; writes: next offset to write
  size_t head_pos_ = 0;       // reads: bytes of the head slot already handed out
  size_t stage_ = SIZE_MAX;   // writes: the slot being filled, SIZE_MAX if none
  bool failed_ = false;       // writes: a call failed
  uint64_t peak_ = 0;         // bytes in flight at most
};

class NfsSession : public Session {
 public:
  NfsSession(const Share& share, const CancelToken& cancel);

  std::unique_ptr<File> open(const std::string& rel, Mode mode, uint64_t) override;
  void remove(const std::string& rel) override;
  FileInfo stat(const std::string& rel) override;
  void mkdir(const std::string& rel) override;
  void rmdir(const std::string& rel) override;
  // The small-file pass's operations, several in flight on this connection
  // (nfs_file_ops.cc).
  void run_file_ops(FileOps& ops) override;
  // What the chains send for the negotiated version (nfs_file_ops.cc).
  std::array<RoundTrips, 4> file_round_trips() const override;
  std::map<std::string, std::string> properties() const override;

  // Bytes per READ or WRITE: the option, within what the server takes (and,
  // for NFSv4 writes, what libnfs can encode).
  uint64_t request_size(Mode mode) const;

  // libnfs 4.0's nfs_pwrite_async encodes an NFSv4 COMPOUND into a fixed
  // 4 KiB buffer (see write4_async), so a WRITE of more than about 3.8 KiB
  // fails to encode before anything is sent ("ZDR error: Failed to encode
  // COMPOUND4args"); nfs-cp fails the same way. When the driver cannot send
  // its own WRITEs, on that failure the session's WRITE size steps down (to
  // 4 KiB, then by 256 bytes) until one encodes; false when it cannot go
  // lower or the failure is another.
  bool shrink_write_cap(uint64_t tried, const std::string& detail);
  // NFSv4 writes: whether the driver sends its WRITEs itself (write4_async).
  bool own_v4_writes() const { return opts_.version == 4 && own_v4_writes_; }
  void no_own_v4_writes() { own_v4_writes_ = false; }
  unsigned depth() const { return depth_; }
  nfs_context* ctx() const { return nfs_; }

  // Runs libnfs until `done()` or a failure of the connection; throws
  // Error(kCancelled) when cancelled, kIo when the server is silent for
  // `timeout` seconds or the connection fails.
  template <typename Done>
  void run_until(Done done, const Place& where, Step step) {
    double last = monotonic_seconds();
    while (!done()) {
      cancel_.check();
      pollfd p{nfs_get_fd(nfs_), static_cast<short>(nfs_which_events(nfs_)), 0};
      const int r = ::poll(&p, 1, 100);
      if (r < 0 && errno != EINTR) {
        throw Error(ErrorKind::kIo, "poll on the NFS connection failed: " + errno_text(errno));
      }
      if (r > 0) {
        last = monotonic_seconds();
        if (nfs_service(nfs_, p.revents) < 0) {
          throw nfs_error(ECONNRESET, error_text(), step, where);
        }
      } else if (monotonic_seconds() - last > opts_.timeout_s) {
        throw nfs_error(
            ETIMEDOUT,
            fmt::format("no answer for {:.0f} s with requests outstanding", opts_.timeout_s), step,
            where);
      }
    }
  }

  void record(const FileRecord& r) {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = r;
  }

  std::string error_text() const {
    const char* e = nfs_get_error(nfs_);
    return e ? e : "";
  }
  [[noreturn]] void fail(int rc, Step step, const Place& where) {
    throw nfs_error(rc < 0 ? -rc : EIO, error_text(), step, where);
  }

  Place place(const std::string& rel) const {
    Place p = where_;
    p.file = rel;
    return p;
  }
  void make_parents(const std::string& rel);
  // NFSv3: the handle of directory `dir` (relative; "" the share's root),
  // looked up once a session (the path's LOOKUPs, ACCESS); throws as open,
  // naming `step`.
  const std::string& dir_handle3(const std::string& dir, Step step);
  void forget_dirs(const std::string& rel);  // `rel` and what is under it
  // NFSv4 reads: whether the driver sends its READs itself (read4_async:
  // its answer says end of file, so no GETATTR for the size).
  bool own_v4_reads() const { return opts_.version == 4 && own_v4_reads_; }
  void no_own_v4_reads() { own_v4_reads_ = false; }

  const CancelToken& cancel_;
  ShareUrl url_;
  NfsOptions opts_;
  Place where_;
  uint64_t read_max_ = 0, write_max_ = 0;
  double path_rtt_ = 0;      // seconds, 0 unknown
  unsigned depth_ = 1;       // requests in flight (the option, or chosen by depth=auto)
  std::string client_name_;  // NFSv4: this session's own (nfs4_set_client_name)
  uint64_t write_cap_ = 0;   // NFSv4 writes: the largest libnfs encodes (0: not hit)
#ifdef CP_LIBNFS_4_0_0
  bool own_v4_writes_ = true;
  bool own_v4_reads_ = true;
#else
  bool own_v4_writes_ = false;
  bool own_v4_reads_ = false;
#endif
  std::map<std::string, std::string> dir_fh_;  // NFSv3: directory -> its handle's bytes
  std::array<NfsOpsSent, 4> sent_{};           // per phase (files::kPhases order)
  mutable std::mutex mu_;
  FileRecord last_;
  std::unique_ptr<nfs_context, void (*)(nfs_context*)> ctx_{nullptr, nfs_destroy_context};
  nfs_context* nfs_ = nullptr;  // ctx_'s
};

// The driver (nfs_session.cc), for kNfsDriver's table (nfs_options.cc).
std::unique_ptr<Driver> make_driver();

}  // namespace cp::transfer::nfs
