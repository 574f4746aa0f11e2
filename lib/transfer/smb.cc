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
// calls stop at the hint and one more starts there).
//
// Round trips per file (each is in the sample's time on a long path): an
// open is one CREATE (libsmbclient's own check of a cached connection, an
// ECHO before every open, is skipped for a connection that answered a call
// within kEchoAfterIdle: check_server), the data, one CLOSE; the helpers
// open and close while the session's connection does.
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
#include <fcntl.h>
#include <libsmbclient.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_min_rtt
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"
#include "transfer/share_url.h"

namespace cp::transfer {
namespace {

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
thread_local std::string t_log;

void on_log(void*, int, const char* msg) {
  t_log += msg;
  if (t_log.size() > kLogKeep) t_log.erase(0, t_log.size() - kLogKeep);
}

// An option, else the default the table at the bottom declares.
std::string option(const Share& share, const char* name) {
  return option_value(kSmbDriver, share.options, name);
}

// A context's user data: its login, and what its check-server hook needs.
struct Credentials {
  std::string workgroup, user, password;
  double last_ok = -1e9;  // monotonic seconds of the last call that succeeded
  smbc_check_server_fn library_check = nullptr;  // libsmbclient's own (an echo)
};

// The check-server hook (see kEchoAfterIdle): libsmbclient's echo only for a
// connection idle that long.
int check_server(SMBCCTX* ctx, SMBCSRV* srv) {
  auto* c = static_cast<Credentials*>(smbc_getOptionUserData(ctx));
  if (!c) return 0;
  if (monotonic_seconds() - c->last_ok < kEchoAfterIdle) return 0;
  const int dead = c->library_check ? c->library_check(ctx, srv) : 0;
  if (!dead) c->last_ok = monotonic_seconds();
  return dead;
}

void auth_fn(SMBCCTX* ctx, const char*, const char*, char* wg, int wglen, char* un, int unlen,
             char* pw, int pwlen) {
  const auto* c = static_cast<const Credentials*>(smbc_getOptionUserData(ctx));
  if (!c) return;
  auto put = [](char* dst, int len, const std::string& v) {
    if (len <= 0) return;
    std::snprintf(dst, static_cast<size_t>(len), "%s", v.c_str());
  };
  if (!c->workgroup.empty()) put(wg, wglen, c->workgroup);
  put(un, unlen, c->user);
  put(pw, pwlen, c->password);
}

// A connection of the probe's own to host:port: its round trip, then `talk`
// (a NEGOTIATE and what follows) through `io`. Returns what `talk` returns;
// nullopt when no address connects or the exchange fails within
// kProbeTimeout. *rtt: the least round trip the kernel saw on the connection
// (handshake and every answer); *handshake_rtt: the handshake's alone.
struct ProbeIo {
  std::function<bool(const std::string&)> send_all;
  std::function<bool(std::string&)> recv_frame;  // one length-prefixed frame
};
template <class T>
std::optional<T> probe_connection(const std::string& host, uint16_t port, double* rtt,
                                  double* handshake_rtt,
                                  const std::function<std::optional<T>(ProbeIo&)>& talk) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) {
    return std::nullopt;
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
  const double deadline = monotonic_seconds() + kProbeTimeout;
  auto wait_for = [&](int fd, short events) {
    for (;;) {
      const double left = deadline - monotonic_seconds();
      if (left <= 0) return false;
      pollfd p{fd, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  };
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    // The TCP handshake is the path's round trip (the NEGOTIATE answer also
    // waits for smbd to fork a process for the connection).
    const double t0 = monotonic_seconds();
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS || !wait_for(fd, POLLOUT)) continue;
      int err = 0;
      socklen_t len = sizeof err;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) continue;
    }
    // The kernel's measure of the handshake, free of this process's
    // scheduling (a busy host can add milliseconds to the wall clock).
    *rtt = monotonic_seconds() - t0;
    tcp_info ti{};
    socklen_t ti_len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &ti_len) == 0 && ti.tcpi_rtt > 0) {
      *rtt = ti.tcpi_rtt / 1e6;
    }
    *handshake_rtt = *rtt;
    ProbeIo io;
    io.send_all = [&](const std::string& req) {
      size_t sent = 0;
      while (sent < req.size()) {
        const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
          sent += static_cast<size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
          if (!wait_for(fd, POLLOUT)) return false;
        } else {
          return false;
        }
      }
      return true;
    };
    io.recv_frame = [&](std::string& frame) {
      frame.clear();
      size_t want = 4;
      while (frame.size() < want) {
        char buf[4096];
        const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, want - frame.size()), 0);
        if (n > 0) {
          frame.append(buf, static_cast<size_t>(n));
          if (frame.size() == 4 && want == 4) {
            want = 4 + ((size_t{static_cast<uint8_t>(frame[1])} << 16) |
                        (size_t{static_cast<uint8_t>(frame[2])} << 8) |
                        size_t{static_cast<uint8_t>(frame[3])});
            if (want > (1u << 16)) return false;  // no NEGOTIATE or ECHO answer is that long
          }
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
          if (!wait_for(fd, POLLIN)) return false;
        } else {
          return false;
        }
      }
      return true;
    };
    std::optional<T> out = talk(io);
    if (!out) return std::nullopt;
    // The kernel's least RTT sample on this connection (handshake and every
    // answer), else its smoothed RTT now: whichever is smaller.
    ti = {};
    ti_len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &ti_len) == 0) {
      if (ti.tcpi_rtt > 0) *rtt = std::min(*rtt, ti.tcpi_rtt / 1e6);
      if (ti_len >= offsetof(tcp_info, tcpi_min_rtt) + sizeof ti.tcpi_min_rtt &&
          ti.tcpi_min_rtt > 0 && ti.tcpi_min_rtt != ~0u) {
        *rtt = std::min(*rtt, ti.tcpi_min_rtt / 1e6);
      }
    }
    return out;
  }
  return std::nullopt;
}

