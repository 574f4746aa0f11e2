// Applying knobs on an endpoint, on the agent's side: the exact actions a
// knob's row turns into for this host (the disk under a directory, this
// smbd's smb.conf), run directly or, without root, through `sudo -n`. The
// journal that makes every change revertible is tune_agent/journal.h.
#pragma once

#include <string>
#include <vector>

#include "tune_agent/knobs.h"

namespace cp::tune {

// One step on the host, shown by --dry-run exactly as it is run.
struct Action {
  std::string kind;               // "run" | "write" | "remove"
  std::vector<std::string> argv;  // run
  std::string path;               // write, remove
  std::string content;            // write: the file's whole new content
  std::string note;               // write: what changes, when the content is long
  // Run through `sudo -n` (the agent is not root and a sudo rule allows it):
  // run as `sudo -n ARGV`, write as `sudo -n tee PATH`, remove as `sudo -n rm -f PATH`.
  bool sudo = false;
  std::string display() const;  // "blockdev --setra 256 /dev/loop3", "write /x (3 lines)"
};

// Where a knob applies on this host.
struct Where {
  std::string disk_dir;      // disk knobs: the directory whose disk is meant
  std::string samba_conf;    // Samba knobs: smb.conf; "" = the one the running smbd uses
  std::string data_address;  // MTU: the server's data address (its own, or the peer's)
  bool console = false;      // MTU: the user has a console; the SSH interface may change
  std::string afp_conf;      // netatalk knobs: afp.conf; "" = the usual places
  std::string afp_restart;   // netatalk knobs: shell command restarting afpd; "" = systemctl
};

// A knob resolved on this host for one value: what it changes, its current
// value, and the actions that set `value` and that restore the current one.
struct Resolved {
  std::string target;    // "/dev/loop3", "/etc/samba/smb.conf", "net.ipv4.tcp_rmem"
  std::string original;  // the value now, as the knob writes it
  std::vector<Action> apply;
  std::vector<Action> revert;
  // The change may cut this host's SSH connection (MTU of the interface it
  // uses): applied only with Where::console, under a revert watchdog.
  bool cuts_ssh = false;
};

// `ip -o addr show to ADDR` / `ip -o route get ADDR` / `ip -o link show`
// output -> the interface name ("cpd-s"; "" when none), its "dev", its MTU (0).
std::string parse_addr_ifname(const std::string& ip_o_addr);
std::string parse_route_dev(const std::string& ip_o_route);
int parse_link_mtu(const std::string& ip_o_link);
// The local address of this host's SSH connection from $SSH_CONNECTION
// ("client_ip client_port server_ip server_port"); "" when not over SSH.
std::string ssh_local_address(const char* ssh_connection);

// Reads the current value and builds the actions. Throws Error(kUnsupported)
// when the knob cannot apply here (no block device under the directory, a
// loop disk for write_cache, no smbd) with the reason and what to do.
Resolved resolve(const Knob& knob, const std::string& value, const Where& where);

// Runs actions in order; throws Error(kIo) naming the knob and the failing
// command. Without root, actions marked sudo run through `sudo -n`; when no
// sudo rule allows one, Error(kUnsupported) naming the knob, the command and
// what to grant (root, or the sudoers line), before anything runs.
void run_actions(const Knob& knob, const std::vector<Action>& actions);

// Without root: Error(kUnsupported) as above unless `sudo -n` may run every
// action. Nothing for root or a knob that needs no privilege.
void check_privilege(const Knob& knob, const std::vector<Action>& actions);

// The sudoers line that lets `user` run exactly `actions` through `sudo -n`
// ("cp ALL=(root) NOPASSWD: /usr/sbin/blockdev --setra 2048 /dev/loop3,
// /usr/bin/tee /sys/..."): programs by full path with their whole argument
// list (sudoers' ',', ':', '=', '\\' escaped), tee and rm with their file.
std::string sudoers_line(const std::string& user, const std::vector<Action>& actions);

// The hint of a refused knob: root, the wrapper and its one rule, or the
// exact commands, each with what it grants.
std::string sudo_advice(const std::string& user, const std::vector<Action>& actions);

// The operation of scripts/chokepoint-knob that does `a` ({"setra", "2048",
// "/dev/loop3"}, {"sysctl", "net.ipv4.tcp_rmem", "4096 131072 6291456"});
// empty for an action it has none for (config-file rewrites, removes).
std::vector<std::string> wrapper_operation(const Action& a);

// The chokepoint drop-in's text with `param = value` set (replaced when
// there, added otherwise), keeping the other parameters it holds; `old` is
// the drop-in's current text ("" when there is none).
std::string merge_samba_dropin(const std::string& old, const std::string& param,
                               const std::string& value);

// afp.conf text with `param = value` in [Global] (replaced when there,
// else added as the section's last line; a [Global] is added at the top when
// there is none). `current` receives the value it had ("" when unset).
std::string set_afp_param(const std::string& conf, const std::string& param,
                          const std::string& value, std::string* current);

// smb.conf text with `include = DROPIN` as the last line of [global] (a
// [global] header is added at the top when there is none); unchanged when
// that include is already there.
std::string add_samba_include(const std::string& conf, const std::string& dropin);

}  // namespace cp::tune
