// The ftp driver's error mapping: a failed libcurl FTP operation as the
// cp::Error a user can act on (ftp_error, declared in protocols.h).
#include <curl/curl.h>

#include <fmt/format.h>

#include <cctype>
#include <ctime>
#include <optional>
#include <string>

#include "core/error.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

bool reply_says(const FtpFailure& f, std::string_view word) {
  std::string lower;
  for (char c : f.reply) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(word) != std::string::npos;
}

// What the server's last reply says, whatever curl made of it: a full disk,
// a data connection cut while storing, a server that takes only TLS; nullopt
// when it says none of these.
std::optional<Error> ftp_reply_error(const FtpFailure& f, bool writing, const std::string& target,
                                     const std::string& said, const std::string& lib,
                                     const Place& w) {
  // A full disk, whatever curl made of it: 452/552, or vsftpd's 451 on a
  // failed write (it does not say why; a full disk is the usual reason).
  if (f.reply_code == 452 || f.reply_code == 552 || reply_says(f, "no space") ||
      reply_says(f, "disk full") ||
      (writing && f.reply_code == 451 && reply_says(f, "failure writing"))) {
    return Error(ErrorKind::kIo,
                 fmt::format("the FTP server {} could not store {}: its disk is full{}", w.server,
                             target, said),
                 "free space on the server's share (or raise the user's quota), or use smaller "
                 "files");
  }
  // vsftpd answers a failed write (ENOSPC) by dropping the data connection
  // before curl reads its "451": the upload dies with a reset after "150".
  if (writing && f.reply_code == 150 &&
      (f.curl_code == CURLE_SEND_ERROR || f.curl_code == CURLE_RECV_ERROR)) {
    return Error(ErrorKind::kIo,
                 fmt::format("the FTP server {} cut the data connection while storing {} ({}){}: "
                             "its disk is probably full, or it failed writing",
                             w.server, target, lib, said),
                 "check free space on the server's share and the FTP server's log");
  }
  // A server that takes only TLS says so in plain text and then refuses the
  // login or hangs up (Pure-FTPd -Y 2: "421 Please reconnect using TLS",
  // vsftpd: "530 Non-anonymous sessions must use encryption", ProFTPD
  // TLSRequired: "550 SSL/TLS required on the control channel"); curl may
  // report that as a timeout or a denied login.
  if ((f.reply_code == 421 || f.reply_code == 530 || f.reply_code == 534 || f.reply_code == 550) &&
      (reply_says(f, "tls") || reply_says(f, "ssl") || reply_says(f, "encryption"))) {
    return Error(ErrorKind::kConfig,
                 fmt::format("the FTP server {} requires TLS{}", w.server, said),
                 "use an ftps:// share URL (explicit TLS, AUTH TLS; option ca_file for a "
                 "private certificate)");
  }
  return std::nullopt;
}

}  // namespace

