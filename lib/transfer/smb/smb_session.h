// The smb driver: libsmbclient, SMB2 or later (SMB1 is refused), one
// context per session, plus with option connections=N > 1 N helper
// processes with a context (and SMB connection) each that move a file's
// calls N at a time (SmbPoolFile). smb://host[:port]/share[/dir].
//
// What libsmbclient (Samba 4.17) does with a call, and so what this driver
// can keep in flight on its one connection:
// - smbc_read(count) is cli_pull with a window of `count`: requests of the
//   negotiated maximum read size (credits permitting, at most 256), all in
//   flight at once; the window drains at the end of each call.
// - smbc_write(count) is cli_smb2_writeall: requests of the negotiated
//   maximum write size, ONE at a time. Nothing in libsmbclient's public API
//   keeps two writes in flight (smbclient's put uses the private cli_push),
//   and Debian 12's libsmbclient does not export smbc_thread_posix, so
//   contexts cannot be driven from several threads.
// So every read and write is one call of `io_size` bytes, staged in one
// bounded buffer when the caller's block is smaller. Nothing is in flight
// between two calls (a round trip plus the caller's work on the data), so
// the default is 8 MiB when the path's round trip is over 1 ms, else 1 MiB
// (there the caller's work dominates; measured on the lab's 1 Gbit/s tbf
// link, 4 MiB calls read 8 % slower than 1 MiB ones). A read of several
// requests never asks past the end of the file: a window that crosses it
// leaves requests in flight when cli_pull returns, and every later call on
// the connection then fails with EINVAL ("async call in flight"), which is
// what a server with a small `smb2 max read` showed; such reads take the
// size at open (an fstat, a round trip). Where a call is one request, one
// past the end is only an empty answer, so no fstat is sent: the size hint
// (what the caller expects) bounds the calls, and the end is the answer
// that is short (libsmbclient asks once more after a short one, so the
// calls stop at the hint and one more starts there). A file the caller
// expects to fit in one call (a small file) takes its size at open
// instead, as smbclient's get does: one QUERY_INFO, then one READ of
// exactly the size, where a READ past the end costs two (the short one and
// an END_OF_FILE) and makes the server set io_size aside for a few KiB.
//
// Round trips per file (each is in the sample's time on a long path): an
// open is one CREATE (libsmbclient's own check of a cached connection, an
// ECHO before every open, is skipped for a connection that answered a call
// within kEchoAfterIdle: check_server), a small file's read a QUERY_INFO,
// the data, one CLOSE; the helpers open and close while the session's
// connection does.
//
// The sizes the server accepts are not in libsmbclient's API: at connect a
// separate TCP connection sends one SMB2 NEGOTIATE and reads them from the
// response (max_read_size, max_write_size; "unknown" when that fails).
// properties() also records what one call kept in flight in the last file
// (in_flight_bytes, request_size, depth); with helpers, one call per busy
// helper (its next call waits in its socket, not on the wire).
//
// What was negotiated otherwise (dialect, signing, encryption) is not
// exposed either; properties() records what this client asked for, and the
// server can tell the rest (`smbstatus --json`). The probe's answer names the
// dialect the server chooses from the same offer (property "dialect"); with
// max_protocol=NT1 (SMB1, for servers of that era and `max xmit`) the probe
// offers NT1 and records the server's MaxBufferSize ("max_xmit").
//
// Connections: a call's round trip is idle time on one connection, and
// writes keep one request in flight whatever the call's size, so no call size
// fills a long path for writes. Option connections=auto (the default) adds
// helper connections where the path is long (smb_auto_connections: 3 over
// 1 ms with the path's rate unknown, or as many as cover a call's round trip
// when option path_rate gives it), so that the calls of the others cover
// each one's round trip. The path's round trip is the least of several the
// kernel timed on the probe's connection (its handshake and kProbeEchoes
// SMB2 ECHOs): one answer delayed by a busy host does not make a LAN look
// long (properties: path_rtt_ms, path_rtt_samples). Each helper's slot is two
// halves (calls of io_size / 2): the next call is already with the helper
// while the last one's data is handed over, so no helper waits for this
// process between calls; the first calls are staggered so that the helpers'
// calls do not all end (and idle for a round trip) at once. smbd serves each
// connection with a process of its own: a sample with connections > 1 says so
// in its properties (connections, connections_chosen), since it is not what
// one connection (one smbd process) moves.
//
// Share options: "encrypt" = "default" | "none" | "request" | "require";
// "io_size" (bytes per smbc_read/smbc_write call, e.g. "4MiB"; default as
// above); "connections" ("auto", the default, or 1-16); "path_rate" (the
// path's rate, e.g. "1gbit", for connections=auto); "timeout"
// (seconds); "workgroup"; "min_protocol" (default SMB2_02; NT1 allows SMB1),
// "max_protocol" (SMB3; NT1 for SMB1 only).
//
// This header is internal to lib/transfer/smb/: the session and its files
// (smb_session.cc), the helper-process pool (smb_pool.cc), the NEGOTIATE
// probe (smb_negotiate.cc), error mapping (smb_error.cc) and the options
// (smb_options.cc). Pure helpers for tests are in transfer/protocols.h.
#pragma once

