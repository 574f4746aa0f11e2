// The smb driver: libsmbclient, SMB2 or later (SMB1 is refused), one
// context per session. smb://host[:port]/share[/dir].
//
// Bounded memory: every File::read/write is one smbc_read/smbc_write of at
// most the caller's block (capped at the "io_size" option, default 1 MiB)
// into the caller's buffer; libsmbclient splits it into requests of the
// negotiated maximum read/write size and keeps nothing between calls.
//
// What was negotiated (dialect, signing, encryption) is not exposed by
// libsmbclient's API; properties() records what this client asked for, and
// the server can tell the rest (`smbstatus --json` lists each session's
// dialect, signing and encryption).
//
// Share options: "encrypt" = "default" | "none" | "request" | "require";
// "io_size" (bytes per request, e.g. "1MiB"); "timeout" (seconds);
// "workgroup"; "min_protocol" (default SMB2_02), "max_protocol" (SMB3).
#include <fcntl.h>
#include <libsmbclient.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"
#include "transfer/share_url.h"

namespace cp::transfer {
namespace {

constexpr uint64_t kDefaultIoSize = 1 << 20;
constexpr size_t kLogKeep = 4096;  // bytes of libsmbclient's log kept per thread

// libsmbclient's log is process-wide; its calls run on the caller's thread,
// so each thread keeps its own recent lines (for NT_STATUS names).
thread_local std::string t_log;

void on_log(void*, int, const char* msg) {
  t_log += msg;
  if (t_log.size() > kLogKeep) t_log.erase(0, t_log.size() - kLogKeep);
}

std::string option(const Share& share, const char* name, std::string fallback) {
  auto it = share.options.find(name);
  return it == share.options.end() ? fallback : it->second;
}

struct Credentials {
  std::string workgroup, user, password;
};

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

class SmbSession;

class SmbFile : public File {
 public:
  SmbFile(SmbSession& s, SMBCFILE* f, Mode mode, Place where)
      : s_(s), f_(f), mode_(mode), where_(std::move(where)) {}
  ~SmbFile() override;
  size_t read(char* buf, size_t n) override;
  size_t pread(char* buf, size_t n, uint64_t offset) override;
  void write(const char* buf, size_t n) override;
  void pwrite(const char* buf, size_t n, uint64_t offset) override;
  void close() override;

 private:
  void seek(uint64_t offset);

 public:
 private:
  SmbSession& s_;
  SMBCFILE* f_;
  Mode mode_;
  Place where_;
  uint64_t pos_ = 0;  // libsmbclient's file offset: where the next read or write starts
};

class SmbSession : public Session {
 public:
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
    creds_.workgroup = option(share, "workgroup", "");
    if (const size_t semi = creds_.user.find(';'); semi != std::string::npos) {
      creds_.workgroup = creds_.user.substr(0, semi);  // "DOMAIN;user"
      creds_.user = creds_.user.substr(semi + 1);
    }
    io_size_ = parse_size(option(share, "io_size", "1MiB"), "smb option 'io_size'");
    if (io_size_ < 4096 || io_size_ > (64u << 20)) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("smb option io_size={} is out of range", io_size_),
                  "give 4KiB to 64MiB");
    }
    encrypt_ = option(share, "encrypt", "default");
    min_protocol_ = option(share, "min_protocol", "SMB2_02");
    max_protocol_ = option(share, "max_protocol", "SMB3");
    const double timeout = parse_duration(option(share, "timeout", "30"), "smb option 'timeout'");
    where_.server = host_port(url_, 445);
    where_.share = share_name_;
    where_.user = creds_.user.empty() ? "guest" : creds_.user;
    // The URL libsmbclient sees: no credentials, no port (smbc_setPort has it).
    const std::string host =
        url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
    base_ = "smb://" + host + percent_encode_path(url_.path);