Error ftp_error(const FtpFailure& f, Step step, const Place& w) {
  const std::string target = w.file.empty() ? w.share : w.file;
  const std::string said = f.reply.empty() ? "" : fmt::format(" (server said: {})", f.reply);
  const std::string lib =
      f.detail.empty() ? curl_easy_strerror(static_cast<CURLcode>(f.curl_code)) : f.detail;
  const bool writing = writes(step);
  if (auto e = ftp_reply_error(f, writing, target, said, lib, w)) return *e;
  switch (static_cast<CURLcode>(f.curl_code)) {
    case CURLE_COULDNT_CONNECT:
      return Error(ErrorKind::kIo,
                   fmt::format("cannot connect to the FTP server at {}: {}", w.server, lib),
                   fmt::format("check that an FTP server (vsftpd, proftpd) runs and listens on "
                               "{}, and that no firewall blocks it",
                               w.server));
    case CURLE_COULDNT_RESOLVE_HOST:
      return Error(ErrorKind::kConfig,
                   fmt::format("cannot resolve the FTP host of {}: {}", w.server, lib),
                   "check the host name in the share URL");
    case CURLE_OPERATION_TIMEDOUT:
      return Error(ErrorKind::kIo,
                   fmt::format("the FTP server {} stopped answering ({}){}", w.server, lib, said),
                   "check the server and the network; passive data ports may be blocked by a "
                   "firewall");
    case CURLE_LOGIN_DENIED:
      return Error(
          ErrorKind::kConfig,
          fmt::format("the FTP server {} refused the login of user '{}'{}", w.server, w.user, said),
          "check the user and its password (given by environment variable, 0600 file "
          "or prompt); servers also refuse a user whose shell is not in /etc/shells "
          "(Pure-FTPd; ProFTPD unless RequireValidShell off)");
    case CURLE_REMOTE_ACCESS_DENIED:
      if (step == Step::kConnect) {
        return Error(ErrorKind::kConfig,
                     fmt::format("the FTP server {} has no directory {} for user '{}' (or "
                                 "denies it){}",
                                 w.server, w.share, w.user, said),
                     "check the directory in the share URL (relative to the user's login "
                     "directory; %2F for an absolute path)");
      }
      if (writing) break;  // handled below with the upload failures
      if (step == Step::kOpenRead) {
        // RETR's CWD into the file's directory failed.
        return laid_out_file_missing(fmt::format(
            "no file {} in {} on the FTP server {} (its directory is missing or denied){}", target,
            w.share, w.server, said));
      }
      return Error(ErrorKind::kIo,
                   fmt::format("the FTP server {} denied access to {}{}", w.server, target, said),
                   "check the file's permissions for the FTP user");
    case CURLE_REMOTE_FILE_NOT_FOUND:
      return laid_out_file_missing(
          fmt::format("no file {} in {} on the FTP server {}{}", target, w.share, w.server, said));
    case CURLE_USE_SSL_FAILED:
      return Error(ErrorKind::kConfig,
                   fmt::format("the FTP server {} does not offer TLS (AUTH TLS){}", w.server, said),
                   "use an ftp:// URL, or enable TLS on the server (vsftpd: ssl_enable=YES)");
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CONNECT_ERROR:
      return Error(ErrorKind::kIo,
                   fmt::format("TLS with the FTP server {} failed: {}", w.server, lib),
                   "give the share option ca_file=PATH with the server's CA certificate (for a "
                   "self-signed server, its own certificate), or install that CA on the client; "
                   "insecure=1 skips the check");
    case CURLE_QUOTE_ERROR:
      return Error(ErrorKind::kIo,
                   fmt::format("the FTP server {} refused to remove {}{}", w.server, target, said),
                   "check that the file exists and the user may delete in its directory");
    case CURLE_PARTIAL_FILE:
      return Error(ErrorKind::kIo,
                   fmt::format("the FTP server {} ended the transfer of {} early: {}{}", w.server,
                               target, lib, said),
                   "check the server's log; the file may have changed or the server failed");
    default:
      break;
  }
  if (writing && (f.curl_code == CURLE_UPLOAD_FAILED || f.curl_code == CURLE_REMOTE_ACCESS_DENIED ||
                  f.reply_code == 550 || f.reply_code == 553 || f.reply_code == 532)) {
    return Error(ErrorKind::kIo,
                 fmt::format("the FTP server {} refused to store {} in {}{}", w.server, target,
                             w.share, said),
                 "let the FTP user write there (vsftpd: write_enable=YES and directory "
                 "permissions), or pick a writable share");
  }
  return Error(ErrorKind::kIo,
               fmt::format("FTP {} of {} on {} failed: {}{}",
                           step == Step::kConnect  ? "login"
                           : step == Step::kRemove ? "removal"
                           : writing               ? "upload"
                                                   : "download",
                           target, w.server, lib, said),
               "see the server's log; run `curl -v` against the same URL to compare");
}

Error ftp_command_error(const FtpFailure& f, std::string_view verb, const Place& w) {
  const std::string target = w.file.empty() ? w.share : w.file;
  const std::string said = f.reply.empty() ? "" : fmt::format(" (server said: {})", f.reply);
  if (f.reply_code == 500 || f.reply_code == 502 || f.reply_code == 504) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("the FTP server {} does not answer {}{}", w.server, verb, said),
                 "the small-file pass skips the phase that needs it; a server that offers it "
                 "(vsftpd, ProFTPD, Pure-FTPd all do) measures it");
  }
  const char* what = verb == "SIZE" ? "stat" : verb == "MKD" ? "create the directory" : "remove";
  if (f.curl_code != 0 && f.curl_code != CURLE_QUOTE_ERROR && f.reply_code == 0) {
    return ftp_error(f, verb == "MKD" ? Step::kOpenWrite : Step::kRemove, w);
  }
  return Error(
      ErrorKind::kIo,
      fmt::format("the FTP server {} refused to {} {} ({}){}", w.server, what, target, verb, said),
      "check that the path exists and the FTP user may see and change its directory "
      "(vsftpd: write_enable=YES, cmds_allowed)");
}

std::optional<int64_t> ftp_mdtm_seconds(std::string_view v) {
  if (v.size() < 14) return std::nullopt;
  for (size_t i = 0; i < 14; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return std::nullopt;
  }
  auto num = [&](size_t at, size_t n) { return std::stoi(std::string(v.substr(at, n))); };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  tm.tm_hour = num(8, 2);
  tm.tm_min = num(10, 2);
  tm.tm_sec = num(12, 2);
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31) return std::nullopt;
  return static_cast<int64_t>(::timegm(&tm));
}

}  // namespace cp::transfer
