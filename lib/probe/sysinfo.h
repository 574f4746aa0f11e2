// Facts about a host, stored with each run so a verdict can be read against
// the hardware and configuration it was measured on. They are built here as
// the typed message core/facts_message.h; the probing itself is in linux/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts_message.h"
#include "core/messages.h"
#include "probe/platform.h"

namespace cp::probe {

// What to describe: ram_dir / disk_dir (or empty), the peer whose route to
// find (or empty), the smb.conf of the Samba server (empty: the one
// samba_config_path finds). The agent's request as it arrives.
using msg::FactsRequest;

// The host's facts (core/facts_message.h): hostname, OS, kernel, CPU, memory,
// boot id; `net` the interface that reaches req.peer_address (unset when none
// is given); `ram_dir` / `disk_dir` (unset when not asked for; the disk_dir with
// its mount source, block device and ZFS ARC); TCP sysctls, Samba config, the
// agent's euid and what it measured with a lesser method for want of a
// privilege. What the host cannot tell is unset, never an exception; only a
// missing ram_dir/disk_dir directory throws
// Error(kConfig, "ram_dir '/x' does not exist", hint).
msg::Facts collect_facts(const FactsRequest& req);

// The facts of os::degraded_facts, in order.
std::vector<msg::DegradedFact> degraded_facts(const std::vector<os::DegradedFact>& facts);

// The ARC's ceiling and size (each unset when arcstats is unreadable) for a ZFS
// filesystem (`fs_type` "zfs"), from <proc_root>/spl/kstat/zfs/arcstats;
// nullopt for any other filesystem.
std::optional<msg::ZfsFacts> zfs_facts(const std::string& fs_type,
                                       const std::string& proc_root = "/proc");

// The TCP tunables a verdict or a comparison cites, read under `proc_root`, in
// this order: net.ipv4.tcp_rmem ("4096 131072 6291456"), net.ipv4.tcp_wmem,
// net.core.rmem_max, net.core.wmem_max, net.ipv4.tcp_congestion_control,
// net.ipv4.tcp_window_scaling, net.ipv4.tcp_mtu_probing: each the file's text
// with runs of whitespace made one space, unset when unreadable.
msg::NamedValues tcp_sysctl_facts(const std::string& proc_root = "/proc");

// The effective Samba configuration, so runs can be compared: its path, how it
// was found, "source" ("testparm" | "file"), the text's sha256 and its [global]
// parameters. The text is `testparm -s --suppress-prompt PATH` when testparm
// exists (includes resolved, defaults omitted; then samba_parameters_asked()
// are added with their effective values from `testparm -s -v`), else the file. `conf_path`
// empty means the one samba_config_path finds; nullopt when that does not
// exist. A given path that cannot be read gives {config_path, error}.
std::optional<msg::SambaFacts> samba_facts(const std::string& conf_path);

// Each running smbd on this host (is_real_smbd; the root of each process
// tree, those in this network namespace first), with its pid and the config
// it was started with (its command line's, else compiled_samba_config's),
// read as samba_facts reads one: several instances (a NAS app's smbd beside
// the system's) each have their own. Reads under proc_root.
std::vector<msg::SambaFacts> samba_instances(const std::string& proc_root = "/proc");

// The config smbd uses when its command line names none: `smbd -b`'s
// CONFIGFILE (`how` = "smbd -b"), else /etc/samba/smb.conf ("default").
std::string compiled_samba_config(std::string* how);

// The config file a running smbd was started with, from its command line
// (NUL-separated, as /proc/PID/cmdline): `-s FILE`, `-sFILE`, `--configfile=FILE`
// or `--configfile FILE`; "" when it names none (it uses its built-in default).
std::string smbd_config_from_cmdline(std::string_view cmdline);

// The smbd binaries installed on this host, resolved (realpath): smbd on
// PATH, /usr/sbin/smbd, /usr/local/samba/sbin/smbd, /usr/local/sbin/smbd;
// each root's and writable by root only.
std::vector<std::string> installed_smbd_paths();

// Process `pid` under proc_root is this host's Samba: its real uid is 0
// (status) and its exe resolves to one of `smbd_paths` (a root process
// whose exe this process may not read counts: only root starts one). Any
// other process named smbd (a user's own `smbd -s ~/x/smb.conf`) is not.
bool is_real_smbd(const std::string& proc_root, int pid,
                  const std::vector<std::string>& smbd_paths);

// Which smb.conf describes the Samba server here, and how that was decided
// (`how`: "plan", "running smbd (pid N)", "smbd -b", "default"): the plan's
// path first; else the one the running smbd uses (a NAS keeps it elsewhere, a
// lab passes -s; only an smbd is_real_smbd accepts), preferring one in this network namespace; else
// smbd's compiled-in CONFIGFILE; else /etc/samba/smb.conf. Reads under proc_root. `served_here`
// (when given): the plan names it, or an smbd runs in this network namespace (or in one this
// process may not read: without root, assumed so).
std::string samba_config_path(const std::string& planned, std::string* how,
                              const std::string& proc_root = "/proc", bool* served_here = nullptr);

// The [global] section of smb.conf or testparm text, in the text's order:
// parameter names lower-cased with inner whitespace made one space, values
// trimmed; '#'/';' comments and '\' continuation lines handled; a later line
// sets the value where the first stood. Empty when there is no [global] section.
msg::NamedValues parse_samba_globals(std::string_view text);

// Each share section of smb.conf or testparm text (lower-cased names, in a
// map), with the parameters of samba_parameters_asked() and `path` it sets
// (as parse_samba_globals reads them): what a share sets apart from
// [global], which it inherits otherwise (`testparm -s -v` prints a share's
// parameters only where they differ). [global] and [printers] are left out.
std::map<std::string, msg::NamedValues> parse_samba_shares(std::string_view text);

// The Samba parameters whose effective value samba_facts records in `global`
// whether or not the config sets them (testparm -s leaves out defaults, and a
// synonym such as `smb encrypt` or a parameter in an included file shows
// under no canonical line): those the verdict or the knob table reads.
const std::vector<std::string>& samba_parameters_asked();

// Sets in `global` the value `verbose` (the [global] of `testparm -s -v`:
// every parameter under its canonical name) holds for each of
// samba_parameters_asked(), appending those `global` lacks.
void merge_samba_effective(msg::NamedValues& global, const msg::NamedValues& verbose);

// SHA-256 of `text` as 64 hex digits.
std::string sha256_hex(std::string_view text);

// The block device major:minor (a file's st_dev) as sysfs under `sys_root`
// describes it (name "sda1", disk "sda": itself unless a partition, read-ahead,
// active scheduler, rotational, a loop device's backing file, device-mapper/md
// members); nullopt when sysfs knows no such block device (tmpfs, NFS, btrfs
// subvolumes: anonymous devices).
std::optional<msg::BlockDeviceFacts> block_device_facts(unsigned major, unsigned minor,
                                                        const std::string& sys_root = "/sys");

// block_device_facts for the filesystem holding directory `path` (its st_dev,
// else the block device its mount names: btrfs subvolumes); nullopt when none
// (tmpfs, NFS) or `path` cannot be read.
std::optional<msg::BlockDeviceFacts> dir_device_facts(const std::string& path);

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
