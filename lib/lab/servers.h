// The server host's FTP (vsftpd) and SMB (smbd) servers and the share user
// they both accept. Internal to lib/lab (lab.cc and status.cc).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lab/lab.h"

namespace cp::lab::servers {

// Creates the share user (or adopts one a crashed lab left, recognised by its
// comment), gives it a random password (kept across restarts; written 0600 to
// share_password_file, fed to chpasswd and smbpasswd on stdin only), writes
// the configs, and starts whichever of vsftpd and smbd is not running inside
// the server host; waits until both accept connections on the data address.
// `save` records progress in lab.json (the user, then each pid). Throws
// Error(kUnsupported) when vsftpd or smbd is not installed, Error(kIo) with
// the server's log when one does not come up.
void start(LabState& state, const std::function<void()>& save);

// Stops the recorded vsftpd and smbd (TERM, then KILL), if they are still
// the lab's. Never throws for a process already gone.
void stop(LabState& state);

// Stops smbd only, or vsftpd only (for new settings; start() brings it back).
void stop_smbd(LabState& state);
void stop_ftpd(LabState& state);

// Deletes the share user when this lab created it; Error(kIo) on failure.
void delete_user(const LabState& state);

// The recorded process is alive and is that server, running the lab's config.
bool ftpd_alive(const LabState& state);
bool smbd_alive(const LabState& state);

// What the server host's daemons share (these and ganesha.cc's).
// Throws Error(kIo): `what`, then the last lines of each of `logs`.
[[noreturn]] void server_failed(const std::string& what, const std::vector<std::string>& logs);
// Waits up to `wait_s` seconds for `pid_file` to name a live `comm` running
// `conf` that accepts on the data address's `port`; its pid. server_failed
// (naming `name`) when it exits or does not accept in time.
int wait_for(const LabState& s, const std::string& name, const char* comm,
             const std::string& pid_file, const std::string& conf, int port,
             const std::vector<std::string>& logs, double wait_s);

}  // namespace cp::lab::servers