// Asks host:port for its SMB2 limits with one NEGOTIATE on a connection of
// its own, then times a few ECHOs on it; nullopt when it cannot (closed port,
// timeout, an answer that is not SMB2): the session's own login then reports
// the problem. *samples: the round trips *rtt is the least of.
std::optional<Smb2Limits> probe_limits(const std::string& host, uint16_t port,
                                       const std::string& min_protocol,
                                       const std::string& max_protocol, double* rtt,
                                       double* handshake_rtt, int* samples) {
  const uint16_t lo = std::max<uint16_t>(smb2_dialect_of(min_protocol), 0x0202);
  const uint16_t hi = std::min<uint16_t>(smb2_dialect_of(max_protocol), 0x0302);
  if (lo > hi) return std::nullopt;
  return probe_connection<Smb2Limits>(
      host, port, rtt, handshake_rtt, [&](ProbeIo& io) -> std::optional<Smb2Limits> {
        *samples = 1;
        std::string frame;
        if (!io.send_all(smb2_negotiate_request(lo, hi)) || !io.recv_frame(frame)) {
          return std::nullopt;
        }
        std::optional<Smb2Limits> limits;
        try {
          limits = parse_smb2_negotiate_response(frame);
        } catch (const Error&) {
          return std::nullopt;
        }
        // More RTT samples: ECHOs (no session needed), one at a time; a server
        // that refuses them leaves the samples taken so far.
        std::string echo;
        for (int i = 1; i <= kProbeEchoes; ++i) {
          if (!io.send_all(smb2_echo_request(static_cast<uint64_t>(i))) || !io.recv_frame(echo) ||
              !smb2_is_echo_response(echo)) {
            break;
          }
          ++*samples;
        }
        return limits;
      });
}

// SMB1 only (max_protocol NT1): what the server answers an NT1 offer, the
// one libsmbclient then makes; nullopt when it does not answer one.
std::optional<Smb1Negotiate> probe_smb1(const std::string& host, uint16_t port, double* rtt,
                                        double* handshake_rtt, int* samples) {
  return probe_connection<Smb1Negotiate>(
      host, port, rtt, handshake_rtt, [&](ProbeIo& io) -> std::optional<Smb1Negotiate> {
        *samples = 1;
        std::string frame;
        if (!io.send_all(smb1_negotiate_request()) || !io.recv_frame(frame)) return std::nullopt;
        try {
          return parse_smb1_negotiate_response(frame);
        } catch (const Error&) {
          return std::nullopt;
        }
      });
}

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
  // Writes: bytes not yet written, at pos_. Bounded by io_size.
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
};

