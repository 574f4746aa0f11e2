// The nfs driver's error mapping: libnfs's status and text to a cp::Error
// naming the problem and its fix.
#include <fmt/format.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "core/error.h"
#include "transfer/protocols.h"

namespace cp::transfer {

Error nfs_error(int err, std::string_view detail, Step step, const Place& w) {
  const std::string target = w.target();
  const std::string why = detail.empty() ? fmt::format("({})", errno_text(err))
                                         : fmt::format("({}: {})", errno_text(err), detail);
  auto says = [&](std::string_view s) { return detail.find(s) != std::string_view::npos; };
  const bool writing = writes(step);
  if (err == ENOSPC || err == EDQUOT || says("NOSPC") || says("DQUOT")) {
    return Error(ErrorKind::kIo,
                 fmt::format("the NFS server {} could not store {}: its disk is full {}", w.server,
                             target, why),
                 "free space on the server's export (or raise the user's quota)");
  }
  // libnfs 4.0 reports a refused or reset connection at mount only as a
  // failed nfs_service.
  if (err == ECONNREFUSED || says("onnection refused") ||
      (step == Step::kConnect && says("nfs_service failed"))) {
    return Error(
        ErrorKind::kIo,
        fmt::format("cannot connect to the NFS server at {}: connection refused {}", w.server, why),
        "check that the NFS server runs and listens there (port 2049; NFSv3 also needs "
        "rpcbind on port 111 and mountd), and that no firewall blocks it");
  }
  if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN) {
    return Error(ErrorKind::kIo, fmt::format("the NFS server {} is unreachable {}", w.server, why),
                 "check the host and the network path to it");
  }
  if (step == Step::kConnect) {
    if (err == ENOENT || says("NOENT") || says("NOTDIR")) {
      return Error(
          ErrorKind::kConfig,
          fmt::format("the NFS server {} has no export or directory '{}' {}", w.server, target,
                      why),
          "check the export path in the URL (NFSv3: `showmount -e host`; NFSv4: the export's "
          "pseudo path, `nfs-ls nfs://host/?version=4` lists it)");
    }
    if (err == EACCES || err == EPERM || says("ACCES") || says("PERM") || says("AUTH")) {
      return Error(ErrorKind::kConfig,
                   fmt::format("the NFS server {} refused to mount '{}' for uid {} {}", w.server,
                               w.share, w.user, why),
                   "check that the export exists (Ganesha answers an unknown NFSv3 export with "
                   "MNT3ERR_ACCES), its client list and access type, and that the client's "
                   "address may mount it (some servers also want a port below 1024)");
    }
    if (err == EPROTONOSUPPORT || says("PROG_UNAVAIL") || says("PROG_MISMATCH") ||
        says("portmap") || says("MINOR_VERS")) {
      return Error(ErrorKind::kConfig,
                   fmt::format("the NFS server {} does not serve the NFS version asked for {}",
                               w.server, why),
                   "try the share option version=4 (or version=3), whichever the server has");
    }
  }
  if (writing && (err == EACCES || err == EPERM || err == EROFS || says("ROFS"))) {
    return Error(ErrorKind::kIo,
                 fmt::format("the NFS server {} refused to write {} for uid {} {}", w.server,
                             target, w.user, why),
                 "make the export writable (access type RW) and the directory writable for that "
                 "uid, or give the share options uid=/gid= of a user who may write");
  }
  if (err == ENOENT && step != Step::kConnect) {
    return laid_out_file_missing(
        fmt::format("no file {} on the NFS server {} {}", target, w.server, why),
        "the export's directory");
  }
  if (err == EACCES || err == EPERM) {
    return Error(ErrorKind::kIo,
                 fmt::format("the NFS server {} denied uid {} access to {} {}", w.server, w.user,
                             target, why),
                 "check the file's owner and mode against the uid/gid the share sends "
                 "(share options uid=, gid=)");
  }
  const char* what = step_words(step, writing, "mounting", "closing (COMMIT) after writing");
  return Error(ErrorKind::kIo,
               fmt::format("NFS: {} {} on {} failed {}", what, target, w.server, why),
               "see the NFS server's log; libnfs's nfs-cp against the same export can compare");
}

}  // namespace cp::transfer
