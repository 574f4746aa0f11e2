// The smb driver's session and its files on the session's own connection
// (see smb_session.h for what libsmbclient keeps in flight and why).
#include "transfer/smb/smb_session.h"

#include <fcntl.h>
#include <libsmbclient.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"
#include "transfer/share_url.h"

namespace cp::transfer::smb {

thread_local std::string t_log;

namespace {

void on_log(void*, int, const char* msg) {
  t_log += msg;
  if (t_log.size() > kLogKeep) t_log.erase(0, t_log.size() - kLogKeep);
}

// An option, else the default the table at the bottom declares.
std::string option(const Share& share, const char* name) {
  return option_value(kSmbDriver, share.options, name);
}

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

}  // namespace

SmbSession::SmbSession(const Share& share, const CancelToken&) {
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
  io_size_ = static_cast<uint64_t>(option_number(kSmbDriver, share.options, "io_size").value_or(0));
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
  limits_ = probe_limits(url_.host, static_cast<uint16_t>(url_.port ? url_.port : 445),
                         min_protocol_, max_protocol_, &probe_rtt_, &handshake_rtt_, &rtt_samples_);
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
  connections_asked_ = connections_;
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

// A libsmbclient context with this session's settings, logging at level 3
// (callers quiet it once connected).
SMBCCTX* SmbSession::make_context() {
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
    throw Error(ErrorKind::kConfig,
                fmt::format("libsmbclient refused protocols {}..{}", min_protocol_, max_protocol_),
                "give protocol names like SMB2_02, SMB2_10, SMB3_00, SMB3_11 or SMB3");
  }
  return ctx;
}

SmbSession::~SmbSession() {
  stop_workers();
  if (ctx_) smbc_free_context(ctx_, 1);
}

std::unique_ptr<File> SmbSession::open(const std::string& rel, Mode mode, uint64_t size_hint) {
  check_relative_path(rel);
  Place where = place(rel);
  const std::string url = url_of(rel);
  t_log.clear();
  // The helpers open the file while this connection does (a round trip
  // each, at once rather than one after the other); a helper opening for
  // writing creates the file if this connection's create has not yet. A file
  // the caller expects to fit in one call (a small file) goes through this
  // connection alone: the helpers would only open and close it, a CREATE and
  // a CLOSE each that the server serves for no data (as a copy of small
  // files over one connection does not).
  const bool pool = !workers_.empty() && !(size_hint > 0 && size_hint <= io_size_);
  struct Pending {  // helper answers still owed when the open fails here
    SmbSession& s;
    size_t owed = 0;
    ~Pending() { s.drop_replies(owed); }
  } pending{*this};
  auto ask_helpers = [&] {
    try {
      for (Worker& w : workers_) {
        send_request(w, kWOpen, 0, 0, url, mode == Mode::kWrite);
        ++pending.owed;
      }
    } catch (const Error& e) {  // a helper ended since the last file
      drop_replies(pending.owed);
      pending.owed = 0;
      degrade(e);
    }
  };
  if (pool) ask_helpers();
  if (mode == Mode::kRead) {
    SMBCFILE* f = smbc_getFunctionOpen(ctx_)(ctx_, url.c_str(), O_RDONLY, 0);
    if (!f) fail(Step::kOpenRead, where);
    alive();
    // The size: a read that asks past the end of the file is safe when it
    // is one SMB2 READ (io_size within the server's maximum read), and its
    // short answer is the end, so no round trip asks for the size (an
    // fstat is one); else the size at open bounds every read (see the top).
    // A file the caller expects to fit in one call takes the size too, as
    // smbclient's get does (QUERY_INFO): libsmbclient's read goes on after
    // a short answer until one is empty, so a READ past the end would cost
    // a second READ answered END_OF_FILE, and a READ of io_size for a few
    // KiB makes the server set aside io_size for it.
    uint64_t size = kSizeUnknown;
    if (!one_request_per_call(Mode::kRead) || (size_hint > 0 && size_hint <= io_size_)) {
      struct stat st {};
      if (smbc_getFunctionFstat(ctx_)(ctx_, f, &st) != 0) {
        const int err = errno;
        smbc_getFunctionClose(ctx_)(ctx_, f);
        errno = err;
        fail(Step::kOpenRead, where);
      }
      size = static_cast<uint64_t>(st.st_size);
    }
    if (pool) {
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
  if (pool) return make_pool_file(f, mode, std::move(where), 0, url, sent);
  return std::make_unique<SmbFile>(*this, f, mode, std::move(where), 0);
}

void SmbSession::remove(const std::string& rel) {
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

// A path's stat: libsmbclient's smbc_stat (SMB2 CREATE, QUERY_INFO, CLOSE:
// three requests, each waiting for the last; Debian 12's libsmbclient does
// not compound them, as a capture of the small-file pass shows).
FileInfo SmbSession::stat(const std::string& rel) {
  check_relative_path(rel);
  const std::string url = url_of(rel);
  t_log.clear();
  struct stat st {};
  if (smbc_getFunctionStat(ctx_)(ctx_, url.c_str(), &st) != 0) fail(Step::kOpenRead, place(rel));
  alive();
  return {.size = uint64_t(st.st_size), .mtime = st.st_mtime, .is_dir = S_ISDIR(st.st_mode)};
}

void SmbSession::mkdir(const std::string& rel) {
  check_relative_path(rel);
  const std::string url = url_of(rel);
  t_log.clear();
  if (smbc_getFunctionMkdir(ctx_)(ctx_, url.c_str(), 0755) != 0) fail(Step::kOpenWrite, place(rel));
  alive();
}

void SmbSession::rmdir(const std::string& rel) {
  check_relative_path(rel);
  const std::string url = url_of(rel);
  t_log.clear();
  if (smbc_getFunctionRmdir(ctx_)(ctx_, url.c_str()) != 0) fail(Step::kRemove, place(rel));
  alive();
}

std::map<std::string, std::string> SmbSession::properties() const {
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
      // The share (smb.conf section) it connected to: its settings are the
      // share's where it sets them apart from [global].
      {"share_name", share_name_},
      // "auto": chosen from the handshake's round trip (and path_rate when
      // given); "option": as the share asked.
      {"connections_chosen", auto_connections_ ? "auto" : "option"},
      // What auto or the option asked for; more than `connections` when
      // helper connections failed and the session went on without them
      // (connections_reason says why): the figure is then a lower bound.
      {"connections_asked", std::to_string(connections_asked_)},
      // Files opened through the helpers (one that fits in one call, a
      // small file, goes through this connection alone).
      {"files_through_helpers", std::to_string(pool_files_)},
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
  if (!degraded_reason_.empty()) {
    p["connections_reason"] = degraded_reason_;
    p["connections_error"] = degraded_error_;
  }
  std::lock_guard<std::mutex> lock(flight_mu_);
  add_flight(p, flight_.op, flight_.request_size, flight_.requests, flight_.in_flight);
  return p;
}

// What a call of `n` bytes keeps in flight, per libsmbclient 4.17 (see the
// top of this file).
Flight SmbSession::flight_of(Mode mode, uint64_t n) const {
  Flight one;
  one.op = mode == Mode::kRead ? "read" : "write";
  const uint32_t max = !limits_ ? 0 : mode == Mode::kRead ? limits_->max_read : limits_->max_write;
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
void SmbSession::note_call(Mode mode, uint64_t n) {
  const Flight one = flight_of(mode, n);
  std::lock_guard<std::mutex> lock(flight_mu_);
  if (flight_.op != one.op || one.in_flight > flight_.in_flight) flight_ = one;
}

// Whether a call of io_size bytes is one SMB2 request (within the
// server's maximum read or write, as cli_pull rounds it), so that a read
// past the end of the file leaves nothing in flight.
bool SmbSession::one_request_per_call(Mode mode) const {
  return flight_of(mode, io_size_).requests == 1 && limits_.has_value();
}

void SmbSession::new_file() {
  std::lock_guard<std::mutex> lock(flight_mu_);
  flight_ = {};
}

void SmbSession::fail(Step step, const Place& where) {
  const int err = errno;
  throw smb_error(err, smb_status_from_log(t_log), step, where);
}

void SmbSession::make_parents(const std::string& rel) {
  size_t pos = 0;
  while ((pos = rel.find('/', pos)) != std::string::npos) {
    const std::string dir = url_of(rel.substr(0, pos));
    if (smbc_getFunctionMkdir(ctx_)(ctx_, dir.c_str(), 0755) != 0 && errno != EEXIST) {
      fail(Step::kOpenWrite, place(rel.substr(0, pos)));
    }
    ++pos;
  }
}

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
    // As large as the call (a small file's few KiB, not io_size each).
    if (stage_.size() < want) stage_.resize(static_cast<size_t>(want));
    stage_pos_ = 0;
    stage_end_ = read_call(stage_.data(), static_cast<size_t>(want));
    if (stage_end_ == 0) return 0;
  }
  const size_t k = std::min(n, stage_end_ - stage_pos_);
  std::memcpy(buf, stage_.data() + stage_pos_, k);
  stage_pos_ += k;
  return k;
}

void SmbFile::restart_at(uint64_t offset) {
  CP_CHECK(mode_ == Mode::kRead && f_);
  stage_pos_ = stage_end_ = 0;
  seek(offset);
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
    const size_t k = std::min(n, io - stage_end_);
    // Grown as the data comes (a small file's few KiB, not io_size each).
    if (stage_.size() < stage_end_ + k) {
      stage_.resize(std::min(io, std::max(stage_end_ + k, 2 * stage_.size())));
    }
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

std::unique_ptr<Driver> make_driver() { return std::make_unique<SessionDriver<SmbSession>>("smb"); }

}  // namespace cp::transfer::smb