#include <libsmbclient.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/share_url.h"

namespace cp::transfer::smb {

// Default bytes per call (see the top): small where the round trip is
// short, large where it is long.
constexpr uint64_t kLanIoSize = 1 << 20;
constexpr uint64_t kWanIoSize = 8 << 20;
// A file's size before its end is read (reads that need no fstat).
constexpr uint64_t kSizeUnknown = UINT64_MAX;
// A NEGOTIATE round trip longer than this counts as a long path (seconds).
constexpr double kLanRtt = 0.001;

// What a helper process is asked (over a SOCK_SEQPACKET socketpair; the data
// goes through its slot of a shared mapping) and what it answers.
enum WorkerOp : uint32_t { kWOpen = 1, kWRead, kWWrite, kWClose, kWQuit };
struct WorkerRequest {
  uint32_t op = 0;
  uint32_t write = 0;  // kWOpen: for writing
  uint64_t offset = 0, len = 0;
  uint64_t slot_off = 0;  // kWRead/kWWrite: where in the helper's slot the data is
  char url[4096] = {};
};
struct WorkerReply {
  int64_t result = 0;  // bytes, 0, or -1 with err
  int32_t err = 0;
  char status[64] = {};  // NT_STATUS_... from its log
};
// cli_pull keeps at most this many read requests of a call in flight.
constexpr uint64_t kPullMaxChunks = 256;
// Longest wait for the NEGOTIATE probe's connection and answer (seconds).
constexpr double kProbeTimeout = 5;
// SMB2 ECHOs the probe sends after NEGOTIATE, each a round trip the kernel
// times: with the handshake, the path's RTT is the least of these samples, so
// one answer that waited for a busy CPU does not make a LAN look long.
constexpr int kProbeEchoes = 4;
// libsmbclient sends an SMB2 ECHO (a round trip) to check a cached connection
// before every path call (open, unlink, opendir). A connection that answered
// a call within this many seconds is alive as far as an echo could tell, so
// only one idle longer is checked (seconds).
constexpr double kEchoAfterIdle = 15;
constexpr size_t kLogKeep = 4096;  // bytes of libsmbclient's log kept per thread

// libsmbclient's log is process-wide; its calls run on the caller's thread,
// so each thread keeps its own recent lines (for NT_STATUS names).
extern thread_local std::string t_log;

// A context's user data: its login, and what its check-server hook needs.
struct Credentials {
  std::string workgroup, user, password;
  double last_ok = -1e9;  // monotonic seconds of the last call that succeeded
  smbc_check_server_fn library_check = nullptr;  // libsmbclient's own (an echo)
};

// The NEGOTIATE probe (smb_negotiate.cc): asks host:port for its SMB2 limits
// with one NEGOTIATE on a connection of its own, then times a few ECHOs on
// it; nullopt when it cannot (closed port, timeout, an answer that is not
// SMB2): the session's own login then reports the problem. *rtt: the least
// round trip the kernel saw on the connection; *handshake_rtt: the
// handshake's alone; *samples: the round trips *rtt is the least of.
std::optional<Smb2Limits> probe_limits(const std::string& host, uint16_t port,
                                       const std::string& min_protocol,
                                       const std::string& max_protocol, double* rtt,
                                       double* handshake_rtt, int* samples);
// SMB1 only (max_protocol NT1): what the server answers an NT1 offer, the
// one libsmbclient then makes; nullopt when it does not answer one.
std::optional<Smb1Negotiate> probe_smb1(const std::string& host, uint16_t port, double* rtt,
                                        double* handshake_rtt, int* samples);

// The driver (smb_session.cc), for kSmbDriver's table (smb_options.cc).
std::unique_ptr<Driver> make_driver();
class SmbSession;

// A helper process (option connections > 1), as its session sees it.
struct Helper {
  pid_t pid = -1;
  int fd = -1;                                // its end of the socketpair
  char* slot = nullptr;                       // its io_size bytes of the shared mapping
  enum State { kIdle, kBusy } state = kIdle;  // opening and closing: an answer owed
  unsigned queued = 0;                        // reads and writes: calls sent, not yet answered
};

// What one file kept in flight, for properties(): the largest call and what
// libsmbclient had of it on the wire at once (bytes).
struct Flight {
  std::string op;  // "read" or "write"; empty before the first file
  uint64_t request_size = 0, in_flight = 0, requests = 0;
};

class SmbFile : public File {
 public:
  SmbFile(SmbSession& s, SMBCFILE* f, Mode mode, Place where, uint64_t size);
  ~SmbFile() override;
  size_t read(char* buf, size_t n) override;
  size_t pread(char* buf, size_t n, uint64_t offset) override;
  void write(const char* buf, size_t n) override;
  void pwrite(const char* buf, size_t n, uint64_t offset) override;
  void close() override;
  // Reads: the next read() starts at `offset`, nothing read ahead kept.
  void restart_at(uint64_t offset);