class SmbSession : public Session {
 public:
  using Worker = Helper;
  SmbSession(const Share& share, const CancelToken&) {
    url_ = parse_share_url(share.url);
    if (url_.scheme != "smb") {
      throw Error(ErrorKind::kConfig,
                  fmt::format("the smb driver takes smb:// URLs, not '{}'", redact_url(share.url)),
                  "write the share as smb://host/share (or smb://host:port/share/dir)");
    }
    if (url_.path.size() < 2) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("SMB URL '{}' names no share", redact_url(share.url)),
                  "write it as smb://host/share");
    }
    const size_t slash = url_.path.find('/', 1);
    share_name_ = url_.path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    creds_.user = !share.user.empty() ? share.user : url_.user;
    creds_.password = !share.password.empty() ? share.password : url_.password;
    creds_.workgroup = option(share, "workgroup");
    if (const size_t semi = creds_.user.find(';'); semi != std::string::npos) {
      creds_.workgroup = creds_.user.substr(0, semi);  // "DOMAIN;user"
      creds_.user = creds_.user.substr(semi + 1);
    }
    // Types and ranges are the table's (kSmbOptions at the bottom): a value
    // outside them throws the same error as at plan read, for every driver.
    io_size_ =
        static_cast<uint64_t>(option_number(kSmbDriver, share.options, "io_size").value_or(0));
    encrypt_ = option(share, "encrypt");
    min_protocol_ = option(share, "min_protocol");
    max_protocol_ = option(share, "max_protocol");
    const double timeout = *option_number(kSmbDriver, share.options, "timeout");
    where_.server = host_port(url_, 445);
    where_.share = share_name_;
    where_.user = creds_.user.empty() ? "guest" : creds_.user;
    // The URL libsmbclient sees: no credentials, no port (smbc_setPort has it).
    const std::string host =
        url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
    base_ = "smb://" + host + percent_encode_path(url_.path);

    timeout_ = timeout;
    // connections: a count, or the word auto (nullopt).
    const std::optional<double> conns = option_number(kSmbDriver, share.options, "connections");
    auto_connections_ = !conns;
    connections_ = conns ? static_cast<unsigned>(*conns) : 0;
    path_rate_ = option_number(kSmbDriver, share.options, "path_rate").value_or(0) / 8.0;
    ctx_ = make_context();
    // The sizes the server accepts, on a connection of its own (see the top).
    limits_ =
        probe_limits(url_.host, static_cast<uint16_t>(url_.port ? url_.port : 445), min_protocol_,
                     max_protocol_, &probe_rtt_, &handshake_rtt_, &rtt_samples_);
    if (is_smb1_protocol(max_protocol_)) {
      smb1_ = probe_smb1(url_.host, static_cast<uint16_t>(url_.port ? url_.port : 445), &probe_rtt_,
                         &handshake_rtt_, &rtt_samples_);
    }
    if (io_size_ == 0) {
      // Between calls nothing is in flight for a round trip plus the
      // caller's work on the data: on a long path larger calls amortise it;
      // on a short one the caller's work dominates, and 1 MiB keeps memory low.
      io_size_ = limits_ && probe_rtt_ > kLanRtt ? kWanIoSize : kLanIoSize;
    }
    if (auto_connections_) {
      connections_ = smb_auto_connections(limits_ ? probe_rtt_ : 0, io_size_, path_rate_);
    }
    // Connect, log in and open the share's directory: wrong password,
    // unknown share and closed port show here.
    t_log.clear();
    SMBCFILE* dir = smbc_getFunctionOpendir(ctx_)(ctx_, base_.c_str());
    if (!dir) fail(Step::kConnect, where_);
    smbc_getFunctionClosedir(ctx_)(ctx_, dir);
    alive();
    // Quiet from here: nothing is logged per read or write.
    smbc_setDebug(ctx_, 0);
    if (connections_ > 1) {
      try {
        start_workers();
      } catch (...) {
        stop_workers();
        throw;
      }
    }
  }

  void start_workers() {
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
    // Each logs in on its own connection; the first failure is the error.
    for (Worker& w : workers_) wait_reply(w, Step::kConnect, where_);
  }

  // The helper process: never returns.
  [[noreturn]] void worker_main(int fd, char* slot) {
    // Only its socket stays open: the parent's SMB connection, the agent's
    // channel and the other helpers' sockets are the parent's.
    if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
    ::close_range(static_cast<unsigned>(fd) + 1, ~0u, 0);
    const int null_fd = ::open("/dev/null", O_RDWR);
    for (int std_fd = 0; std_fd < 3; ++std_fd) {
      if (null_fd >= 0 && null_fd != std_fd) ::dup2(null_fd, std_fd);
    }
    if (null_fd > 2) ::close(null_fd);
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

  Error helper_gone(const Worker& w) const {
    return Error(ErrorKind::kIo,
                 fmt::format("SMB: helper process {} for {} ended", w.pid, where_.server),
                 "see the server's log; the helper's connection may have been dropped");
  }

  void stop_workers() noexcept {
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

  // A libsmbclient context with this session's settings, logging at level 3
  // (callers quiet it once connected).
  SMBCCTX* make_context() {
    SMBCCTX* ctx = smbc_new_context();
    if (!ctx) throw Error(ErrorKind::kIo, "libsmbclient could not start: " + errno_text(errno));
    smbc_setOptionUserData(ctx, &creds_);
    smbc_setFunctionAuthDataWithContext(ctx, auth_fn);
    creds_.library_check = smbc_getFunctionCheckServer(ctx);
    smbc_setFunctionCheckServer(ctx, check_server);
    // Never fall back to an anonymous or guest login: a wrong password must fail.
    smbc_setOptionNoAutoAnonymousLogin(ctx, 1);
    smbc_setOptionUseKerberos(ctx, 0);
    smbc_setOptionFallbackAfterKerberos(ctx, 1);
    smbc_setOptionUseCCache(ctx, 0);
    smbc_setTimeout(ctx, static_cast<int>(timeout_ * 1000));
    if (url_.port) smbc_setPort(ctx, static_cast<uint16_t>(url_.port));
    if (encrypt_ == "none") {
      smbc_setOptionSmbEncryptionLevel(ctx, SMBC_ENCRYPTLEVEL_NONE);
    } else if (encrypt_ == "request") {
      smbc_setOptionSmbEncryptionLevel(ctx, SMBC_ENCRYPTLEVEL_REQUEST);
    } else if (encrypt_ == "require") {
      smbc_setOptionSmbEncryptionLevel(ctx, SMBC_ENCRYPTLEVEL_REQUIRE);
    }
    // Level 3 while connecting: the log then says why a login failed.
    smbc_setDebug(ctx, 3);
    {
      static std::once_flag once;
      std::call_once(once, [ctx] { smbc_setLogCallback(ctx, nullptr, on_log); });
    }
    if (!smbc_init_context(ctx)) {
      const int err = errno;
      smbc_free_context(ctx, 1);
      throw Error(ErrorKind::kIo, "libsmbclient could not initialise: " + errno_text(err),
                  "check /etc/samba/smb.conf (libsmbclient reads it)");
    }
    // Process-wide in libsmbclient, so set for every session alike.
    if (!smbc_setOptionProtocols(ctx, min_protocol_.c_str(), max_protocol_.c_str())) {
      smbc_free_context(ctx, 1);
      throw Error(
          ErrorKind::kConfig,
          fmt::format("libsmbclient refused protocols {}..{}", min_protocol_, max_protocol_),
          "give protocol names like SMB2_02, SMB2_10, SMB3_00, SMB3_11 or SMB3");
    }
    return ctx;
  }

  ~SmbSession() override {
    stop_workers();
    if (ctx_) smbc_free_context(ctx_, 1);
  }

  std::unique_ptr<File> open(const std::string& rel, Mode mode, uint64_t size_hint) override {
    check_relative_path(rel);
    Place where = place(rel);
    const std::string url = url_of(rel);
    t_log.clear();
    // The helpers open the file while this connection does (a round trip
    // each, at once rather than one after the other); a helper opening for
    // writing creates the file if this connection's create has not yet.
    struct Pending {  // helper answers still owed when the open fails here
      SmbSession& s;
      size_t owed = 0;
      ~Pending() { s.drop_replies(owed); }
    } pending{*this};
    auto ask_helpers = [&] {
      for (Worker& w : workers_) {
        send_request(w, kWOpen, 0, 0, url, mode == Mode::kWrite);
        ++pending.owed;
      }
    };
    ask_helpers();
    if (mode == Mode::kRead) {
      SMBCFILE* f = smbc_getFunctionOpen(ctx_)(ctx_, url.c_str(), O_RDONLY, 0);
      if (!f) fail(Step::kOpenRead, where);
      alive();
      // The size: a read that asks past the end of the file is safe when it
      // is one SMB2 READ (io_size within the server's maximum read), and its
      // short answer is the end, so no round trip asks for the size (an
      // fstat is one); else the size at open bounds every read (see the top).
      uint64_t size = kSizeUnknown;
      if (!one_request_per_call(Mode::kRead)) {
        struct stat st {};
        if (smbc_getFunctionFstat(ctx_)(ctx_, f, &st) != 0) {
          const int err = errno;
          smbc_getFunctionClose(ctx_)(ctx_, f);
          errno = err;
          fail(Step::kOpenRead, where);
        }
        size = static_cast<uint64_t>(st.st_size);
      }
      if (!workers_.empty()) {
        pending.owed = 0;
        return make_pool_file(f, mode, std::move(where), size, url, true, size_hint);
      }
      return std::make_unique<SmbFile>(*this, f, mode, std::move(where), size);
    }
    SMBCFILE* f = smbc_getFunctionOpen(ctx_)(ctx_, url.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    bool sent = true;
    if (!f && errno == ENOENT && rel.find('/') != std::string::npos) {
      const int err = errno;
      drop_replies(pending.owed);  // the helpers failed alike: ask again below
      pending.owed = 0;
      errno = err;
      make_parents(rel);
      f = smbc_getFunctionOpen(ctx_)(ctx_, url.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      sent = false;
    }
    if (!f) fail(Step::kOpenWrite, where);
    alive();
    pending.owed = 0;
    if (!workers_.empty()) return make_pool_file(f, mode, std::move(where), 0, url, sent);
    return std::make_unique<SmbFile>(*this, f, mode, std::move(where), 0);
  }

  void remove(const std::string& rel) override {
    check_relative_path(rel);
    const std::string url = url_of(rel);
    t_log.clear();
    if (smbc_getFunctionUnlink(ctx_)(ctx_, url.c_str()) == 0) return;
    const int err = errno;
    const std::string status = smb_status_from_log(t_log);
    if (err == EISDIR || err == EPERM || err == EACCES) {
      if (smbc_getFunctionRmdir(ctx_)(ctx_, url.c_str()) == 0) return;
    }
    throw smb_error(err, status, Step::kRemove, place(rel));
  }

  std::map<std::string, std::string> properties() const override {
    auto size = [&](uint32_t v) { return limits_ ? std::to_string(v) : std::string("unknown"); };
    std::map<std::string, std::string> p = {
        {"min_protocol", min_protocol_},
        {"max_protocol", max_protocol_},
        {"encryption_requested", encrypt_},
        {"signing_requested", "client default (smb.conf 'client signing')"},
        {"max_read_size", size(limits_ ? limits_->max_read : 0)},
        {"max_write_size", size(limits_ ? limits_->max_write : 0)},
        {"io_size", std::to_string(io_size_)},
        {"connections", std::to_string(connections_)},
        // "auto": chosen from the handshake's round trip (and path_rate when
        // given); "option": as the share asked.
        {"connections_chosen", auto_connections_ ? "auto" : "option"},
        {"path_rate", path_rate_ > 0 ? fmt::format("{:.0f}", path_rate_ * 8) : "unknown"},
        {"handshake_rtt_ms", limits_ ? fmt::format("{:.3f}", handshake_rtt_ * 1000) : "unknown"},
        // What io_size and connections=auto were chosen by: the least of
        // the handshake's and the probe's ECHO round trips (path_rtt_samples).
        {"path_rtt_ms", limits_ ? fmt::format("{:.3f}", probe_rtt_ * 1000) : "unknown"},
        {"path_rtt_samples", std::to_string(limits_ ? rtt_samples_ : 0)},
        {"negotiated", "not exposed by libsmbclient; the server's smbstatus --json has it"},
        // The dialect the server chose from the same offer on the probe's
        // connection (SMB2 range, or NT1 with max_protocol=NT1).
        {"dialect", limits_               ? smb2_dialect_name(limits_->dialect)
                    : smb1_ && smb1_->nt1 ? std::string("NT1")
                                          : std::string("unknown")}};
    if (smb1_) p["max_xmit"] = std::to_string(smb1_->max_buffer_size);
    std::lock_guard<std::mutex> lock(flight_mu_);
    if (!flight_.op.empty()) {
      p["flight_op"] = flight_.op;
      p["request_size"] = std::to_string(flight_.request_size);
      p["depth"] = std::to_string(flight_.requests);
      p["in_flight_bytes"] = std::to_string(flight_.in_flight);
    }
    return p;
  }

  // What a call of `n` bytes keeps in flight, per libsmbclient 4.17 (see the
  // top of this file).
  Flight flight_of(Mode mode, uint64_t n) const {
    Flight one;
    one.op = mode == Mode::kRead ? "read" : "write";
    const uint32_t max = !limits_              ? 0
                         : mode == Mode::kRead ? limits_->max_read
                                               : limits_->max_write;
    // cli_pull/cli_push round a chunk down to whole KiB.
    const uint64_t chunk = max == 0 ? n : std::max<uint64_t>(max >= 1024 ? max & ~1023u : max, 1);
    if (mode == Mode::kRead) {
      one.requests = std::min<uint64_t>((n + chunk - 1) / chunk, kPullMaxChunks);
      one.request_size = std::min<uint64_t>(n, chunk);
      one.in_flight = std::min<uint64_t>(n, one.requests * chunk);
    } else {
      one.requests = 1;  // cli_smb2_writeall: one request at a time
      one.request_size = std::min<uint64_t>(n, chunk);
      one.in_flight = one.request_size;
    }
    return one;
  }
  // Folds one call of the session's own context into the file's record.
  void note_call(Mode mode, uint64_t n) {
    const Flight one = flight_of(mode, n);
    std::lock_guard<std::mutex> lock(flight_mu_);
    if (flight_.op != one.op || one.in_flight > flight_.in_flight) flight_ = one;
  }
  // `sent`: the helpers were already asked to open `url`.
  std::unique_ptr<File> make_pool_file(SMBCFILE* f, Mode mode, Place where, uint64_t size,
                                       const std::string& url, bool sent, uint64_t size_hint = 0);
  // Whether a call of io_size bytes is one SMB2 request (within the
  // server's maximum read or write, as cli_pull rounds it), so that a read
  // past the end of the file leaves nothing in flight.
  bool one_request_per_call(Mode mode) const {
    return flight_of(mode, io_size_).requests == 1 && limits_.has_value();
  }
  // A call on this session's connection succeeded now (see check_server).
  void alive() { creds_.last_ok = monotonic_seconds(); }
  // Waits out one answer from each of the first `n` helpers, errors dropped.
  void drop_replies(size_t n) noexcept {
    for (size_t i = 0; i < n && i < workers_.size(); ++i) {
      try {
        wait_reply(workers_[i], Step::kOpenRead, where_);
      } catch (const Error&) {
      }
      workers_[i].state = Worker::kIdle;
    }
  }
  void new_file() {
    std::lock_guard<std::mutex> lock(flight_mu_);
    flight_ = {};
  }

  [[noreturn]] void fail(Step step, const Place& where) {
    const int err = errno;
    throw smb_error(err, smb_status_from_log(t_log), step, where);
  }

  SMBCCTX* ctx() const { return ctx_; }
  uint64_t io_size() const { return io_size_; }

  // Helper processes (option connections > 1): each its own libsmbclient
  // context and SMB connection, forked at connect, moving one call's data
  // through its slot of a shared mapping, so `connections` calls are in
  // flight at once (libsmbclient is synchronous and not thread-safe).

  size_t workers() const { return workers_.size(); }
  Worker& worker(size_t i) { return workers_[i]; }

  void send_request(Worker& w, uint32_t op, uint64_t offset, uint64_t len,
                    const std::string& url = {}, bool write = false, uint64_t slot_off = 0) {
    WorkerRequest q;
    q.op = op;
    q.write = write ? 1 : 0;
    q.offset = offset;
    q.len = len;
    q.slot_off = slot_off;
    CP_CHECK(url.size() < sizeof q.url);
    std::memcpy(q.url, url.data(), url.size());
    if (::send(w.fd, &q, sizeof q, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof q)) {
      throw helper_gone(w);
    }
  }
  // The helper's answer; its failure as the error for `step`.
  WorkerReply wait_reply(Worker& w, Step step, const Place& where) {
    WorkerReply r;
    pollfd p{w.fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(timeout_ * 1000) * 2 + 1000);
    if (n == 0) {
      throw Error(ErrorKind::kIo,
                  fmt::format("SMB: helper process {} for {} did not answer in {} s", w.pid,
                              where_.server, timeout_ * 2 + 1),
                  "the server or the network is stuck; see the server's log");
    }
    if (::recv(w.fd, &r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) throw helper_gone(w);
    if (r.result < 0) throw smb_error(r.err, r.status, step, where);
    return r;
  }

  // In flight now: calls of `lens` bytes, folded into the file's record.
  void note_pool(Mode mode, const std::vector<uint64_t>& lens) {
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

 private:
  std::string url_of(const std::string& rel) const {
    return base_ + "/" + percent_encode_path(rel);
  }
  Place place(const std::string& rel) const {
    Place p = where_;
    p.file = rel;
    return p;
  }

  void make_parents(const std::string& rel) {
    size_t pos = 0;
    while ((pos = rel.find('/', pos)) != std::string::npos) {
      const std::string dir = url_of(rel.substr(0, pos));
      if (smbc_getFunctionMkdir(ctx_)(ctx_, dir.c_str(), 0755) != 0 && errno != EEXIST) {
        fail(Step::kOpenWrite, place(rel.substr(0, pos)));
      }
      ++pos;
    }
  }

  ShareUrl url_;
  std::string share_name_;
  std::string base_;
  Credentials creds_;
  uint64_t io_size_ = 0;  // bytes per call; 0 until chosen
  double timeout_ = 30;   // seconds
  unsigned connections_ = 1;
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

SmbFile::SmbFile(SmbSession& s, SMBCFILE* f, Mode mode, Place where, uint64_t size)
    : s_(s), f_(f), mode_(mode), where_(std::move(where)), size_(size) {
  s_.new_file();
}

SmbFile::~SmbFile() {
  if (f_) smbc_getFunctionClose(s_.ctx())(s_.ctx(), f_);
}

size_t SmbFile::read_call(char* buf, size_t n) {
  t_log.clear();
  const ssize_t r = smbc_getFunctionRead(s_.ctx())(s_.ctx(), f_, buf, n);
  if (r < 0) s_.fail(Step::kRead, where_);
  s_.alive();
  s_.note_call(Mode::kRead, n);
  pos_ += static_cast<uint64_t>(r);
  if (static_cast<size_t>(r) < n) size_ = pos_;  // the file shrank since open: its end is here
  return static_cast<size_t>(r);
}

size_t SmbFile::read(char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kRead && f_);
  if (stage_pos_ == stage_end_) {
    const uint64_t want = std::min<uint64_t>(s_.io_size(), size_ - pos_);
    if (want == 0) return 0;
    if (n >= want) return read_call(buf, static_cast<size_t>(want));  // straight into the caller's
    stage_.resize(s_.io_size());
    stage_pos_ = 0;
    stage_end_ = read_call(stage_.data(), static_cast<size_t>(want));
    if (stage_end_ == 0) return 0;
  }
  const size_t k = std::min(n, stage_end_ - stage_pos_);
  std::memcpy(buf, stage_.data() + stage_pos_, k);
  stage_pos_ += k;
  return k;
}

void SmbFile::seek(uint64_t offset) {
  if (offset == pos_) return;
  t_log.clear();
  if (smbc_getFunctionLseek(s_.ctx())(s_.ctx(), f_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    s_.fail(mode_ == Mode::kRead ? Step::kRead : Step::kWrite, where_);
  }
  pos_ = offset;
}

size_t SmbFile::pread(char* buf, size_t n, uint64_t offset) {
  CP_CHECK(mode_ == Mode::kRead && f_);
  stage_pos_ = stage_end_ = 0;  // a random read starts afresh
  if (offset >= size_) return 0;
  seek(offset);
  const size_t want = static_cast<size_t>(
      std::min<uint64_t>({static_cast<uint64_t>(n), s_.io_size(), size_ - offset}));
  return read_call(buf, want);
}

void SmbFile::write_call(const char* buf, size_t n) {
  struct Guard {  // a failed call leaves a hole: later writes must not hide it
    bool& failed;
    bool ok = false;
    ~Guard() { failed = failed || !ok; }
  } guard{failed_};
  while (n > 0) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, s_.io_size()));
    t_log.clear();
    const ssize_t w = smbc_getFunctionWrite(s_.ctx())(s_.ctx(), f_, buf, k);
    if (w < 0) s_.fail(Step::kWrite, where_);
    if (w == 0) {
      errno = EIO;
      s_.fail(Step::kWrite, where_);
    }
    s_.alive();
    s_.note_call(Mode::kWrite, k);
    buf += w;
    pos_ += static_cast<uint64_t>(w);
    n -= static_cast<size_t>(w);
  }
  guard.ok = true;
}

void SmbFile::flush() {
  if (stage_end_ == 0) return;
  const size_t n = stage_end_;
  stage_end_ = 0;
  write_call(stage_.data(), n);
}

void SmbFile::pwrite(const char* buf, size_t n, uint64_t offset) {
  CP_CHECK(mode_ == Mode::kWrite && f_);
  flush();
  seek(offset);
  write_call(buf, n);
}

void SmbFile::write(const char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kWrite && f_);
  if (failed_) {
    throw Error(ErrorKind::kIo,
                fmt::format("SMB: an earlier write to {}/{} failed; the file is incomplete",
                            where_.share, where_.file),
                "see the first error; remove the file and write it again");
  }
  const size_t io = static_cast<size_t>(s_.io_size());
  while (n > 0) {
    if (stage_end_ == 0 && n >= io) {  // whole calls straight from the caller's buffer
      const size_t k = n - n % io;
      write_call(buf, k);
      buf += k;
      n -= k;
      continue;
    }
    stage_.resize(io);
    const size_t k = std::min(n, io - stage_end_);
    std::memcpy(stage_.data() + stage_end_, buf, k);
    stage_end_ += k;
    buf += k;
    n -= k;
    if (stage_end_ == io) flush();
  }
}

void SmbFile::close() {
  if (!f_) return;
  if (mode_ == Mode::kWrite && !failed_) {
    try {
      flush();
    } catch (...) {
      SMBCFILE* f = f_;
      f_ = nullptr;
      smbc_getFunctionClose(s_.ctx())(s_.ctx(), f);
      throw;
    }
  }
  SMBCFILE* f = f_;
  f_ = nullptr;
  t_log.clear();
  if (smbc_getFunctionClose(s_.ctx())(s_.ctx(), f) != 0) {
    s_.fail(mode_ == Mode::kRead ? Step::kCloseRead : Step::kClose, where_);
  }
  s_.alive();
}

std::unique_ptr<File> SmbSession::make_pool_file(SMBCFILE* f, Mode mode, Place where, uint64_t size,
                                                 const std::string& url, bool sent,
                                                 uint64_t size_hint) {
  auto own = std::make_unique<SmbFile>(*this, f, mode, where, size);
  if (!sent) {
    for (Worker& w : workers_) send_request(w, kWOpen, 0, 0, url, mode == Mode::kWrite);
  }
  std::optional<Error> first;
  for (Worker& w : workers_) {
    try {
      wait_reply(w, mode == Mode::kRead ? Step::kOpenRead : Step::kOpenWrite, where);
    } catch (const Error& e) {
      if (!first) first = e;
    }
    w.state = Worker::kIdle;
  }
  if (first) throw *first;
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
  if (failed_) {
    throw Error(ErrorKind::kIo,
                fmt::format("SMB: an earlier read of {}/{} failed", where_.share, where_.file),
                "see the first error; open the file again");
  }
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

class SmbDriver : public Driver {
 public:
  std::string name() const override { return "smb"; }
  std::unique_ptr<Session> connect(const Share& share, const CancelToken& cancel) override {
    return std::make_unique<SmbSession>(share, cancel);
  }
};

}  // namespace

std::string smb_status_from_log(std::string_view log) {
  const size_t at = log.rfind("NT_STATUS_");
  if (at == std::string_view::npos) {
    // Samba 4.17 logs a failed NTLMSSP login in words only.
    if (log.find("login failed") != std::string_view::npos ||
        log.find("logon is invalid") != std::string_view::npos) {
      return "NT_STATUS_LOGON_FAILURE";
    }
    return {};
  }
  size_t end = at;
  while (end < log.size() &&
         (std::isupper(static_cast<unsigned char>(log[end])) ||
          std::isdigit(static_cast<unsigned char>(log[end])) || log[end] == '_')) {
    ++end;
  }
  return std::string(log.substr(at, end - at));
}

Error smb_error(int err, std::string_view nt_status, Step step, const Place& w) {
  const std::string target = w.file.empty() ? w.share : w.share + "/" + w.file;
  const std::string status = nt_status.empty() ? "" : fmt::format(", {}", nt_status);
  const std::string why = fmt::format("({}{})", errno_text(err), status);
  const bool writing = step == Step::kOpenWrite || step == Step::kWrite || step == Step::kClose;
  auto is = [&](std::string_view s) { return nt_status == s; };
  if (err == ENOSPC || err == EDQUOT || is("NT_STATUS_DISK_FULL")) {
    return Error(ErrorKind::kIo,
                 fmt::format("the SMB server {} could not store {}: its disk is full {}", w.server,
                             target, why),
                 "free space on the server's share (or raise the user's quota), or use smaller "
                 "files");
  }
  if (err == ECONNREFUSED) {
    return Error(
        ErrorKind::kIo,
        fmt::format("cannot connect to the SMB server at {}: connection refused", w.server),
        fmt::format("check that smbd runs and listens on {} (smb ports, interfaces), "
                    "and that no firewall blocks it",
                    w.server));
  }
  if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN) {
    return Error(ErrorKind::kIo, fmt::format("the SMB server {} is unreachable {}", w.server, why),
                 "check the host and the network path to it");
  }
  if (step == Step::kConnect) {
    if (is("NT_STATUS_LOGON_FAILURE") || is("NT_STATUS_WRONG_PASSWORD") ||
        is("NT_STATUS_NO_SUCH_USER") || is("NT_STATUS_ACCOUNT_DISABLED") ||
        (nt_status.empty() && (err == EPERM))) {
      return Error(
          ErrorKind::kConfig,
          fmt::format("the SMB server {} refused the login of user '{}' {}", w.server, w.user, why),
          "check the user and its password (given by environment variable, 0600 file "
          "or prompt), and that the user exists in the server's Samba password "
          "database (smbpasswd -a); a server that requires encryption (smb encrypt = "
          "required) also refuses a dialect before SMB3 (share option max_protocol)");
    }
    if (is("NT_STATUS_BAD_NETWORK_NAME") || err == ENOENT || err == ENODEV) {
      return Error(
          ErrorKind::kConfig,
          fmt::format("the SMB server {} has no share or directory '{}' {}", w.server, target, why),
          "check the share name in the URL (`smbclient -L //host -U user` lists them)");
    }
    if (err == EACCES || err == EPERM) {
      return Error(ErrorKind::kConfig,
                   fmt::format("the SMB server {} denied user '{}' access to share '{}' {}",
                               w.server, w.user, w.share, why),
                   "check the share's 'valid users' and the user's password");
    }
    if (err == ECONNRESET || err == EPROTONOSUPPORT || is("NT_STATUS_NOT_SUPPORTED") ||
        is("NT_STATUS_INVALID_NETWORK_RESPONSE")) {
      return Error(ErrorKind::kIo,
                   fmt::format("the SMB server {} dropped the connection while negotiating {}",
                               w.server, why),
                   "the server may speak only SMB1, which chokepoint offers only when asked: "
                   "enable SMB2 or later on it (server min protocol = SMB2_02), or give the "
                   "share options min_protocol=NT1,max_protocol=NT1");
    }
  }
  if (writing && (err == EACCES || err == EPERM || err == EROFS || is("NT_STATUS_ACCESS_DENIED") ||
                  is("NT_STATUS_MEDIA_WRITE_PROTECTED"))) {
    return Error(ErrorKind::kIo,
                 fmt::format("the SMB server {} refused to write {} {}", w.server, target, why),
                 "make the share writable for the user (read only = no, directory permissions), "
                 "or pick a writable share");
  }
  if (err == ENOENT && step != Step::kConnect) {
    return Error(ErrorKind::kIo,
                 fmt::format("no file {} on the SMB server {} {}", target, w.server, why),
                 "check that the server agent laid the file out in the share's directory");
  }
  if (err == EACCES || err == EPERM) {
    return Error(ErrorKind::kIo,
                 fmt::format("the SMB server {} denied access to {} {}", w.server, target, why),
                 "check the file's permissions for the SMB user");
  }
  const char* what = step_words(step, writing);
  return Error(ErrorKind::kIo,
               fmt::format("SMB: {} {} on {} failed {}", what, target, w.server, why),
               "see the server's log (log level = 3 in smb.conf); `smbclient` against the same "
               "share can compare");
}

namespace {
void put16(std::string& o, uint16_t v) {
  o += static_cast<char>(v & 0xff);
  o += static_cast<char>(v >> 8);
}
void put32(std::string& o, uint32_t v) {
  put16(o, static_cast<uint16_t>(v & 0xffff));
  put16(o, static_cast<uint16_t>(v >> 16));
}
uint32_t get16(std::string_view s, size_t at) {
  return uint32_t{static_cast<uint8_t>(s[at])} | uint32_t{static_cast<uint8_t>(s[at + 1])} << 8;
}
uint32_t get32(std::string_view s, size_t at) { return get16(s, at) | get16(s, at + 2) << 16; }
}  // namespace

unsigned smb_auto_connections(double rtt_s, uint64_t io_size, double rate) {
  CP_CHECK(io_size > 0);
  if (rtt_s <= kLanRtt) return 1;
  // One call being handed over (the server reads all of it before it answers,
  // the caller takes all of it before that connection asks again), the others
  // in flight across its round trip: 2 + the calls a round trip lasts, or 3
  // with the rate unknown (measured through the lab's delay line at 2 and 10
  // ms: one connection idles 13-16 % of the time, far more than a round trip
  // per call, so no share of a call is small enough to stay on one).
  unsigned n = 3;
  if (rate > 0) n = 2 + static_cast<unsigned>(std::ceil(rtt_s / (double(io_size) / rate)));
  const auto by_memory = static_cast<unsigned>(std::max<uint64_t>(kSmbAutoMemory / io_size, 1));
  return std::max(1u, std::min({n, kSmbMaxConnections, by_memory}));
}

uint16_t smb2_dialect_of(std::string_view name) {
  if (name == "SMB2_02") return 0x0202;
  if (name == "SMB2_10" || name == "SMB2") return 0x0210;
  if (name == "SMB3_00") return 0x0300;
  if (name == "SMB3_02") return 0x0302;
  if (name == "SMB3_11" || name == "SMB3") return 0x0311;
  return 0;
}

std::string smb2_dialect_name(uint16_t d) {
  switch (d) {
    case 0x0202:
      return "SMB2_02";
    case 0x0210:
      return "SMB2_10";
    case 0x0300:
      return "SMB3_00";
    case 0x0302:
      return "SMB3_02";
    case 0x0311:
      return "SMB3_11";
  }
  return fmt::format("0x{:04x}", d);
}

bool is_smb1_protocol(std::string_view name) {
  return name == "NT1" || name == "LANMAN2" || name == "LANMAN1" || name == "COREPLUS" ||
         name == "CORE";
}

std::string smb1_negotiate_request() {
  std::string m;
  // SMB1 header (MS-CIFS 2.2.3.1): protocol, command NEGOTIATE (0x72),
  // status, flags (canonical paths), flags2 (unicode, NT status, extended
  // security, long names), PID high, security features, reserved, TID, PID
  // low, UID, MID.
  m += "\xffSMB";
  m += static_cast<char>(0x72);
  put32(m, 0);
  m += static_cast<char>(0x18);
  put16(m, 0xc801);
  put16(m, 0);
  m.append(8, '\0');
  put16(m, 0);
  put16(m, 0xffff);
  put16(m, 0xfeff);
  put16(m, 0);
  put16(m, 0);
  // NEGOTIATE request (2.2.4.52.1): no words, the dialect strings.
  const std::string dialect = std::string("\x02NT LM 0.12") + '\0';
  m += '\0';
  put16(m, static_cast<uint16_t>(dialect.size()));
  m += dialect;
  std::string frame(1, '\0');
  frame += static_cast<char>(m.size() >> 16);
  frame += static_cast<char>(m.size() >> 8);
  frame += static_cast<char>(m.size());
  return frame + m;
}

Smb1Negotiate parse_smb1_negotiate_response(std::string_view frame) {
  auto bad = [](const std::string& why) {
    return Error(ErrorKind::kPeer, "SMB1 NEGOTIATE response: " + why,
                 "check that the server speaks SMB1 (smb.conf: server min protocol = NT1)");
  };
  constexpr size_t kHdr = 4 + 32;  // length prefix, SMB1 header
  if (frame.size() < kHdr + 3) throw bad(fmt::format("{} bytes is too short", frame.size()));
  if (frame.substr(4, 4) != std::string_view("\xffSMB", 4)) throw bad("not an SMB1 message");
  if (static_cast<uint8_t>(frame[8]) != 0x72) throw bad("not a NEGOTIATE answer");
  const uint32_t status = get32(frame, 9);
  if (status != 0) throw bad(fmt::format("status 0x{:08x}", status));
  Smb1Negotiate n;
  const uint8_t words = static_cast<uint8_t>(frame[kHdr]);
  const uint32_t index = get16(frame, kHdr + 1);
  // 17 words: the NT LM 0.12 answer (2.2.4.52.2); index 0xffff: none chosen.
  if (words != 17 || index != 0) return n;
  if (frame.size() < kHdr + 1 + 34) throw bad("an NT LM answer cut short");
  n.nt1 = true;
  n.max_buffer_size = get32(frame, kHdr + 1 + 7);
  return n;
}

std::string smb2_negotiate_request(uint16_t min_dialect, uint16_t max_dialect) {
  std::vector<uint16_t> dialects;
  for (uint16_t d : {0x0202, 0x0210, 0x0300, 0x0302}) {
    if (d >= min_dialect && d <= max_dialect) dialects.push_back(d);
  }
  CP_CHECK(!dialects.empty());
  std::string m;
  // SMB2 header (MS-SMB2 2.2.1.2): protocol id, structure size 64, credit
  // charge, status, command NEGOTIATE (0), credits asked, flags, next
  // command, message id, process id, tree id, session id, signature.
  m += "\xfeSMB";
  put16(m, 64);
  put16(m, 0);
  put32(m, 0);
  put16(m, 0);
  put16(m, 1);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);  // message id (64 bits)
  put32(m, 0xfeff);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);  // session id (64 bits)
  m.append(16, '\0');
  // NEGOTIATE request (2.2.3): structure size 36, dialect count, security
  // mode (signing enabled), reserved, capabilities (large MTU), client GUID,
  // client start time, dialects.
  put16(m, 36);
  put16(m, static_cast<uint16_t>(dialects.size()));
  put16(m, 1);
  put16(m, 0);
  put32(m, 0x4);
  m.append("chokepoint-probe", 16);
  m.append(8, '\0');
  for (uint16_t d : dialects) put16(m, d);
  std::string frame(1, '\0');  // direct TCP transport: zero, then a 24-bit length
  frame += static_cast<char>(m.size() >> 16);
  frame += static_cast<char>(m.size() >> 8);
  frame += static_cast<char>(m.size());
  return frame + m;
}