    ctx_ = smbc_new_context();
    if (!ctx_) throw Error(ErrorKind::kIo, "libsmbclient could not start: " + errno_text(errno));
    smbc_setOptionUserData(ctx_, &creds_);
    smbc_setFunctionAuthDataWithContext(ctx_, auth_fn);
    // Never fall back to an anonymous or guest login: a wrong password must fail.
    smbc_setOptionNoAutoAnonymousLogin(ctx_, 1);
    smbc_setOptionUseKerberos(ctx_, 0);
    smbc_setOptionFallbackAfterKerberos(ctx_, 1);
    smbc_setOptionUseCCache(ctx_, 0);
    smbc_setTimeout(ctx_, static_cast<int>(timeout * 1000));
    if (url_.port) smbc_setPort(ctx_, static_cast<uint16_t>(url_.port));
    if (encrypt_ == "none") {
      smbc_setOptionSmbEncryptionLevel(ctx_, SMBC_ENCRYPTLEVEL_NONE);
    } else if (encrypt_ == "request") {
      smbc_setOptionSmbEncryptionLevel(ctx_, SMBC_ENCRYPTLEVEL_REQUEST);
    } else if (encrypt_ == "require") {
      smbc_setOptionSmbEncryptionLevel(ctx_, SMBC_ENCRYPTLEVEL_REQUIRE);
    } else if (encrypt_ != "default") {
      throw Error(ErrorKind::kConfig, fmt::format("smb option encrypt={} is unknown", encrypt_),
                  "give default, none, request or require");
    }
    // Level 3 while connecting: the log then says why a login failed.
    smbc_setDebug(ctx_, 3);
    {
      static std::once_flag once;
      std::call_once(once, [this] { smbc_setLogCallback(ctx_, nullptr, on_log); });
    }
    if (!smbc_init_context(ctx_)) {
      const int err = errno;
      smbc_free_context(ctx_, 1);
      ctx_ = nullptr;
      throw Error(ErrorKind::kIo, "libsmbclient could not initialise: " + errno_text(err),
                  "check /etc/samba/smb.conf (libsmbclient reads it)");
    }
    // Process-wide in libsmbclient, so set for every session alike.
    if (!smbc_setOptionProtocols(ctx_, min_protocol_.c_str(), max_protocol_.c_str())) {
      throw Error(
          ErrorKind::kConfig,
          fmt::format("libsmbclient refused protocols {}..{}", min_protocol_, max_protocol_),
          "give protocol names like SMB2_02, SMB2_10, SMB3_00, SMB3_11 or SMB3");
    }
    // Connect, log in and open the share's directory: wrong password,
    // unknown share and closed port show here.
    t_log.clear();
    SMBCFILE* dir = smbc_getFunctionOpendir(ctx_)(ctx_, base_.c_str());
    if (!dir) fail(Step::kConnect, where_);
    smbc_getFunctionClosedir(ctx_)(ctx_, dir);
    // Quiet from here: nothing is logged per read or write.
    smbc_setDebug(ctx_, 0);
  }

  ~SmbSession() override {
    if (ctx_) smbc_free_context(ctx_, 1);
  }

  std::unique_ptr<File> open(const std::string& rel, Mode mode, uint64_t) override {
    check_relative_path(rel);
    Place where = place(rel);
    const std::string url = url_of(rel);
    t_log.clear();
    if (mode == Mode::kRead) {
      SMBCFILE* f = smbc_getFunctionOpen(ctx_)(ctx_, url.c_str(), O_RDONLY, 0);
      if (!f) fail(Step::kOpenRead, where);
      return std::make_unique<SmbFile>(*this, f, mode, std::move(where));
    }
    SMBCFILE* f = smbc_getFunctionOpen(ctx_)(ctx_, url.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!f && errno == ENOENT && rel.find('/') != std::string::npos) {
      make_parents(rel);
      f = smbc_getFunctionOpen(ctx_)(ctx_, url.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    if (!f) fail(Step::kOpenWrite, where);
    return std::make_unique<SmbFile>(*this, f, mode, std::move(where));
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
    return {{"min_protocol", min_protocol_},
            {"max_protocol", max_protocol_},
            {"encryption_requested", encrypt_},
            {"signing_requested", "client default (smb.conf 'client signing')"},
            {"max_read_size", std::to_string(io_size_)},
            {"max_write_size", std::to_string(io_size_)},
            {"negotiated", "not exposed by libsmbclient; the server's smbstatus --json has it"}};
  }

  [[noreturn]] void fail(Step step, const Place& where) {
    const int err = errno;
    throw smb_error(err, smb_status_from_log(t_log), step, where);
  }

  SMBCCTX* ctx() const { return ctx_; }
  uint64_t io_size() const { return io_size_; }

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
  uint64_t io_size_ = kDefaultIoSize;
  std::string encrypt_, min_protocol_, max_protocol_;
  Place where_;
  SMBCCTX* ctx_ = nullptr;
};

SmbFile::~SmbFile() {
  if (f_) smbc_getFunctionClose(s_.ctx())(s_.ctx(), f_);
}

size_t SmbFile::read(char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kRead && f_);
  n = std::min<uint64_t>(n, s_.io_size());
  t_log.clear();
  const ssize_t r = smbc_getFunctionRead(s_.ctx())(s_.ctx(), f_, buf, n);
  if (r < 0) s_.fail(Step::kRead, where_);
  pos_ += static_cast<uint64_t>(r);
  return static_cast<size_t>(r);
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
  seek(offset);
  return read(buf, n);
}

void SmbFile::pwrite(const char* buf, size_t n, uint64_t offset) {
  CP_CHECK(mode_ == Mode::kWrite && f_);
  seek(offset);
  write(buf, n);
}

void SmbFile::write(const char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kWrite && f_);
  while (n > 0) {
    const size_t k = std::min<uint64_t>(n, s_.io_size());
    t_log.clear();
    const ssize_t w = smbc_getFunctionWrite(s_.ctx())(s_.ctx(), f_, buf, k);
    if (w < 0) s_.fail(Step::kWrite, where_);
    if (w == 0) {
      errno = EIO;
      s_.fail(Step::kWrite, where_);
    }
    buf += w;
    pos_ += static_cast<uint64_t>(w);
    n -= static_cast<size_t>(w);
  }
}

void SmbFile::close() {
  if (!f_) return;
  SMBCFILE* f = f_;
  f_ = nullptr;
  t_log.clear();
  if (smbc_getFunctionClose(s_.ctx())(s_.ctx(), f) != 0) s_.fail(Step::kClose, where_);
}

class SmbDriver : public Driver {
 public:
  std::string name() const override { return "smb"; }
  Capabilities capabilities() const override { return {true, true, true, true, true}; }
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
          "database (smbpasswd -a)");
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
                   "the server may speak only SMB1, which chokepoint does not use: enable SMB2 "
                   "or later on it (server min protocol = SMB2_02)");
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
  const char* what = step == Step::kConnect  ? "connecting to"
                     : step == Step::kRemove ? "removing"
                     : writing               ? "writing"
                                             : "reading";
  return Error(ErrorKind::kIo,
               fmt::format("SMB: {} {} on {} failed {}", what, target, w.server, why),
               "see the server's log (log level = 3 in smb.conf); `smbclient` against the same "
               "share can compare");
}

std::unique_ptr<Driver> make_smb_driver() { return std::make_unique<SmbDriver>(); }

}  // namespace cp::transfer