 private:
  void seek(uint64_t offset);
  // One smbc_read of n bytes at pos_ (n <= what is left of the file).
  size_t read_call(char* buf, size_t n);
  // smbc_write of all n bytes at pos_.
  void write_call(const char* buf, size_t n);
  void flush();

  SmbSession& s_;
  SMBCFILE* f_;
  Mode mode_;
  Place where_;
  uint64_t size_;     // reads: the size at open, which no read asks past
  uint64_t pos_ = 0;  // libsmbclient's file offset: where the next call starts
  // Reads: bytes read ahead, [stage_pos_, stage_end_) not yet handed out.
  // Writes: bytes not yet written, at pos_. Bounded by io_size, and grown
  // only as far as a call needs (a 4 KiB file stages 4 KiB, not io_size).
  std::vector<char> stage_;
  size_t stage_pos_ = 0, stage_end_ = 0;
  bool failed_ = false;  // writes: a call failed, so the file has a hole
};

// A file whose data moves through the session's helper processes: call k
// (io_size bytes at k * io_size) goes to helper k % connections, so up to
// `connections` calls are in flight. Random access goes through the
// session's own handle (an SmbFile).
class SmbPoolFile : public File {
 public:
  // `size`: known at open, or kSizeUnknown (reads end at a short answer);
  // `size_hint`: the size the caller expects (0: none), how far ahead calls
  // go while the size is unknown.
  SmbPoolFile(SmbSession& s, std::unique_ptr<SmbFile> own, Mode mode, Place where, uint64_t size,
              uint64_t size_hint)
      : s_(s),
        own_(std::move(own)),
        mode_(mode),
        where_(std::move(where)),
        size_(size),
        ahead_(size == kSizeUnknown && size_hint > 0 ? size_hint : kSizeUnknown) {
    init();
  }
  ~SmbPoolFile() override;
  size_t read(char* buf, size_t n) override;
  size_t pread(char* buf, size_t n, uint64_t offset) override {
    return own_->pread(buf, n, offset);
  }
  void write(const char* buf, size_t n) override;
  void pwrite(const char* buf, size_t n, uint64_t offset) override;
  void close() override;

 private:
  void issue();
  size_t read_pool(char* buf, size_t n);  // read() through the helpers
  // Bytes of call k (see call_len in the .cc).
  uint64_t call_len(uint64_t k) const;
  // Call k's helper, and its half of that helper's slot.
  Helper& helper_of(uint64_t k);
  uint64_t half_of(uint64_t k) const;
  void init();
  // An answer from `w`, its failure as the error for `step`.
  WorkerReply answer(Helper& w, Step step);
  void note();            // the calls in flight, into the session's record
  void drain() noexcept;  // waits out every call in flight, errors dropped

  SmbSession& s_;
  std::unique_ptr<SmbFile> own_;
  Mode mode_;
  Place where_;
  uint64_t size_;          // reads: the end of the file, once known
  uint64_t ahead_;         // reads of unknown size: no call starts past this offset
  uint64_t next_off_ = 0;  // where the next call starts
  // Each helper's slot is two halves: one call's data is handed over (read
  // out, or filled) while the helper works on the next, already sent to it,
  // in the other, so that no helper waits for this process between calls.
  uint64_t half_ = 0;                // bytes
  uint64_t issued_ = 0, taken_ = 0;  // calls sent / consumed (reads)
  struct Call {
    uint64_t off = 0, len = 0;
  };
  std::vector<Call> ring_;  // reads: call k at k % (2 * helpers), until consumed
  bool holding_ = false;    // reads: call taken_ - 1's data is being handed out
  size_t hold_pos_ = 0, hold_len_ = 0;
  size_t fill_ = 0;                       // writes: bytes in call issued_'s half
  bool failed_ = false, closed_ = false;  // failed_: a call failed (writes: the file has a hole)
  // Reads: a helper failed, so the rest goes through own_ (the session went
  // on with its own connection alone); handed_: bytes handed to the caller.
  bool own_only_ = false;
  uint64_t handed_ = 0;
};

class SmbSession : public Session {
 public:
  using Worker = Helper;
  SmbSession(const Share& share, const CancelToken&);
  ~SmbSession() override;

