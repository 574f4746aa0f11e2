// The server host's NFS server: NFS-Ganesha (user space, so no kernel nfsd),
// exporting the same RAM, disk and read-only shares as vsftpd and smbd, on
// the data address. NFSv4 needs nothing else; NFSv3 needs rpcbind, which the
// lab runs inside the server host when it is installed (the host has its own
// /run and network namespace, so it is the host's alone). Internal to lib/lab.
#pragma once

#include <functional>
#include <string>

#include "lab/lab.h"

namespace cp::lab::ganesha {

inline constexpr int kNfsPort = 2049;
inline constexpr int kRpcbindPort = 111;

// Paths of the NFS server's files; not stored in lab.json.
struct NfsFiles {
  std::string dir;          // <lab>/server/nfs
  std::string conf;         // <dir>/ganesha.conf
  std::string log;          // <dir>/ganesha.log (its -L log)
  std::string out;          // <dir>/ganesha.out: its stdout/stderr
  std::string pid;          // <dir>/ganesha.pid
  std::string recovery;     // <dir>/recovery: NFSv4 client records
  std::string rpcbind_out;  // <dir>/rpcbind.out
  std::string rpcbind_pid;  // <dir>/rpcbind.pid
};
NfsFiles nfs_files(const LabState& state);

// ganesha.conf: NFSv4 (and NFSv3 when `v3`) over TCP on the data address
// only, no NLM/RQUOTA/UDP, graceless (no 90 s grace period at start), NFSv4
// recovery records in the lab dir; exports /ram, /disk (read-write) and /ro
// (read-only) of the share dirs, AUTH_SYS, root squashed (the share user's
// uid owns the files, as with FTP and SMB), each with options.ganesha_params
// at its end. `plugins_dir` holds libfsalvfs.so.
std::string conf_text(const LabState& state, bool v3, const std::string& plugins_dir);

// The nfs shares plan() gives a server: nfs://<data address>/{ram,disk}.
void add_shares(LabState& state);

// Starts rpcbind (when installed and not running) and ganesha.nfsd (when not
// running) inside the server host, and waits until Ganesha accepts on
// <data address>:2049. `save` records each pid in lab.json. Throws
// Error(kUnsupported) when ganesha.nfsd or its VFS plugin is not installed,
// Error(kIo) with Ganesha's log when it does not come up.
void start(LabState& state, const std::function<void()>& save);

// Stops the recorded ganesha.nfsd and rpcbind (TERM, then KILL) if they are
// still the lab's. Never throws for a process already gone.
void stop(LabState& state);

// The recorded process is alive and is Ganesha running the lab's config.
bool alive(const LabState& state);
// The lab serves NFS (a lab.json from before it has no nfs shares).
bool serves_nfs(const LabState& state);

}  // namespace cp::lab::ganesha