std::string smb2_echo_request(uint64_t message_id) {
  std::string m;
  // SMB2 header (MS-SMB2 2.2.1.2) as in NEGOTIATE, command ECHO (0x0d), one
  // credit asked, then the ECHO request (2.2.28): structure size 4, reserved.
  m += "\xfeSMB";
  put16(m, 64);
  put16(m, 0);  // credit charge (0: one credit; 2.0.2 requires 0)
  put32(m, 0);
  put16(m, 0x0d);
  put16(m, 1);
  put32(m, 0);
  put32(m, 0);
  put32(m, static_cast<uint32_t>(message_id));
  put32(m, static_cast<uint32_t>(message_id >> 32));
  put32(m, 0xfeff);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);  // session id (64 bits): none
  m.append(16, '\0');
  put16(m, 4);
  put16(m, 0);
  std::string frame(1, '\0');
  frame += static_cast<char>(m.size() >> 16);
  frame += static_cast<char>(m.size() >> 8);
  frame += static_cast<char>(m.size());
  return frame + m;
}

bool smb2_is_echo_response(std::string_view frame) {
  constexpr size_t kHdr = 4 + 64;
  return frame.size() >= kHdr + 4 && frame.substr(4, 4) == std::string_view("\xfeSMB", 4) &&
         get32(frame, 4 + 8) == 0 && get16(frame, 4 + 12) == 0x0d &&
         (get32(frame, 4 + 16) & 1) != 0;  // flags: a response
}

