// The lab's fixed layout and the text it writes: names, addresses, paths,
// tc/ip argument lists, sshd_config, ssh_config, known_hosts and lab.json
// (layout.cc: names, files, plan, validation; shaping.cc, host_scripts.cc,
// config_text.cc, state_json.cc).
// Pure functions (no system calls), so all of it is unit-tested.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lab/lab.h"

namespace cp::lab {

inline constexpr const char* kDefaultDir = "/var/lib/chokepoint-lab";
inline constexpr const char* kDirEnv = "CHOKEPOINT_LAB_DIR";
inline constexpr const char* kStateFile = "lab.json";
// Root-namespace end of the management links: 198.18.1.1 / 198.18.2.1.
inline constexpr int kMgmtPrefix = 30;
inline constexpr int kDataPrefix = 24;
// Instances 1..kMaxInstance beside instance 0 (the user's lab).
inline constexpr int kMaxInstance = 99;
// Linux interface names hold at most 15 characters (IFNAMSIZ 16 with the NUL).
inline constexpr size_t kMaxIfnameLength = 15;
// The benchmarking range the lab's addresses come from (RFC 2544).
inline constexpr const char* kLabRange = "198.18.0.0/15";
inline constexpr int kMinMtu = 68;                      // IPv4 minimum
inline constexpr int kMaxMtu = 65535;                   // veth maximum
inline constexpr uint64_t kMinDiskBytes = 64ull << 20;  // ext4 with a journal
inline constexpr uint64_t kMinRamBytes = 1ull << 20;
// tbf's queue bound, as latency at the configured rate.
inline constexpr const char* kTbfLatency = "50ms";

// The FTP and SMB servers on the server host's data address.
inline constexpr const char* kShareUser = "cplab";
// The GECOS comment that marks the share user as the lab's own.
inline constexpr const char* kShareUserComment = "chokepoint lab share user";
inline constexpr int kFtpPort = 21;
inline constexpr int kSmbPort = 445;
// vsftpd's passive data ports.
inline constexpr int kPasvMinPort = 30000;
inline constexpr int kPasvMaxPort = 30099;
// Besides the shares in LabHost::shares, both servers export a read-only
// share of this name (ftp://198.18.0.1/ro, smb://198.18.0.1/ro: an empty
// root-owned directory on the server's tmpfs), for tests of refused writes.
inline constexpr const char* kReadOnlyShare = "ro";

// Everything that keeps one lab instance apart from another on the same
// machine. Instance 0 has the lab's historical names (cp-server, cpm-s,
// 198.18.0.0/24, /var/lib/chokepoint-lab, user cplab); instance N (1..99)
// suffixes "-N" to every name in the root namespace, system-wide or on disk,
// and takes its own subnets: management 198.18.(100+N).0/30 (server) and
// 198.18.(100+N).4/30 (client), data 198.19.N.0/24. Interface names inside a
// lab's own namespaces (cpd-s, cpm) need no suffix: no other lab sees them.
struct InstanceNames {
  int instance = 0;
  std::string suffix;        // "" or "-N"
  std::string dir;           // default lab dir: /var/lib/chokepoint-lab[-N]
  std::string lock_path;     // /run/chokepoint-lab[-N].lock, held (flock) by up/down/throttle
  std::string server_netns;  // cp-server[-N] (also its alias and hostname)
  std::string client_netns;  // cp-client[-N]
  std::string switch_netns;  // cp-switch[-N]: the namespace between the hosts' data ends
  std::string server_mgmt_root_ifname;  // cpm-s[-N], in the root namespace
  std::string client_mgmt_root_ifname;  // cpm-c[-N]
  std::string server_mgmt_subnet;       // 198.18.1.0/30 or 198.18.(100+N).0/30
  std::string client_mgmt_subnet;       // 198.18.2.0/30 or 198.18.(100+N).4/30
  std::string server_mgmt_root_address, server_mgmt_address;  // .1 and .2 of its /30
  std::string client_mgmt_root_address, client_mgmt_address;
  std::string data_subnet;                               // 198.18.0.0/24 or 198.19.N.0/24
  std::string server_data_address, client_data_address;  // .1 and .2 of it
  std::string share_user;   // cplab[-N]: each instance has its own share user
  std::string cgroup_name;  // chokepoint-lab[-N]: base name of its throttle cgroups
};
// Aborts (CHECK) outside 0..kMaxInstance; parse_instance guards user input.
InstanceNames instance_names(int instance);
// "9" -> 9; Error(kConfig) naming `what` when not a whole number in 0..kMaxInstance.
int parse_instance(std::string_view text, const std::string& what);

// The switch's ports (inside its namespace, peers of the hosts' cpd-s and
// cpd-c) and the bridge that joins them when no delay line does.
inline constexpr const char* kSwitchServerPort = "sw-s";  // toward the server
inline constexpr const char* kSwitchClientPort = "sw-c";  // toward the client
inline constexpr const char* kSwitchBridge = "br0";
inline constexpr const char* kDelayNetem = "netem";
inline constexpr const char* kDelayLine = "delay-line";

// The MTU of a host's data interface: its own option, else --mtu.
int host_mtu(const LabOptions& o, const std::string& role);
// The switch ports': the larger host's, so a mismatch shows at the smaller host.
int switch_mtu(const LabOptions& o);

// The switch's files: <lab>/switch/delay-line.{pid,stats.json,log}.
struct SwitchFiles {
  std::string dir;
  std::string delay_line_pid;
  std::string delay_line_stats;
  std::string delay_line_log;
};
SwitchFiles switch_files(const LabState& state);

// Paths and names derived from a host; not stored in lab.json.
struct HostFiles {
  std::string dir;                // <lab>/server
  std::string disk_image;         // <lab>/server/disk.img (sparse)
  std::string sshd_config;        // <lab>/server/sshd_config
  std::string host_key;           // <lab>/server/ssh_host_ed25519_key (+ .pub)
  std::string sshd_log;           // <lab>/server/sshd.log
  std::string pid_file;           // <lab>/server/sshd.pid
  std::string mgmt_root_ifname;   // "cpm-s": management veth end in the root namespace
  std::string mgmt_root_address;  // "198.18.1.1"
  std::string mgmt_ifname;        // "cpm": its peer inside the host
};
HostFiles host_files(const LabState& state, const LabHost& host);

// The server host's FTP and SMB files; not stored in lab.json.
struct ServerFiles {
  std::string ram_share;    // <lab>/server/ram/share (inside the host's tmpfs)
  std::string disk_share;   // <lab>/server/disk/share (inside the host's ext4)
  std::string ro_share;     // <lab>/server/ram/ro
  std::string ftp_dir;      // <lab>/server/ftp
  std::string ftp_root;     // <lab>/server/ftp/root: the share user's home and FTP login
                            // dir, with links ram, disk and ro to the shares
  std::string ftp_empty;    // <lab>/server/ftp/empty: vsftpd's secure_chroot_dir
  std::string vsftpd_conf;  // <lab>/server/ftp/vsftpd.conf
  std::string vsftpd_log;   // <lab>/server/ftp/vsftpd.log: logins and transfers
  std::string vsftpd_out;   // <lab>/server/ftp/vsftpd.out: its stdout/stderr
  std::string vsftpd_pid;   // <lab>/server/ftp/vsftpd.pid
  std::string pam_file;     // <lab>/server/ftp/pam: bound over /etc/pam.d/vsftpd inside the host
  // vsftpd's self-signed TLS certificate (subject and IP SAN: the data address; clients
  // verify ftps:// against it with the share option ca_file=) and its key (0600).
  std::string ftps_cert;  // <lab>/server/ftp/ftps-cert.pem
  std::string ftps_key;   // <lab>/server/ftp/ftps-key.pem
  std::string samba_dir;  // <lab>/server/samba: all of smbd's state dirs below it
  std::string smb_conf;   // <lab>/server/samba/smb.conf
  std::string smbd_out;   // <lab>/server/samba/smbd.out
  std::string smbd_pid;   // <lab>/server/samba/smbd.pid
};
ServerFiles server_files(const LabState& state);
// smbd's state dirs (private, lock, state, cache, pid, ncalrpc), all under samba_dir.
std::vector<std::string> samba_dirs(const ServerFiles& f);

// The state a fresh lab instance in `dir` starts from: every name, address and
// path, with loop_device empty and sshd_pid 0. `dir` must be absolute.
LabState plan(const LabOptions& opts, const std::string& dir, int instance = 0);
// Adds the server's shares of `protocol`: <protocol>://<data address>/{ram,disk}.
void add_server_shares(LabState& state, const std::string& protocol);

// Throws Error(kConfig) naming the option when the lab cannot apply it.
void validate(const LabOptions& opts);
// Throws Error(kConfig) unless `line` is one smb.conf parameter "name = value"
// (one line, a name of letters, digits and spaces), optionally for one of the
// lab's shares: "[disk] name = value".
void validate_samba_param(const std::string& line);
// A --samba line's share section and parameter: "[disk] sync always = yes" is
// {"disk", "sync always = yes"}; a line without one is {"", line} ([global]).
std::pair<std::string, std::string> samba_param_section(const std::string& line);
// Throws Error(kConfig) unless `line` is one vsftpd.conf setting "name=value"
// (a name of lower-case letters, digits and '_', no space around '=', one line).
void validate_vsftpd_param(const std::string& line);
// Throws Error(kConfig) unless `line` is one ganesha.conf parameter "Name =
// value" (a name of letters, digits and '_'; a value without ';', '{', '}',
// '#' or a line break).
void validate_ganesha_param(const std::string& line);
// Throws Error(kConfig) when `dir` is not absolute, lies under /run or
// /dev/shm (hidden inside the hosts), or holds characters that the sshd and
// ssh config files would split or expand (space, quotes, %, ~ ...).
void validate_dir(const std::string& dir);

// tbf bucket in bytes for `rate_bits` (bit/s) at `mtu`: 1 ms of tokens (so a
// late timer or softirq does not lose rate; measured here: 1gbit and 5gbit
// reach 0.956 and 0.956 of nominal), and at least 4 frames (a bucket of one
// 9000-byte frame gave 0.82 at 1gbit).
uint64_t tbf_burst_bytes(uint64_t rate_bits, int mtu);
// netem queue bound in packets: twice what `delay_s` holds at `rate_bits`
// (or at 10 Gbit/s when unshaped), at least netem's default 1000.
uint64_t netem_limit_packets(uint64_t rate_bits, double delay_s, int mtu);

struct Command {
  std::vector<std::string> argv;
  bool may_fail = false;  // e.g. deleting a root qdisc that is not there
};
// ip/tc commands that set interface `dev` in `netns` to `mtu` and shape it,
// in order: tbf at rate_bits as root; or netem delay_s as root with tbf as
// its child when there is a delay; or no root qdisc when neither.
std::vector<Command> link_shaping_commands(const std::string& netns, const std::string& dev,
                                           int mtu, uint64_t rate_bits, double delay_s);
// A host's own data end: its MTU and --rate (tbf). The delay lives on the
// switch, except in a lab from before the switch, where netem sat here.
std::vector<Command> shaping_commands(const LabHost& host, const LabOptions& opts,
                                      bool with_delay = false);
// Builds the switch: IPv6 off inside it (no stray traffic of its own), the
// two hosts' data veths with their peers in it, and the bridge. The three
// namespaces exist already.
std::vector<Command> switch_create_commands(const LabState& state);
// Sets the switch's ports for `opts`: MTU switch_mtu(), tbf at path_rate_bits
// and, with `netem`, netem's delay on each (each port's egress is one
// direction); enslaved to the bridge unless `bridged` is false (the delay
// line joins them then); up.
std::vector<Command> switch_port_commands(const LabState& state, const LabOptions& opts,
                                          bool bridged, bool netem);
// Adds a netem qdisc in a throwaway network namespace: exit 0 when the kernel has netem.
std::vector<std::string> netem_probe_command();
// True when tc's stderr says the qdisc kind (netem) is not in the kernel.
bool says_qdisc_unknown(std::string_view tc_stderr);

// A mount each host makes so its agent can read processes' cgroup CPU quotas
// (`ip netns exec` gives the host a fresh /sys with an empty /sys/fs/cgroup):
// the root namespace's cgroup hierarchies, read-only, at the same places.
struct CgroupMount {
  std::string fstype;       // "tmpfs" (the dir holding v1 hierarchies), "cgroup", "cgroup2"
  std::string options;      // for mount -o: "ro,nosuid,nodev,noexec,cpu"
  std::string mount_point;  // "/sys/fs/cgroup/cpu"
};
inline constexpr const char* kCgroupDir = "/sys/fs/cgroup";
// From the root namespace's /proc/self/mountinfo: its cgroup and cgroup2 mounts
// at or under kCgroupDir, in mount order, with each hierarchy's own super
// options (v1: its controllers or name=; v2: nsdelegate and the like, which a
// mount without them would switch off machine-wide) but rw and release_agent.
// When kCgroupDir itself is no cgroup mount, a tmpfs goes there first and is
// made read-only last. Empty when there are no cgroups.
std::vector<CgroupMount> host_cgroup_mounts(std::string_view mountinfo);

// The fixed setup script each host's holder runs before exec'ing sshd, and
// its positional arguments ("$1".. "$7", then the cgroup mounts as
// fstype/options/mount point triples; never interpolated into the script).
// The cgroup mounts are best effort: a failure is logged and sshd starts.
extern const char* const kHostSetupScript;
std::vector<std::string> host_start_argv(const LabState& state, const LabHost& host,
                                         const std::vector<CgroupMount>& cgroups);
// For a host started before it mounted cgroups: the same mounts, made inside
// its running sshd's mount namespace (nsenter) unless kCgroupDir there already
// holds a mount. Best effort too.
extern const char* const kHostCgroupScript;
std::vector<std::string> host_cgroups_argv(const LabHost& host,
                                           const std::vector<CgroupMount>& cgroups);

std::string sshd_config_text(const LabState& state, const LabHost& host);

// vsftpd.conf: standalone on the data address, local users only (the share
// user), passive ports kPasvMinPort..kPasvMaxPort, no chroot, no seccomp
// sandbox (its filter refuses a syscall of this kernel's), Debian's isolate
// and isolate_network defaults kept, state in the lab dir.
std::string vsftpd_conf_text(const LabState& state);
// The PAM service vsftpd uses inside the server host: pam_unix alone (the
// share user's shell is nologin, which Debian's pam_shells would refuse).
extern const char* const kVsftpdPam;
// smb.conf: a standalone server on the data address only, SMB2 or later,
// every state dir in the lab dir, shares ram, disk and ro for the share user;
// options.samba_params at the end of [global], those given as "[share] name =
// value" at the end of that share's section.
std::string smb_conf_text(const LabState& state);

// The fixed script that lays out the share dirs and starts vsftpd and smbd
// inside the server host (nsenter into its sshd's mount, UTS and network
// namespaces), and its arguments.
extern const char* const kServerStartScript;
// `which`: "ftp smb", "ftp" or "smb".
std::vector<std::string> server_start_argv(const LabState& state, const std::string& which);
std::string ssh_config_text(const LabState& state);
// "198.18.1.2 ssh-ed25519 AAAA...\n" per host; keys as in a .pub file (comment dropped).
std::string known_hosts_text(const LabState& state, std::string_view server_pub,
                             std::string_view client_pub);

// lab.json. state_from_json throws Error(kConfig) naming `where` and the field.
std::string state_to_json(const LabState& state);
LabState state_from_json(std::string_view text, const std::string& where);

}  // namespace cp::lab