  std::unique_ptr<File> open(const std::string& rel, Mode mode, uint64_t size_hint) override;
  void remove(const std::string& rel) override;
  FileInfo stat(const std::string& rel) override;
  void mkdir(const std::string& rel) override;
  void rmdir(const std::string& rel) override;
  std::map<std::string, std::string> properties() const override;

  // What a call of `n` bytes keeps in flight, per libsmbclient 4.17 (see the
  // top of this file).
  Flight flight_of(Mode mode, uint64_t n) const;
  // Folds one call of the session's own context into the file's record.
  void note_call(Mode mode, uint64_t n);
  // `sent`: the helpers were already asked to open `url`.
  std::unique_ptr<File> make_pool_file(SMBCFILE* f, Mode mode, Place where, uint64_t size,
                                       const std::string& url, bool sent, uint64_t size_hint = 0);
  // Whether a call of io_size bytes is one SMB2 request (within the
  // server's maximum read or write, as cli_pull rounds it), so that a read
  // past the end of the file leaves nothing in flight.
  bool one_request_per_call(Mode mode) const;
  // A call on this session's connection succeeded now (see check_server).
  void alive() { creds_.last_ok = monotonic_seconds(); }
  // Waits out one answer from each of the first `n` helpers, errors dropped.
  void drop_replies(size_t n) noexcept;
  void new_file();

  [[noreturn]] void fail(Step step, const Place& where);

  SMBCCTX* ctx() const { return ctx_; }
  uint64_t io_size() const { return io_size_; }

  // Helper processes (option connections > 1): each its own libsmbclient
  // context and SMB connection, forked at connect, moving one call's data
  // through its slot of a shared mapping, so `connections` calls are in
  // flight at once (libsmbclient is synchronous and not thread-safe).
  // smb_pool.cc.

  size_t workers() const { return workers_.size(); }
  Worker& worker(size_t i) { return workers_[i]; }

  void send_request(Worker& w, uint32_t op, uint64_t offset, uint64_t len,
                    const std::string& url = {}, bool write = false, uint64_t slot_off = 0);
  // The helper's answer; its failure as the error for `step`.
  WorkerReply wait_reply(Worker& w, Step step, const Place& where);
  // Helper connections failed (`e`, the first) while this session's own
  // connection works: the helpers stop, and the session goes on with its own
  // connection alone (connections 1), recording why (properties
  // connections_asked, connections_reason, connections_error).
  void degrade(const Error& e) noexcept;
  // In flight now: calls of `lens` bytes, folded into the file's record.
  void note_pool(Mode mode, const std::vector<uint64_t>& lens);

 private:
  void start_workers();
  // The helper process: never returns.
  [[noreturn]] void worker_main(int fd, char* slot);
  Error helper_gone(const Worker& w) const;
  void stop_workers() noexcept;
  // A libsmbclient context with this session's settings, logging at level 3
  // (callers quiet it once connected).
  SMBCCTX* make_context();

  std::string url_of(const std::string& rel) const {
    return base_ + "/" + percent_encode_path(rel);
  }
  Place place(const std::string& rel) const {
    Place p = where_;
    p.file = rel;
    return p;
  }
  void make_parents(const std::string& rel);

  ShareUrl url_;
  std::string share_name_;
  std::string base_;
  Credentials creds_;
  uint64_t io_size_ = 0;            // bytes per call; 0 until chosen
  double timeout_ = 30;             // seconds
  unsigned connections_ = 1;        // connections moving a file's calls now
  unsigned connections_asked_ = 1;  // what auto or the option asked for
  uint64_t pool_files_ = 0;         // files opened through the helpers
  // Why connections_ < connections_asked_: "" (it is not), "helpers_refused"
  // (a helper could not connect, log in or open the file), "helpers_aborted"
  // (a helper's connection was dropped, or the helper ended or hung).
  std::string degraded_reason_, degraded_error_;
  int helper_errno_ = 0;          // the errno of the last helper failure (ECONNABORTED: ended)
  bool auto_connections_ = true;  // option connections=auto (the default)
  double path_rate_ = 0;          // option path_rate, bytes/s; 0 unknown
  std::vector<Worker> workers_;
  char* shm_ = nullptr;  // the helpers' slots, io_size_ each
  size_t shm_size_ = 0;
  double probe_rtt_ = 0;      // the path's round trip: the least probe sample (seconds)
  double handshake_rtt_ = 0;  // the probe's TCP handshake alone (seconds)
  int rtt_samples_ = 0;       // round trips probe_rtt_ is the least of
  std::optional<Smb2Limits> limits_;
  std::optional<Smb1Negotiate> smb1_;  // max_protocol NT1: the SMB1 probe's answer
  mutable std::mutex flight_mu_;
  Flight flight_;  // the last file's
  std::string encrypt_, min_protocol_, max_protocol_;
  Place where_;
  SMBCCTX* ctx_ = nullptr;
};

}  // namespace cp::transfer::smb
