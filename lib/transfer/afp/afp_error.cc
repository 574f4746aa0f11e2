// The afp driver's error mapping: an AFP result code answering a command to
// a cp::Error naming the problem and its fix (declared in afp.h).
#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/error.h"
#include "transfer/afp/afp.h"
#include "transfer/afp/afp_codec.h"

namespace cp::transfer::afp {

std::string where_text(const Where& w) {
  std::string s = fmt::format("afp://{}/{}", w.server, w.volume);
  if (!w.object.empty()) s += "/" + w.object;
  return s;
}

namespace {
// afp_error's answers to the login's own result codes (and a parameter
// error of the login or of FPOpenVol); nullopt for the others.
std::optional<Error> afp_login_error(int32_t code, uint8_t command, const Where& w,
                                     const std::string& result, const std::string& at,
                                     const std::string& who) {
  const bool login = command == kFPLogin || command == kFPLoginCont;
  switch (code) {
    case kFPUserNotAuth:
      if (login) {
        return Error(ErrorKind::kConfig,
                     fmt::format("bad login: AFP server {} refused {} ({})", w.server, who, result),
                     "check the share's user and password");
      }
      return Error(ErrorKind::kConfig,
                   fmt::format("AFP server {} says {} is not logged in ({} on {})", w.server, who,
                               result, at),
                   "the session expired; run again");
    case kFPBadUAM:
      return Error(
          ErrorKind::kConfig,
          fmt::format("AFP server {} does not accept the login method ({})", w.server, result),
          "name another UAM with ;AUTH= in the URL, or leave AUTH out");
    case kFPBadVersNum:
      return Error(ErrorKind::kUnsupported,
                   fmt::format("AFP server {} rejected the AFP version ({})", w.server, result),
                   "the server announced a version it then refused; check its configuration");
    case kFPPwdExpiredErr:
    case kFPPwdNeedsChangeErr:
      return Error(ErrorKind::kConfig,
                   fmt::format("AFP server {}: the password of {} has expired or must be "
                               "changed ({})",
                               w.server, who, result),
                   "change the password on the server, then update the share's password");
    case kFPParamErr:
      if (login) {
        return Error(ErrorKind::kConfig,
                     fmt::format("bad login: AFP server {} rejected the login of {} ({})", w.server,
                                 who, result),
                     "check the user name and password; netatalk answers this way to a "
                     "wrong DHCAST128 password or an unknown user");
      }
      if (command == kFPOpenVol) {
        return Error(ErrorKind::kConfig,
                     fmt::format("no such volume: AFP server {} has no volume '{}' ({})", w.server,
                                 w.volume, result),
                     "check the volume name in the URL (afp://host/volume)");
      }
      break;
  }
  return std::nullopt;
}
}  // namespace

Error afp_error(int32_t code, uint8_t command, const Where& w) {
  const std::string result = result_name(code);
  const std::string op = command_name(command);
  const std::string at = where_text(w);
  const std::string who = w.user.empty() ? "the guest login" : fmt::format("user '{}'", w.user);
  const bool login = command == kFPLogin || command == kFPLoginCont;
  if (auto e = afp_login_error(code, command, w, result, at, who)) return *e;
  switch (code) {
    case kFPObjectNotFound:
    case kFPDirNotFound:
      if (command == kFPOpenVol) {
        return Error(ErrorKind::kConfig,
                     fmt::format("no such volume: AFP server {} has no volume '{}' ({})", w.server,
                                 w.volume, result),
                     "check the volume name in the URL (afp://host/volume)");
      }
      if (command == kFPCreateFile) {
        return Error(ErrorKind::kIo,
                     fmt::format("cannot create {}: its directory does not exist ({})", at, result),
                     "create the directory on the volume first");
      }
      return Error(ErrorKind::kIo,
                   fmt::format("object not found: {} does not exist ({} {})", at, op, result),
                   "check the path inside the volume");
    case kFPAccessDenied:
      if (command == kFPOpenVol) {
        return Error(ErrorKind::kConfig,
                     fmt::format("access denied: {} may not open volume '{}' on AFP server {} "
                                 "({})",
                                 who, w.volume, w.server, result),
                     "allow the user in the volume's 'valid users' (afp.conf)");
      }
      if (login) {
        return Error(
            ErrorKind::kConfig,
            fmt::format("access denied: AFP server {} refused {} ({})", w.server, who, result),
            "the server may not allow this login (guest access off?); give a user "
            "and password");
      }
      return Error(ErrorKind::kIo,
                   fmt::format("access denied: {} may not {} {} ({} {})", who,
                               command == kFPDelete ? "delete" : "use", at, op, result),
                   "check the Unix permissions of the volume's directory for that user on "
                   "the server");
    case kFPDiskFull:
    case kFPDiskQuotaExceeded:
      return Error(ErrorKind::kIo,
                   fmt::format("disk full: volume '{}' on AFP server {} has no room for {} "
                               "({} {})",
                               w.volume, w.server, at, op, result),
                   "free space on the server's volume, or use smaller file sizes");
    case kFPVolLocked:
      return Error(ErrorKind::kIo,
                   fmt::format("volume '{}' on AFP server {} is read-only ({} {})", w.volume,
                               w.server, op, result),
                   "make the volume writable (afp.conf: read only = no) or use another");
    case kFPFileBusy:
    case kFPDenyConflict:
    case kFPObjectLocked:
    case kFPLockErr:
      return Error(
          ErrorKind::kIo,
          fmt::format("{} is busy: another client holds it open or locked ({} {})", at, op, result),
          "close it elsewhere, or use another file name");
    case kFPObjectExists:
      return Error(ErrorKind::kIo, fmt::format("{} already exists ({} {})", at, op, result),
                   "remove it first, or use another name");
    case kFPObjectTypeErr:
      return Error(ErrorKind::kIo,
                   fmt::format("{} is a directory, not a file ({} {})", at, op, result),
                   "name a file inside the volume");
    case kFPDirNotEmpty:
      return Error(ErrorKind::kIo,
                   fmt::format("{} is a directory that is not empty ({})", at, result),
                   "remove its files first");
    case kFPTooManyFilesOpen:
      return Error(
          ErrorKind::kIo,
          fmt::format("AFP server {} has too many files open ({} {})", w.server, op, result),
          "close other clients' files, or raise the server's open-file limit");
    case kFPCallNotSupported:
      return Error(ErrorKind::kUnsupported,
                   fmt::format("AFP server {} does not support {} ({})", w.server, op, result),
                   "the server's AFP implementation lacks a call chokepoint needs; use "
                   "netatalk 3 or later");
    case kFPSessClosed:
    case kFPServerGoingDown:
      return Error(ErrorKind::kRemote,
                   fmt::format("AFP server {} ended the session ({} {})", w.server, op, result),
                   "the server is going down or dropped the session; retry when it is back");
  }
  return Error(ErrorKind::kIo, fmt::format("AFP {} on {} failed: {}", op, at, result),
               "check the server's log (afpd) for why");
}

}  // namespace cp::transfer::afp
