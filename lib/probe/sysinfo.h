// Facts about a host, stored with each run so a verdict can be read against
// the hardware and configuration it was measured on.
//
// Only .cc files include this header (it pulls in Boost.JSON).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/platform.h"

namespace cp::probe {

struct FactsRequest {
  std::string ram_dir;       // directory for RAM-backed files (tmpfs), or empty
  std::string disk_dir;      // directory on the disk under test, or empty
  std::string peer_address;  // the other host, to find the interface that reaches it, or empty
  // The smb.conf of the Samba server to describe (a lab's smbd runs with
  // its own); empty: /etc/samba/smb.conf when it exists.
  std::string samba_conf = {};
};

// {
//   "hostname", "os" (PRETTY_NAME), "kernel" (uname -r), "arch" (uname -m), "cpu_model",
//   "cpu_cores" (online), "memory_bytes",
//   "net": {"peer", "name", "address", "mtu", "speed_mbit", "shaped_rate_bit"[, "error"]},
//   "ram_dir":  {"path", "fs_type", "total_bytes", "avail_bytes"},
//   "disk_dir": {"path", "fs_type", "total_bytes", "avail_bytes", "mount_source",
//                "device": block_device_facts(...),
//                "zfs": zfs_facts(fs_type) (null unless ZFS; the dataset is mount_source)},
//   "tcp_sysctls": tcp_sysctl_facts(),
//   "samba": samba_facts(req.samba_conf),
//   "euid": the agent's effective uid (0: root),
//   "degraded": degraded_facts_json(os::degraded_facts(...)): [{"fact", "method",
//               "privilege"}], each fact measured with a lesser method for want of a
//               privilege, and what would restore it (empty when nothing is degraded)
// }
// "net"/"ram_dir"/"disk_dir" are null when not asked for. Missing pieces are null, never
// an exception; only a missing ram_dir/disk_dir directory throws
// Error(kConfig, "ram_dir '/x' does not exist", hint).
boost::json::object collect_facts(const FactsRequest& req);

// [{"fact", "method", "privilege"}, ...] in order.
boost::json::array degraded_facts_json(const std::vector<os::DegradedFact>& facts);

// {"arc_c_max_bytes", "arc_size_bytes"} (each null when arcstats is unreadable)
// for a ZFS filesystem (`fs_type` "zfs"), from <proc_root>/spl/kstat/zfs/arcstats;
// null for any other filesystem.
boost::json::value zfs_facts(const std::string& fs_type, const std::string& proc_root = "/proc");

// The TCP tunables a verdict or a comparison cites, read under `proc_root`:
// {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem",
//  "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_congestion_control",
//  "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_mtu_probing"}: each the file's
// text with runs of whitespace made one space, or null when unreadable.
boost::json::object tcp_sysctl_facts(const std::string& proc_root = "/proc");

// The effective Samba configuration, so runs can be compared:
// {"config_path", "source" ("testparm" | "file"), "sha256" (of the text),
//  "global": {parameter: value} of its [global] section}. The text is
// `testparm -s --suppress-prompt PATH` when testparm exists (includes
// resolved, defaults omitted), else the file. `conf_path` empty means
// /etc/samba/smb.conf; null when that does not exist. A given path that
// cannot be read gives {"config_path", "error"}.
boost::json::value samba_facts(const std::string& conf_path);

// The config file a running smbd was started with, from its command line
// (NUL-separated, as /proc/PID/cmdline): `-s FILE`, `-sFILE`, `--configfile=FILE`
// or `--configfile FILE`; "" when it names none (it uses its built-in default).
std::string smbd_config_from_cmdline(std::string_view cmdline);

// Which smb.conf describes the Samba server here, and how that was decided
// (`how`: "plan", "running smbd (pid N)", "smbd -b", "default"): the plan's
// path first; else the one the running smbd uses (a NAS keeps it elsewhere, a
// lab passes -s), preferring an smbd in this network namespace; else smbd's
// compiled-in CONFIGFILE; else /etc/samba/smb.conf. Reads under proc_root.
// `served_here` (when given): the plan names it, or an smbd runs in this network
// namespace (or in one this process may not read: without root, assumed so).
std::string samba_config_path(const std::string& planned, std::string* how,
                              const std::string& proc_root = "/proc", bool* served_here = nullptr);

// The [global] section of smb.conf or testparm text: parameter names
// lower-cased with inner whitespace made one space, values trimmed;
// '#'/';' comments and '\' continuation lines handled; a later line
// wins. Empty when there is no [global] section.
boost::json::object parse_samba_globals(std::string_view text);

// SHA-256 of `text` as 64 hex digits.
std::string sha256_hex(std::string_view text);

// The block device major:minor (a file's st_dev) as sysfs under `sys_root` describes it:
// {"name" ("sda1"), "disk" ("sda"; itself unless a partition), "partition", "read_ahead_kb",
//  "scheduler" (the active one), "rotational", "backing_file" (loop devices, else null),
//  "slaves" (device-mapper/md members)}; null when sysfs knows no such block device
// (tmpfs, NFS, btrfs subvolumes: anonymous devices).
boost::json::value block_device_facts(unsigned major, unsigned minor,
                                      const std::string& sys_root = "/sys");

// block_device_facts for the filesystem holding directory `path` (its st_dev,
// else the block device its mount names: btrfs subvolumes); null when none
// (tmpfs, NFS) or `path` cannot be read.
boost::json::value dir_device_facts(const std::string& path);

// Lowest shaping rate, bit/s, set by a tbf, netem ("rate") or cake ("bandwidth") qdisc in
// the output of `tc -j qdisc show dev IF`; nullopt when none sets one or the text is not
// that JSON. (tc prints rates in bytes/s.)
std::optional<uint64_t> parse_tc_qdisc_rate(std::string_view tc_json);
// Rate, bit/s, of the htb root class in the output of `tc class show dev IF` (text: tc 6.1
// prints no JSON for classes): "class htb 1:1 root rate 300Mbit ceil ..."; with several root
// classes the highest; nullopt when there is none.
std::optional<uint64_t> parse_tc_htb_root_rate(std::string_view tc_text);
// The active scheduler in /sys/block/X/queue/scheduler text: "none [mq-deadline] bfq" ->
// "mq-deadline"; a lone "none" -> "none"; "" when empty.
std::string parse_scheduler(std::string_view text);
// PRETTY_NAME from /etc/os-release text, unquoted; "" when absent.
std::string parse_os_release(std::string_view text);

}  // namespace cp::probe
