// A host's facts, typed: the agent's answer to `facts` (probe/sysinfo.cc
// fills it), which the runner decodes and stores whole per host and the
// verdict, report, export and HTML read back. One codec (facts_message_json.h,
// for .cc files only) writes and reads it; field names are the wire's
// (schemas/agent-messages.schema.json, $defs/result_facts).
//
// Unknown is not zero: a fact the host could not tell is nullopt (null on the
// wire), and a stored run that predates a field reads it as nullopt too.
// Light header: no Boost.JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cp::msg {

// One name = text pair kept in the order the host listed it (a config file's,
// a fixed list's); value nullopt: the host could not read it.
struct NamedValue {
  std::string name;
  std::optional<std::string> value;
};
using NamedValues = std::vector<NamedValue>;

// The value of `name`, or nullptr when absent or unknown.
const std::string* find_value(const NamedValues& values, std::string_view name);

// The interface that reaches the other end.
struct NetFacts {
  std::string peer;                 // the address asked about
  std::optional<std::string> name;  // interface ("eth0")
  std::optional<std::string> address;
  std::optional<int64_t> mtu;               // bytes
  std::optional<int64_t> speed_mbit;        // link speed, Mbit/s (lo, most virtual NICs: unknown)
  std::optional<uint64_t> shaped_rate_bit;  // the lowest tc rate on it, bit/s (none: nullopt)
  std::string error;                        // why no route was found ("": none)
};

// A block device as sysfs describes it.
// The link a disk hangs on (probe/platform.h BusLink): kind "sata" | "pcie" |
// "usb" | "virtual", the link as sysfs says it ("6.0 Gbps"), and its payload
// ceiling after line coding, bytes/s (0: the link does not say).
struct BusFacts {
  std::string kind;
  std::string link;
  uint64_t ceiling_bytes_per_s = 0;
};
struct MemberBusFacts {
  std::string member;  // "sda2": an md/LVM/dm member (one of `slaves`)
  BusFacts bus;
};

struct BlockDeviceFacts {
  std::string name;  // "sda1"
  std::string disk;  // "sda": itself unless a partition
  bool partition = false;
  std::optional<int64_t> read_ahead_kb;  // KiB
  std::optional<std::string> scheduler;  // the active one
  std::optional<bool> rotational;
  std::optional<std::string> backing_file;   // loop devices
  std::vector<std::string> slaves;           // device-mapper / md members
  std::optional<BusFacts> bus;               // nullopt: unknown (or an older agent)
  std::vector<MemberBusFacts> member_buses;  // each member's, for md/LVM/dm
};

// ZFS's own cache (the ARC), for a disk_dir on ZFS.
struct ZfsFacts {
  std::optional<uint64_t> arc_c_max_bytes;  // its ceiling
  std::optional<uint64_t> arc_size_bytes;   // what it holds now
};

// ram_dir or disk_dir.
struct DirFacts {
  std::string path;
  std::optional<std::string> fs_type;  // "tmpfs", "ext4", "zfs"
  std::optional<uint64_t> total_bytes, avail_bytes;
  // disk_dir only: the mount, the block device under it and ZFS's ARC (each
  // nullopt when unknown or not so); a ram_dir leaves them out of its JSON.
  bool with_device = false;
  std::optional<std::string> mount_source;  // the dataset on ZFS
  std::optional<BlockDeviceFacts> device;
  std::optional<ZfsFacts> zfs;
};

// The Samba configuration the host's smbd runs with.
struct SambaFacts {
  int pid = 0;  // the running smbd (its process tree's root); 0: `samba`, the host's default
  std::string config_path;
  std::string error;     // it could not be read (then only config_path is set)
  std::string found_by;  // "plan", "running smbd (pid N)", "smbd -b", "default"
  std::string source;    // "testparm" | "file"
  std::string sha256;    // of the text, hex
  NamedValues global;    // its [global] parameters, lower-case names
  // Each share section (lower-case name): the parameters of the verdict's
  // and the knob table's it sets apart from [global], and its path.
  std::map<std::string, NamedValues> shares;
};

// A file server's settings from the config it was started with
// (probe/server_configs.h): vsftpd, proftpd, NFS-Ganesha, the kernel's NFS
// exports.
struct ServerConfigFacts {
  std::string server;       // "vsftpd" | "proftpd" | "nfs-ganesha" | "knfsd"
  int pid = 0;              // the running instance (its process tree's root); 0: knfsd
  std::string config_path;  // "/etc/vsftpd.conf"; knfsd: "/proc/fs/nfs/exports"
  std::string found_by;     // "running vsftpd (pid N)", "kernel"
  std::string error;        // the config could not be read (no settings then)
  NamedValues settings;     // lower-case names: "local_max_rate", "maxwrite", "sync"
};

// A fact measured with a lesser method for want of a privilege.
struct DegradedFact {
  std::string fact;       // stable name: "process_netns", "disk_cache_bypass", ...
  std::string method;     // what was done instead
  std::string privilege;  // what would restore the full method
};

struct AgentFacts {
  std::string role;  // "full" | "server"
  std::string arch;  // "x86_64"
};

struct Facts {
  std::optional<std::string> hostname, os, kernel, arch, cpu_model;
  std::optional<int64_t> cpu_cores;  // online
  // The running kernel's random id: two ends with the same one share a machine.
  std::optional<std::string> boot_id;
  std::optional<uint64_t> memory_bytes;
  std::optional<NetFacts> net;  // nullopt: not asked (no peer address)
  std::optional<DirFacts> ram_dir, disk_dir;
  NamedValues tcp_sysctls;  // "net.ipv4.tcp_rmem" -> "4096 131072 6291456"
  std::optional<SambaFacts> samba;
  // Each running smbd's (several on one host: each with its pid and config);
  // the verdict reads the one serving a sample (CpuSummary::server_pid).
  std::vector<SambaFacts> samba_instances;
  std::vector<ServerConfigFacts> file_servers;  // the server end's; [] none
  std::optional<uint64_t> euid;                 // the agent's effective uid (0: root)
  std::vector<DegradedFact> degraded;
  // Added by the orchestrator, not the agent: which agent served the end and
  // the machine it ran on (from its hello), and the agent's peak memory after
  // the run, KiB.
  std::optional<AgentFacts> agent;
  std::optional<uint64_t> agent_max_rss_kb;
};

}  // namespace cp::msg
