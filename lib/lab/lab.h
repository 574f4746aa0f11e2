// The built-in two-host lab (`chokepoint lab up|status|down`): two "hosts" on
// this machine, each a network namespace with its own mount and UTS
// namespace, joined by a shaped veth pair (the data link) and each running an
// sshd reachable from the root namespace over its own management veth, so
// `chokepoint diagnose --lab` SSHes into them as into real machines.
//
// The server host also runs an FTP server (vsftpd) and Samba's smbd on its
// data address, each exporting a tmpfs share and a disk share to one lab
// user, so `diagnose` on the lab measures the protocols out of the box; and
// `lab throttle` starves smbd of CPU or slows the server's disk (cgroups)
// for tests and experiments.
//
// Everything the lab makes is recorded in <dir>/lab.json at `up` and removed
// from that record at `down`. All of it needs root.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cp::lab {

struct LabOptions {
  uint64_t rate_bits = 0;  // the hosts' own data interfaces (tbf on each), bit/s; 0: unshaped
  int mtu = 1500;          // both hosts' data interface MTU, bytes
  int server_mtu = 0;      // the server's own, when set (0: mtu)
  int client_mtu = 0;      // the client's own, when set (0: mtu)
  // On the path between the hosts, i.e. on the switch's ports (both
  // directions), the hosts' interfaces staying unshaped:
  uint64_t path_rate_bits = 0;       // tbf on both switch ports, bit/s; 0: none
  double delay_s = 0;                // one-way delay each way, seconds (netem or the delay line)
  uint64_t disk_bytes = 3ull << 30;  // size of each host's ext4 image
  uint64_t ram_bytes = 2ull << 30;   // size of each host's tmpfs
  // Extra smb.conf [global] lines, "name = value", in order (lab up --samba).
  std::vector<std::string> samba_params;
  // Extra vsftpd.conf lines, "name=value", appended in order (lab up --vsftpd:
  // a later line wins in vsftpd), and extra lines in each of Ganesha's EXPORT
  // blocks, "Name = value" (lab up --ganesha: MaxRead, MaxWrite ...).
  std::vector<std::string> vsftpd_params;
  std::vector<std::string> ganesha_params;
  // The server host's kind (lab up --server-profile): "" a Debian host; "nas":
  // its SSH sessions run chrooted in a root filesystem holding nothing but
  // BusyBox (and what the orchestrator uploads), like a NAS appliance, with
  // the ram and disk dirs at their usual paths (nas_root.h).
  std::string server_profile;
  // Whom the server's SSH sessions log in as (lab up --server-login): "" or
  // "root"; "user": the lab's share user (cplab[-N]), who owns the shares but
  // has no privilege, like a NAS's admin account without root. Its home is
  // <dir>/server/home (server_home()); `diagnose --lab` then works in the shares.
  std::string server_login;
};

// One share the server host exports: each protocol serves each medium.
struct LabShare {
  std::string protocol;    // "ftp" | "smb" | "nfs"
  std::string medium;      // "ram" (tmpfs: stage 3) | "disk" (ext4 on loop: stage 4)
  std::string url;         // "ftp://198.18.0.1/ram", "smb://198.18.0.1/disk"
  std::string server_dir;  // the directory behind it on the server: "<dir>/server/ram/share"
};

struct LabHost {
  std::string role;          // "server" | "client"
  std::string netns;         // "cp-server"
  std::string alias;         // Host entry in ssh_config: "cp-server"
  std::string hostname;      // UTS hostname inside: "cp-server"
  std::string mgmt_address;  // sshd listens here: "198.18.1.2"
  std::string data_address;  // on the shaped link: "198.18.0.1"
  std::string data_ifname;   // "cpd-s"
  std::string ram_dir;       // tmpfs inside the host (an empty dir outside)
  std::string disk_dir;      // ext4 on loop_device inside the host
  std::string loop_device;   // "/dev/loop3"; empty until attached
  int sshd_pid = 0;          // the host's holder process; 0 until started
  // Server host only (empty/0 on the client):
  std::vector<LabShare> shares;  // ftp and smb, ram and disk
  int ftpd_pid = 0;              // vsftpd's listener; 0 when not started
  int smbd_pid = 0;              // smbd's parent; 0 when not started
  int nfsd_pid = 0;              // ganesha.nfsd (lab/ganesha.h); 0 when not started
  int rpcbind_pid = 0;           // rpcbind for NFSv3 inside the host; 0 when none
};

