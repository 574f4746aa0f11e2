// The smb driver's error mapping: libsmbclient's errno and logged NT_STATUS
// name to a cp::Error naming the problem and its fix.
#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <string>
#include <string_view>

#include "core/error.h"
#include "transfer/protocols.h"

namespace cp::transfer {

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
  const std::string target = w.target();
  const std::string status = nt_status.empty() ? "" : fmt::format(", {}", nt_status);
  const std::string why = fmt::format("({}{})", errno_text(err), status);
  const bool writing = writes(step);
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
    return laid_out_file_missing(
        fmt::format("no file {} on the SMB server {} {}", target, w.server, why));
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

}  // namespace cp::transfer