Smb2Limits parse_smb2_negotiate_response(std::string_view frame) {
  auto bad = [](const std::string& why) {
    return Error(ErrorKind::kPeer, "SMB2 NEGOTIATE response: " + why,
                 "check that the port is an SMB2 server's (smbd, Windows, a NAS)");
  };
  constexpr size_t kHdr = 4 + 64;  // length prefix, SMB2 header
  if (frame.size() < kHdr + 40) throw bad(fmt::format("{} bytes is too short", frame.size()));
  if (frame.substr(4, 4) != std::string_view("\xfeSMB", 4)) throw bad("not an SMB2 message");
  const uint32_t status = get32(frame, 4 + 8);
  if (status != 0) throw bad(fmt::format("status 0x{:08x}", status));
  if (get16(frame, 4 + 12) != 0) throw bad("not a NEGOTIATE answer");
  Smb2Limits l;
  l.dialect = static_cast<uint16_t>(get16(frame, kHdr + 4));
  l.max_transact = get32(frame, kHdr + 28);
  l.max_read = get32(frame, kHdr + 32);
  l.max_write = get32(frame, kHdr + 36);
  if (l.max_transact == 0 || l.max_read == 0 || l.max_write == 0) {
    throw bad("a maximum size of 0");
  }
  return l;
}