// What `lab throttle` set; all zero: nothing throttled.
struct LabThrottle {
  double smbd_cpu = 0;          // smbd's CPU quota, fraction of one core (0.2 = 20 %)
  double nfsd_cpu = 0;          // ganesha.nfsd's CPU quota, fraction of one core
  uint64_t disk_read_bps = 0;   // server disk read limit, bytes/s
  uint64_t disk_write_bps = 0;  // server disk write limit, bytes/s
  // The client end (a weak client is a common cause): a CPU quota on every
  // process of the client host (its sshd, so the agents its sessions start),
  // and limits on the client's loop disk.
  double client_cpu = 0;               // fraction of one core
  uint64_t client_disk_read_bps = 0;   // client disk read limit, bytes/s
  uint64_t client_disk_write_bps = 0;  // client disk write limit, bytes/s
  std::vector<std::string> cgroups;    // cgroup dirs made for them, removed by clear and down
};

// The switch between the hosts' data ends: a network namespace whose two
// ports (veth peers of the hosts' data interfaces) are bridged, or, when
// the delay line runs, joined by it instead. Rate and delay sit on its ports.
struct LabSwitch {
  std::string netns;       // "cp-switch[-N]"; empty: a lab from before the switch
  std::string delay_mode;  // "" (no delay), "netem" or "delay-line"
  int delay_line_pid = 0;  // the delay line's process; 0 when none
};

struct LabState {
  int instance = 0;         // 0: the user's lab; 1..99: labs beside it (tests)
  std::string dir;          // absolute lab dir
  std::string ssh_config;   // <dir>/ssh_config: `ssh -F` it
  std::string identity;     // <dir>/id_ed25519: the key both hosts accept for root
  std::string known_hosts;  // <dir>/known_hosts: both hosts' keys
  LabHost server, client;
  LabSwitch sw;
  LabOptions options;
  // The login both servers accept for every share (a system user).
  std::string share_user;           // "cplab"
  std::string share_password_file;  // "<dir>/share_password": the password on its first line (0600)
  bool share_user_created = false;  // `up` created the user, so `down` deletes it
  LabThrottle throttle;
};

// Several labs can run side by side, each an instance with its own names,
// addresses, dir, lock, share user and cgroups (layout.h: InstanceNames).
// Instance 0 is the user's lab; tests use their own (CHOKEPOINT_TEST_LAB_INSTANCE).
inline constexpr const char* kInstanceEnv = "CHOKEPOINT_LAB_INSTANCE";
// $CHOKEPOINT_LAB_INSTANCE when set and non-empty, else 0. Throws
// Error(kConfig) when it is not a number from 0 to 99.
int default_instance();
// $CHOKEPOINT_LAB_DIR when set and non-empty, else the instance's own dir
// (/var/lib/chokepoint-lab for 0, /var/lib/chokepoint-lab-N for N).
std::string default_dir(int instance);
std::string default_dir();  // default_dir(default_instance())
// The instance tests bring up for themselves, beside a user's lab (which they
// never use, reshape or take down): $CHOKEPOINT_TEST_LAB_INSTANCE, else 9.
// Throws Error(kConfig) when it is 0 or not an instance number.
inline constexpr const char* kTestInstanceEnv = "CHOKEPOINT_TEST_LAB_INSTANCE";
inline constexpr int kDefaultTestInstance = 9;
int test_instance();

