// Helpers the tune_agent sources share (apply, privilege, journal, conf
// text). Internal: only lib/tune .cc files include this header.
#pragma once

#include <string>
#include <vector>

#include "core/process.h"
#include "tune_agent/apply.h"
#include "tune_agent/knobs.h"

namespace cp::tune::detail {

// "/a/b/c" -> "/a/b"; "c" -> "."; "/c" -> "/".
std::string dir_of(const std::string& path);
// Paths under /proc/ or /sys/: one write, no truncation, owned by root.
bool is_kernel_file(const std::string& path);
// "net.ipv4.tcp_rmem" -> "/proc/sys/net/ipv4/tcp_rmem".
std::string sysctl_path(const std::string& key);

// Writes `content` to `path` in place (the inode, its mode and owner stay:
// smb.conf comes back byte-identical); kernel files take one write. Never
// follows a symlink (O_NOFOLLOW) and writes only a regular file this user
// owns (root writes root's files only): Error(kIo) naming the path otherwise.
void write_file(const std::string& path, const std::string& content);

std::string user_name();
std::string host_name();
// argv[0] by full path, searching PATH and the sbin directories.
std::string full_path(const std::string& prog);
// The knob needs root and this process is not root: actions go through sudo.
bool needs_sudo(const Knob& knob);
// A read a knob needs (blockdev --getra, hdparm -W): directly, else through
// `sudo -n` (the wrapper when installed) when a rule allows it.
RunResult run_read(const Knob& knob, const std::vector<std::string>& argv);
// Marks every action of `r` sudo when the knob needs it.
void mark_sudo(const Knob& knob, Resolved& r);
// What `sudo -n` runs for an action: the wrapper's operation when the
// wrapper is installed (empty when it has none for this action), else the
// exact command (writes: tee FILE, removes: rm -f FILE) by full path.
std::vector<std::string> privileged_argv(const Action& a);

}  // namespace cp::tune::detail