namespace {
constexpr std::string_view kSmbPrefixes[] = {"smb://"};
constexpr std::string_view kSmbProtocols = "NT1|SMB2|SMB2_02|SMB2_10|SMB3|SMB3_00|SMB3_02|SMB3_11";
constexpr OptionSpec kSmbOptions[] = {
    {.name = "encrypt",
     .type = OptionType::kChoice,
     .fallback = "default",
     .words = "default|none|request|require",
     .help = "SMB3 encryption, as libsmbclient's client smb encrypt"},
    {.name = "io_size",
     .type = OptionType::kSize,
     .min = 4096,
     .max = 64 << 20,
     .help = "bytes per smbc_read/smbc_write call; default 1 MiB, 8 MiB on a path whose "
             "round trip is over 1 ms"},
    {.name = "connections",
     .type = OptionType::kCount,
     .fallback = "auto",
     .min = 1,
     .max = kSmbMaxConnections,
     .words = "auto",
     .help = "connections moving one file's data at once; auto: 1 on a short path, more "
             "where the round trip is long"},
    {.name = "path_rate",
     .type = OptionType::kRate,
     .help = "the path's rate, for connections=auto (unknown: 3 connections on a long path)"},
    {.name = "timeout",
     .type = OptionType::kSeconds,
     .fallback = "30s",
     .min = 0.001,
     .help = "libsmbclient's timeout per call"},
    {.name = "workgroup",
     .type = OptionType::kText,
     .help = "the login's domain or workgroup (a user DOMAIN;name sets it too)"},
    {.name = "min_protocol",
     .type = OptionType::kChoice,
     .fallback = "SMB2_02",
     .words = kSmbProtocols,
     .help = "the oldest dialect offered"},
    {.name = "max_protocol",
     .type = OptionType::kChoice,
     .fallback = "SMB3",
     .words = kSmbProtocols,
     .help = "the newest dialect offered"},
};
std::unique_ptr<Driver> make() { return std::make_unique<SmbDriver>(); }
}  // namespace

const DriverSpec kSmbDriver = {
    .name = "smb",
    .summary = "SMB2/3 through libsmbclient (Samba's client library)",
    .url_prefixes = kSmbPrefixes,
    .caps = {.read = true, .write = true, .random_access = true, .random_write = true},
    .options = kSmbOptions,
    .make = make,
};

}  // namespace cp::transfer