// The server's SSH login is the unprivileged share user (LabOptions::server_login).
bool server_login_is_user(const LabState& state);
// <dir>/server/home: the share user's home (its agent cache) when it logs in.
std::string server_home(const LabState& state);
// The directories `diagnose --lab` measures on `host` ({ram, disk}): the
// host's tmpfs and ext4, or, for an unprivileged server login, the shares on
// them (the directories that user may write).
std::pair<std::string, std::string> diagnosis_dirs(const LabState& state, const LabHost& host);

// Brings lab `instance` up in `dir` ("": default_dir(instance)), or, when a
// healthy lab is already up there, re-applies rate/mtu/delay in place without
// restarting the hosts (disk and ram sizes then stay as they are). On any
// failure it removes what it made and rethrows. Throws Error(kUnsupported)
// when not root, or for a delay on a kernel without netem (before changing
// anything); Error(kConfig) when `dir` holds another instance's lab.
LabState up(const LabOptions& opts, int instance, const std::string& dir = "");
inline LabState up(const LabOptions& opts) { return up(opts, default_instance()); }

// Removes everything lab `instance` in `dir` ("": its default dir) made, from
// its lab.json, and the dir. Idempotent; also cleans up after a partial `up`.
// Never touches another instance: Error(kConfig) when `dir` holds another's.
void down(int instance, const std::string& dir = "");
inline void down() { down(default_instance()); }

// The recorded state; nullopt when there is no lab in `dir`. Throws
// Error(kConfig) when lab.json is unreadable.
std::optional<LabState> load(const std::string& dir = default_dir());

// True when the namespaces exist and both sshds are alive in them; else
// false with the reason in *why (when why is not null): the lab must be
// rebuilt. The FTP and SMB servers and the delay line are not part of it
// (`up` restarts them when they died); check_health covers everything.
bool healthy(const LabState& state, std::string* why);

// Every part of a running lab: both hosts' namespaces and sshds, the switch's
// namespace, vsftpd and smbd, and the delay line when the lab runs one.
struct LabHealth {
  bool healthy = false;
  // What is down, as stable names: "server-netns", "client-netns",
  // "switch-netns", "server-sshd", "client-sshd", "vsftpd", "smbd", "nfs-ganesha",
  // "delay-line".
  std::vector<std::string> down;
  std::string why;  // one sentence per part that is down, "; "-joined
};
LabHealth check_health(const LabState& state);

// What `lab throttle` asks for; unset fields keep their current setting.
struct ThrottleRequest {
  std::optional<double> smbd_cpu;                 // fraction of one core; 0 removes the quota
  std::optional<double> nfsd_cpu;                 // ganesha.nfsd's, likewise
  std::optional<uint64_t> disk_read_bps;          // bytes/s; 0 removes the limit
  std::optional<uint64_t> disk_write_bps;         // bytes/s; 0 removes the limit
  std::optional<double> client_cpu;               // the client host's, fraction of one core
  std::optional<uint64_t> client_disk_read_bps;   // client disk, bytes/s; 0 removes it
  std::optional<uint64_t> client_disk_write_bps;  // likewise
  bool clear = false;                             // remove every throttle first
  std::optional<int> instance;                    // `lab throttle --instance N` (the CLI's only)
};

// Applies `req` to the running lab in `dir` with cgroups: smbd's processes
// (and the children they fork later) get a CPU quota (v1 cpu.cfs_quota_us,
// v2 cpu.max); the server host's processes (sshd and its sessions, agents,
// vsftpd, smbd) get read/write limits on the server's loop device (v1
// blkio.throttle.*_bps_device, v2 io.max); the client host's processes (its
// sshd, so every session and agent it starts later) a CPU quota and limits
// on the client's loop device. Records the result in lab.json.
// Throws Error(kConfig) when no lab is up, kUnsupported when the kernel has
// no cgroup controller for it.
LabState throttle(const ThrottleRequest& req, int instance, const std::string& dir = "");
inline LabState throttle(const ThrottleRequest& req) { return throttle(req, default_instance()); }

}  // namespace cp::lab
