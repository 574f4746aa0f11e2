// The lab's nas server profile (`lab up --server-profile nas`): the server
// host's SSH sessions run chrooted (sshd's ChrootDirectory) in a root
// filesystem holding nothing but a static BusyBox, like a NAS appliance
// without Debian's libraries, so whatever the orchestrator runs or uploads
// there must work with BusyBox's sh and tools and no shared library. The
// host's ram and disk dirs appear at their usual paths inside; its daemons
// (vsftpd, smbd) keep running outside, as a NAS's own do.
#pragma once

#include <string>
#include <vector>

#include "lab/lab.h"

namespace cp::lab {

// <lab>/server/nasroot.
std::string nas_root_dir(const LabState& state);

// Lays out the root in the root namespace: the static BusyBox (Debian's
// busybox-static, /bin/busybox) with its applets linked in /bin, /sbin,
// /usr/bin, /usr/sbin; /etc/passwd and /etc/group for root; /root, /tmp; and
// empty mount points for /proc, /sys, /dev and the ram and disk dirs. /bin/bash
// (root's login shell, which sshd runs) is a two-line script that runs
// BusyBox's sh, so a bash-ism still fails there. Throws Error(kUnsupported)
// when BusyBox is missing or not static.
void make_nas_root(const LabState& state);

// The mounts the root needs, made inside the server host's mount namespace
// (nsenter into its sshd, after it started): proc, /sys and /dev (recursive
// binds), and the host's ram and disk dirs (and the unprivileged login's home,
// with --server-login user) at their own paths.
std::vector<std::string> nas_mount_argv(const LabState& state);

}  // namespace cp::lab
