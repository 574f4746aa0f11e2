// Facts about a host, stored with each run so a verdict can be read against
// the hardware and configuration it was measured on.
//
// Only .cc files include this header (it pulls in Boost.JSON).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cp::probe {

struct FactsRequest {
  std::string ram_dir;       // directory for RAM-backed files (tmpfs), or empty
  std::string disk_dir;      // directory on the disk under test, or empty
  std::string peer_address;  // the other host, to find the interface that reaches it, or empty
};

// {
//   "hostname", "os" (PRETTY_NAME), "kernel" (uname -r), "arch" (uname -m), "cpu_model",
//   "cpu_cores" (online), "memory_bytes",
//   "net": {"peer", "name", "address", "mtu", "speed_mbit", "shaped_rate_bit"[, "error"]},
//   "ram_dir":  {"path", "fs_type", "total_bytes", "avail_bytes"},
//   "disk_dir": {"path", "fs_type", "total_bytes", "avail_bytes", "mount_source",
//                "device": block_device_facts(...)}
// }
// "net"/"ram_dir"/"disk_dir" are null when not asked for. Missing pieces are null, never
// an exception; only a missing ram_dir/disk_dir directory throws
// Error(kConfig, "ram_dir '/x' does not exist", hint).
boost::json::object collect_facts(const FactsRequest& req);

// The block device major:minor (a file's st_dev) as sysfs under `sys_root` describes it:
// {"name" ("sda1"), "disk" ("sda"; itself unless a partition), "partition", "read_ahead_kb",
//  "scheduler" (the active one), "rotational", "backing_file" (loop devices, else null),
//  "slaves" (device-mapper/md members)}; null when sysfs knows no such block device
// (tmpfs, NFS, btrfs subvolumes: anonymous devices).
boost::json::value block_device_facts(unsigned major, unsigned minor,
                                      const std::string& sys_root = "/sys");

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
