#include "lab/lab.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "lab/delay_line.h"
#include "lab/ganesha.h"
#include "lab/layout.h"
#include "lab/nas_root.h"
#include "lab/servers.h"
#include "lab/sys.h"
#include "lab/throttle.h"

namespace cp::lab {
namespace {

namespace fs = std::filesystem;

// How long to wait for the lab lock, a host's sshd, and processes to exit (seconds).
constexpr double kLockWait = 120;
constexpr double kSshdStartWait = 20;
constexpr double kSshdGrace = 2;  // before "no process in the namespace" means it died
constexpr double kExitWait = 5;
constexpr double kLoopDetachWait = 5;

void require_root() {
  if (geteuid() != 0) {
    throw Error(ErrorKind::kUnsupported, "the lab needs root (network namespaces, loop devices)",
                "run as root, or point diagnose at real hosts");
  }
}

std::string normalize_dir(const std::string& dir) {
  if (dir.empty()) validate_dir(dir);  // throws with the hint
  std::string d = fs::absolute(fs::path(dir)).lexically_normal().string();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  validate_dir(d);
  return d;
}

std::string state_path(const std::string& dir) { return dir + "/" + kStateFile; }

void save(const LabState& s) { sys::write_file(state_path(s.dir), state_to_json(s), 0644); }

// Runs a command the lab needs; its failure is an Error(kIo) quoting stderr.
void run(const std::vector<std::string>& argv) { run_checked(argv); }

void run_all(const std::vector<Command>& cmds) {
  for (const Command& c : cmds) {
    if (c.may_fail) {
      run_command(c.argv);
    } else {
      run(c.argv);
    }
  }
}

// Whether the kernel has netem; else the delay line stands in for it.
bool have_netem() {
  RunResult r = run_command(netem_probe_command());
  if (r.exit_code == 0) return true;
  if (says_qdisc_unknown(r.err)) return false;
  throw Error(ErrorKind::kIo,
              fmt::format("cannot tell whether the kernel has netem: '{}' failed: {}",
                          shell_join(netem_probe_command()), r.err),
              "check that unshare and tc (iproute2) work as root");
}

// How `opts` delays the path here: "", "netem" or "delay-line".
std::string delay_mode_for(const LabOptions& opts) {
  if (opts.delay_s <= 0) return "";
  return have_netem() ? kDelayNetem : kDelayLine;
}

// Shapes the path for `opts`: the hosts' own ends (MTU, --rate), then the
// switch's ports (MTU, --path-rate, netem delay) and, for a delay without
// netem, the delay line between the ports. A running delay line is stopped
// first (by its pid) and started afresh with the new delay.
void apply_path(LabState& s, const LabOptions& opts, const std::string& mode) {
  if (s.sw.delay_line_pid > 0) {
    stop_delay_line(s.sw.delay_line_pid);
    s.sw.delay_line_pid = 0;
    save(s);
  }
  if (s.sw.netns.empty()) {
    // A lab from before the switch: its hosts' ends carry everything, as they did.
    for (const LabHost* h : {&s.server, &s.client}) {
      run_all(shaping_commands(*h, opts, /*with_delay=*/true));
    }
    s.sw.delay_mode = opts.delay_s > 0 ? kDelayNetem : "";
    save(s);
    return;
  }
  for (const LabHost* h : {&s.server, &s.client}) run_all(shaping_commands(*h, opts));
  const bool line = mode == kDelayLine;
  run_all(switch_port_commands(s, opts, /*bridged=*/!line, /*netem=*/mode == kDelayNetem));
  s.sw.delay_mode = mode;
  if (line) {
    const SwitchFiles f = switch_files(s);
    sys::make_dirs(f.dir, 0755);
    DelayLineConfig cfg;
    cfg.netns = s.sw.netns;
    cfg.port_a = kSwitchServerPort;
    cfg.port_b = kSwitchClientPort;
    cfg.delay_s = opts.delay_s;
    const uint64_t rates[] = {opts.rate_bits, opts.path_rate_bits};
    uint64_t rate = 0;
    for (uint64_t r : rates)
      if (r > 0 && (rate == 0 || r < rate)) rate = r;
    cfg.queue_bytes = delay_line_queue_bytes(rate, opts.delay_s);
    cfg.pid_file = f.delay_line_pid;
    cfg.stats_file = f.delay_line_stats;
    cfg.log_file = f.delay_line_log;
    s.sw.delay_line_pid = start_delay_line(cfg);
  }
  save(s);
}

// Refuses to build over things the lab did not make. Looks only at this
// instance's names and subnets: other instances may be up beside it.
void require_free(const std::string& dir, int instance) {
  const LabState p = plan(LabOptions{}, dir, instance);
  const InstanceNames n = instance_names(instance);
  const std::string down_cmd = instance == 0
                                   ? "chokepoint lab down"
                                   : fmt::format("chokepoint lab down --instance {}", instance);
  const std::string hint = fmt::format(
      "another lab instance {} may be up from another dir: take it down with "
      "`CHOKEPOINT_LAB_DIR=<its dir> {}`, or remove it by hand",
      instance, down_cmd);
  for (const std::string* ns : {&p.server.netns, &p.client.netns, &n.switch_netns}) {
    if (sys::netns_exists(*ns)) {
      throw Error(
          ErrorKind::kIo,
          fmt::format("network namespace {} already exists, and {} records no lab", *ns, dir),
          hint + fmt::format(" (ip netns del {})", *ns));
    }
  }
  for (const LabHost* h : {&p.server, &p.client}) {
    const HostFiles f = host_files(p, *h);
    if (sys::link_exists(f.mgmt_root_ifname)) {
      throw Error(ErrorKind::kIo,
                  fmt::format("network interface {} already exists, and {} records no lab",
                              f.mgmt_root_ifname, dir),
                  hint + fmt::format(" (ip link del {})", f.mgmt_root_ifname));
    }
  }
  for (const std::string* subnet : {&n.server_mgmt_subnet, &n.client_mgmt_subnet, &n.data_subnet}) {
    const std::string used = run_checked({"ip", "-4", "-o", "addr", "show", "to", *subnet});
    if (!used.empty()) {
      throw Error(
          ErrorKind::kIo,
          fmt::format("this machine already uses addresses in {}, which lab instance {} needs: {}",
                      *subnet, instance, used.substr(0, used.find('\n'))),
          "remove those addresses, use another instance (--instance N), or point diagnose at "
          "real hosts");
    }
  }
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{} exists and is not a lab dir (it has no {})", dir, kStateFile),
                fmt::format("set {} to a new or empty directory", kDirEnv));
  }
}

// A lab.json of another instance in `dir`: refuse, so one instance's command
// never acts on another's lab.
void require_instance(const LabState& s, int instance, const std::string& dir) {
  if (s.instance == instance) return;
  throw Error(ErrorKind::kConfig,
              fmt::format("{} holds lab instance {}, not instance {}", dir, s.instance, instance),
              fmt::format("use --instance {} (or {}={}), or another dir", s.instance, kInstanceEnv,
                          s.instance));
}

std::string resolve_dir(const std::string& dir, int instance) {
  return normalize_dir(dir.empty() ? default_dir(instance) : dir);
}

void keygen(const std::string& path, const std::string& comment) {
  run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path});
}

std::string read_required(const std::string& path) {
  std::optional<std::string> text = sys::read_file(path);
  if (!text) throw Error(ErrorKind::kIo, fmt::format("{} is missing", path));
  return *text;
}

void make_disk(LabState& s, LabHost& h) {
  const HostFiles f = host_files(s, h);
  // A sparse image: blocks are allocated as the host writes them.
  int fd = open(f.disk_image.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot create {}: {}", f.disk_image, errno_text(errno)));
  }
  const int rc = ftruncate(fd, static_cast<off_t>(s.options.disk_bytes));
  const int err = errno;
  close(fd);
  if (rc != 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot size {} to {} bytes: {}", f.disk_image,
                                            s.options.disk_bytes, errno_text(err)));
  }
  // Direct I/O on the backing file, so the root namespace's page cache does
  // not sit behind the host's disk and flatter it.
  std::string dev = run_checked({"losetup", "--find", "--show", "--direct-io=on", f.disk_image});
  while (!dev.empty() && (dev.back() == '\n' || dev.back() == ' ')) dev.pop_back();
  if (dev.rfind("/dev/loop", 0) != 0) {
    throw Error(ErrorKind::kIo, fmt::format("losetup printed '{}', not a loop device", dev));
  }
  h.loop_device = dev;
  save(s);
  // No lazy init: no background thread writing inode tables or the journal
  // while the probes measure the disk.
  run({"mkfs.ext4", "-q", "-F", "-m", "0", "-L", h.hostname, "-E",
       "lazy_itable_init=0,lazy_journal_init=0", dev});
}

void make_network(LabState& s, const std::string& delay_mode) {
  for (const std::string* ns : {&s.server.netns, &s.client.netns, &s.sw.netns}) {
    run({"ip", "netns", "add", *ns});
  }
  // The data path: each host's data end is a veth whose peer is a port of the switch.
  run_all(switch_create_commands(s));
  for (const LabHost* h : {&s.server, &s.client}) {
    const HostFiles f = host_files(s, *h);
    const std::string& ns = h->netns;
    run({"ip", "link", "add", f.mgmt_root_ifname, "type", "veth", "peer", "name", f.mgmt_ifname,
         "netns", ns});
    run({"ip", "addr", "add", fmt::format("{}/{}", f.mgmt_root_address, kMgmtPrefix), "dev",
         f.mgmt_root_ifname});
    run({"ip", "link", "set", "dev", f.mgmt_root_ifname, "up"});
    run({"ip", "-n", ns, "link", "set", "dev", "lo", "up"});
    run({"ip", "-n", ns, "addr", "add", fmt::format("{}/{}", h->mgmt_address, kMgmtPrefix), "dev",
         f.mgmt_ifname});
    run({"ip", "-n", ns, "link", "set", "dev", f.mgmt_ifname, "up"});
    run({"ip", "-n", ns, "addr", "add", fmt::format("{}/{}", h->data_address, kDataPrefix), "dev",
         h->data_ifname});
    run({"ip", "-n", ns, "link", "set", "dev", h->data_ifname, "up"});
  }
  apply_path(s, s.options, delay_mode);
}

[[noreturn]] void sshd_failed(const LabState& s, const LabHost& h, const std::string& what) {
  const HostFiles f = host_files(s, h);
  std::string log = sys::tail(f.sshd_log, 15);
  throw Error(ErrorKind::kIo,
              fmt::format("sshd of {} {}; its log {} says:\n{}", h.hostname, what, f.sshd_log,
                          log.empty() ? "(nothing)" : log),
              "fix what the log names, then `chokepoint lab up` again");
}

void wait_for_sshd(LabState& s, LabHost& h) {
  const HostFiles f = host_files(s, h);
  const double start = monotonic_seconds();
  while (!sys::ssh_banner(h.mgmt_address, 22, 0.5)) {
    const double waited = monotonic_seconds() - start;
    if (waited > kSshdGrace && sys::netns_pids(h.netns).empty()) {
      sshd_failed(s, h, "exited before it accepted connections");
    }
    if (waited > kSshdStartWait) {
      sshd_failed(s, h,
                  fmt::format("did not accept connections on {}:22 within {:.0f} s", h.mgmt_address,
                              kSshdStartWait));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // sshd writes its pid file before it accepts, so it is there by now.
  const std::string text = read_required(f.pid_file);
  const std::vector<pid_t> pids = sys::parse_pids(text);
  if (pids.size() != 1 || !sys::process_alive(pids[0]) ||
      !sys::process_in_netns(pids[0], h.netns)) {
    sshd_failed(s, h,
                fmt::format("left pid file {} saying '{}', not a live sshd in {}", f.pid_file, text,
                            h.netns));
  }
  h.sshd_pid = pids[0];
  save(s);
}

// The cgroup hierarchies the hosts mirror, from this (the root) namespace.
std::vector<CgroupMount> root_cgroup_mounts() {
  return host_cgroup_mounts(sys::read_file("/proc/self/mountinfo").value_or(""));
}

void create(LabState& s, const std::string& delay_mode) {
  sys::make_dirs(s.dir, 0755);
  save(s);  // from here on `down` finds and removes what follows
  for (const LabHost* h : {&s.server, &s.client}) {
    sys::make_dirs(h->ram_dir, 0755);
    sys::make_dirs(h->disk_dir, 0755);
  }
  keygen(s.identity, "chokepoint-lab");
  // 0644: sshd reads it as the user logging in, which may be the unprivileged
  // share user (--server-login user); it holds a public key only.
  sys::write_file(s.dir + "/authorized_keys", read_required(s.identity + ".pub"), 0644);
  // That user's home (its agent cache); owned by it once servers::start made it.
  if (server_login_is_user(s)) sys::make_dirs(server_home(s), 0700);
  for (const LabHost* h : {&s.server, &s.client}) {
    const HostFiles f = host_files(s, *h);
    keygen(f.host_key, h->hostname);
    sys::write_file(f.sshd_config, sshd_config_text(s, *h), 0644);
  }
  sys::write_file(s.known_hosts,
                  known_hosts_text(s, read_required(host_files(s, s.server).host_key + ".pub"),
                                   read_required(host_files(s, s.client).host_key + ".pub")),
                  0644);
  sys::write_file(s.ssh_config, ssh_config_text(s), 0644);
  if (s.options.server_profile == "nas") make_nas_root(s);
  make_disk(s, s.server);
  make_disk(s, s.client);
  make_network(s, delay_mode);
  // One after the other, so a failure never leaves a host half-started
  // outside its namespace where `down` cannot find it.
  const std::vector<CgroupMount> cgroups = root_cgroup_mounts();
  for (LabHost* h : {&s.server, &s.client}) {
    run(host_start_argv(s, *h, cgroups));
    wait_for_sshd(s, *h);
    if (h == &s.server && s.options.server_profile == "nas") run(nas_mount_argv(s));
  }
  servers::start(s, [&] { save(s); });
}

// --- down --------------------------------------------------------------------

// The recorded sshd, when it still runs this lab's config (its namespace may be gone).
bool is_lab_sshd(const LabState& s, const LabHost& h) {
  if (h.sshd_pid <= 0 || !sys::process_alive(h.sshd_pid)) return false;
  if (sys::process_comm(h.sshd_pid) != "sshd") return false;
  return sys::process_cmdline(h.sshd_pid).find(host_files(s, h).sshd_config) != std::string::npos;
}

void kill_processes(const LabState& s) {
  stop_delay_line(s.sw.delay_line_pid);
  std::vector<pid_t> left;
  for (int round = 0; round < 4; ++round) {
    std::set<pid_t> pids;
    for (const LabHost* h : {&s.server, &s.client}) {
      for (pid_t p : sys::netns_pids(h->netns)) pids.insert(p);
      if (is_lab_sshd(s, *h)) pids.insert(h->sshd_pid);
    }
    if (!s.sw.netns.empty()) {
      for (pid_t p : sys::netns_pids(s.sw.netns)) pids.insert(p);
    }
    pids.erase(getpid());
    left.clear();
    for (pid_t p : pids)
      if (sys::process_alive(p)) left.push_back(p);
    if (left.empty()) return;
    // TERM first so sshd and sessions end cleanly; then KILL.
    const int sig = round == 0 ? SIGTERM : SIGKILL;
    for (pid_t p : left) ::kill(p, sig);
    left = sys::wait_exit(left, kExitWait);
  }
  std::string list;
  for (pid_t p : left)
    list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", p, sys::process_comm(p));
  throw Error(ErrorKind::kIo, fmt::format("processes in the lab did not exit: {}", list),
              "see what they wait on with `ps -o pid,stat,wchan,cmd -p <pid>`, then run "
              "`chokepoint lab down` again");
}

void remove_links(const LabState& s) {
  for (const std::string* ns : {&s.server.netns, &s.client.netns, &s.sw.netns}) {
    if (!ns->empty() && sys::netns_exists(*ns)) run({"ip", "netns", "del", *ns});
  }
  // Deleting a namespace deletes its veths and their peers, but asynchronously.
  for (const LabHost* h : {&s.server, &s.client}) {
    const std::string ifname = host_files(s, *h).mgmt_root_ifname;
    if (sys::link_exists(ifname)) {
      RunResult r = run_command({"ip", "link", "del", "dev", ifname});
      if (r.exit_code != 0 && sys::link_exists(ifname)) {
        throw Error(ErrorKind::kIo, fmt::format("cannot delete {}: {}", ifname, r.err));
      }
    }
  }
}

void detach_loops(const LabState& s) {
  std::vector<std::string> problems;
  for (const LabHost* h : {&s.server, &s.client}) {
    const std::string image = host_files(s, *h).disk_image;
    std::set<std::string> devs;
    for (const std::string& d : sys::loop_devices_backed_by(image)) devs.insert(d);
    for (const std::string& dev : devs) {
      // On a device still in use the kernel sets autoclear instead: it
      // detaches when the last user (a dying host's mount) lets go.
      RunResult r = run_command({"losetup", "-d", dev});
      if (r.exit_code != 0 && !sys::loop_backing_file(dev).empty()) {
        problems.push_back(fmt::format("losetup -d {}: {}", dev, r.err));
      }
    }
    const double deadline = monotonic_seconds() + kLoopDetachWait;
    while (!sys::loop_devices_backed_by(image).empty() && monotonic_seconds() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (!problems.empty()) {
    std::string msg;
    for (const auto& p : problems) msg += (msg.empty() ? "" : "; ") + p;
    throw Error(ErrorKind::kIo, "cannot detach the lab's loop devices: " + msg,
                "see `losetup -a` and who holds them (`fuser -m <device>`)");
  }
}

// Removes everything `s` names, going on past failures; throws one Error
// listing them at the end.
void teardown(LabState s, const std::string& dir) {
  s.dir = dir;  // the files are where they are now
  for (const LabHost* h : {&s.server, &s.client}) {
    if (sys::netns_exists(h->netns) && sys::same_netns_as_self(h->netns)) {
      throw Error(ErrorKind::kUnsupported,
                  fmt::format("this process runs inside the lab host {}", h->netns),
                  "run `chokepoint lab down` from the machine itself, not over SSH into the lab");
    }
  }
  std::vector<std::string> problems;
  auto step = [&](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  };
  step([&] { servers::stop(s); });
  step([&] { kill_processes(s); });
  // After the processes: their cgroups are empty now.
  step([&] { remove_throttle_cgroups(s.throttle); });
  step([&] { servers::delete_user(s); });
  step([&] { remove_links(s); });
  step([&] { detach_loops(s); });
  // Keep the state while something is left, so a second `down` can finish.
  if (problems.empty()) step([&] { sys::remove_tree(dir); });
  if (!problems.empty()) {
    std::string msg;
    for (const auto& p : problems) msg += (msg.empty() ? "" : "; ") + p;
    throw Error(ErrorKind::kIo, "lab down left things behind: " + msg,
                "fix what it names and run `chokepoint lab down` again");
  }
}

std::optional<LabState> load_from(const std::string& dir) {
  const std::string path = state_path(dir);
  std::optional<std::string> text = sys::read_file(path);
  if (!text) return std::nullopt;
  return state_from_json(*text, path);
}

void down_locked(const std::string& dir, int instance) {
  if (!sys::exists(state_path(dir))) return;  // no lab here (or already down)
  LabState s;
  bool damaged = false;
  try {
    s = *load_from(dir);
  } catch (const Error&) {
    damaged = true;
  }
  if (damaged) {
    // A damaged lab.json still marks the dir as the lab's; the instance's names are fixed.
    s = plan(LabOptions{}, dir, instance);
  }
  require_instance(s, instance, dir);
  teardown(s, dir);
}

}  // namespace

int default_instance() {
  const char* env = std::getenv(kInstanceEnv);
  if (!env || !*env) return 0;
  return parse_instance(env, fmt::format("${}", kInstanceEnv));
}

std::string default_dir(int instance) {
  const char* env = std::getenv(kDirEnv);
  return (env && *env) ? std::string(env) : instance_names(instance).dir;
}

std::string default_dir() { return default_dir(default_instance()); }

int test_instance() {
  const char* env = std::getenv(kTestInstanceEnv);
  if (!env || !*env) return kDefaultTestInstance;
  const int n = parse_instance(env, fmt::format("${}", kTestInstanceEnv));
  if (n == 0) {
    throw Error(
        ErrorKind::kConfig,
        fmt::format("${} is 0, the user's lab, which tests must leave alone", kTestInstanceEnv),
        fmt::format("set it to a number from 1 to {}", kMaxInstance));
  }
  return n;
}

std::optional<LabState> load(const std::string& dir) { return load_from(normalize_dir(dir)); }

bool healthy(const LabState& s, std::string* why) {
  std::string reason;
  for (const LabHost* h : {&s.server, &s.client}) {
    if (!sys::netns_exists(h->netns)) {
      reason = fmt::format("network namespace {} is gone", h->netns);
    } else if (h->sshd_pid <= 0) {
      reason = fmt::format("sshd of {} never started", h->hostname);
    } else if (!sys::process_alive(h->sshd_pid)) {
      reason = fmt::format("sshd of {} (pid {}) is not running", h->hostname, h->sshd_pid);
    } else if (sys::process_comm(h->sshd_pid) != "sshd" ||
               // Only root may look at another process's namespaces.
               (geteuid() == 0 && !sys::process_in_netns(h->sshd_pid, h->netns))) {
      reason = fmt::format("pid {} is no longer the sshd of {}", h->sshd_pid, h->hostname);
    }
    if (!reason.empty()) break;
  }
  if (reason.empty() && !s.sw.netns.empty() && !sys::netns_exists(s.sw.netns)) {
    reason = fmt::format("network namespace {} (the switch) is gone", s.sw.netns);
  }
  if (why) *why = reason;
  return reason.empty();
}

LabHealth check_health(const LabState& s) {
  LabHealth h;
  auto down = [&](const std::string& what, const std::string& why) {
    h.down.push_back(what);
    h.why += (h.why.empty() ? "" : "; ") + why;
  };
  for (const LabHost* host : {&s.server, &s.client}) {
    if (!sys::netns_exists(host->netns)) {
      down(host->role + "-netns", fmt::format("network namespace {} is gone", host->netns));
    }
    const bool sshd = host->sshd_pid > 0 && sys::process_alive(host->sshd_pid) &&
                      sys::process_comm(host->sshd_pid) == "sshd" &&
                      (geteuid() != 0 || sys::process_in_netns(host->sshd_pid, host->netns));
    if (!sshd) {
      down(host->role + "-sshd",
           fmt::format("sshd of {} (pid {}) is not running", host->hostname, host->sshd_pid));
    }
  }
  if (!s.sw.netns.empty() && !sys::netns_exists(s.sw.netns)) {
    down("switch-netns", fmt::format("network namespace {} (the switch) is gone", s.sw.netns));
  }
  if (!s.server.shares.empty()) {
    if (!servers::ftpd_alive(s)) {
      down("vsftpd", fmt::format("vsftpd of {} (pid {}) is not running", s.server.hostname,
                                 s.server.ftpd_pid));
    }
    if (!servers::smbd_alive(s)) {
      down("smbd",
           fmt::format("smbd of {} (pid {}) is not running", s.server.hostname, s.server.smbd_pid));
    }
    if (ganesha::serves_nfs(s) && !ganesha::alive(s)) {
      down("nfs-ganesha", fmt::format("ganesha.nfsd of {} (pid {}) is not running",
                                      s.server.hostname, s.server.nfsd_pid));
    }
  }
  if (s.sw.delay_mode == kDelayLine &&
      (!delay_line_alive(s.sw.delay_line_pid) ||
       (geteuid() == 0 && !sys::process_in_netns(s.sw.delay_line_pid, s.sw.netns)))) {
    down("delay-line", fmt::format("the delay line in {} (pid {}) is not running", s.sw.netns,
                                   s.sw.delay_line_pid));
  }
  h.healthy = h.down.empty();
  return h;
}

namespace {

// The "MAJ:MIN" of `host`'s loop disk; throws Error(kIo) when it is gone.
std::string loop_device_number(const LabHost& host) {
  struct stat st;
  if (stat(host.loop_device.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) {
    throw Error(
        ErrorKind::kIo,
        fmt::format("the {} disk {} is not a block device", host.hostname, host.loop_device),
        "`chokepoint lab down`, then `chokepoint lab up`");
  }
  return fmt::format("{}:{}", major(st.st_rdev), minor(st.st_rdev));
}

// Gives the hosts `want` (the whole throttle): every change starts from
// no cgroups (the processes go back to their hierarchy's root), then the
// wanted limits are built afresh and recorded.
void set_throttle(LabState& s, LabThrottle want) {
  remove_throttle_cgroups(s.throttle);
  s.throttle = LabThrottle{};
  save(s);
  const bool server_disk = want.disk_read_bps > 0 || want.disk_write_bps > 0;
  const bool client_disk = want.client_disk_read_bps > 0 || want.client_disk_write_bps > 0;
  if (want.smbd_cpu <= 0 && want.nfsd_cpu <= 0 && want.client_cpu <= 0 && !server_disk &&
      !client_disk) {
    return;
  }
  if (want.nfsd_cpu > 0 && !ganesha::alive(s)) {
    throw Error(ErrorKind::kIo, fmt::format("ganesha.nfsd of {} is not running", s.server.hostname),
                "`chokepoint lab up` starts it again");
  }
  if (want.smbd_cpu > 0 && !servers::smbd_alive(s)) {
    throw Error(ErrorKind::kIo, fmt::format("smbd of {} is not running", s.server.hostname),
                "`chokepoint lab up` starts it again");
  }
  const std::string device = server_disk ? loop_device_number(s.server) : "";
  ClientTargets client;
  if (client_disk) client.device = loop_device_number(s.client);
  std::vector<int> server_pids, smbd_pids, nfsd_pids;
  for (pid_t p : sys::netns_pids(s.server.netns)) {
    server_pids.push_back(p);
    if (sys::process_comm(p) == "smbd") smbd_pids.push_back(p);
    if (sys::process_comm(p) == "ganesha.nfsd") nfsd_pids.push_back(p);
  }
  // The client's sshd among them: the sessions it forks later (the agent)
  // start in its cgroups.
  for (pid_t p : sys::netns_pids(s.client.netns)) client.pids.push_back(p);
  const ThrottlePlan plan =
      plan_throttle(cgroup_layout(), want, device, smbd_pids, server_pids,
                    instance_names(s.instance).cgroup_name, nfsd_pids, client);
  s.throttle = want;
  s.throttle.cgroups = plan.cgroups;
  save(s);  // first, so `down` removes even a half-applied throttle
  apply_plan(plan);
}

void reapply_throttle(LabState& s) { set_throttle(s, s.throttle); }

}  // namespace

LabState up(const LabOptions& opts, int instance, const std::string& dir_arg) {
  require_root();
  validate(opts);
  instance_names(instance);  // CHECKs the range
  const std::string dir = resolve_dir(dir_arg, instance);
  // Before changing anything: netem, or the delay line in its place.
  const std::string delay_mode = delay_mode_for(opts);
  sys::FileLock lock(instance_names(instance).lock_path, kLockWait);

  if (sys::exists(state_path(dir))) {
    std::optional<LabState> cur;
    try {
      cur = load_from(dir);
    } catch (const Error&) {
      cur.reset();  // damaged: rebuilt below
    }
    if (cur) require_instance(*cur, instance, dir);
    // A lab of another server profile is rebuilt (its server host changes).
    // So is one whose server login changes (its user, home and ssh_config).
    if (cur && healthy(*cur, nullptr) && cur->options.server_profile == opts.server_profile &&
        server_login_is_user(*cur) == (opts.server_login == "user")) {
      // Retune in place; the hosts, their disks and sessions stay.
      cur->dir = dir;
      if (cur->sw.netns.empty() && (opts.path_rate_bits > 0 || opts.server_mtu > 0 ||
                                    opts.client_mtu > 0 || delay_mode == kDelayLine)) {
        throw Error(ErrorKind::kConfig,
                    fmt::format("the lab in {} is from before the switch between its hosts, so "
                                "it takes no --path-rate, --server-mtu or --client-mtu, nor a "
                                "--delay without netem",
                                dir),
                    fmt::format("`{}`, then `lab up` again with them",
                                instance == 0
                                    ? std::string("chokepoint lab down")
                                    : fmt::format("chokepoint lab down --instance {}", instance)));
      }
      const bool samba_changed = cur->options.samba_params != opts.samba_params;
      const bool vsftpd_changed = cur->options.vsftpd_params != opts.vsftpd_params;
      const bool ganesha_changed = cur->options.ganesha_params != opts.ganesha_params;
      cur->options.rate_bits = opts.rate_bits;
      cur->options.mtu = opts.mtu;
      cur->options.server_mtu = opts.server_mtu;
      cur->options.client_mtu = opts.client_mtu;
      cur->options.path_rate_bits = opts.path_rate_bits;
      cur->options.delay_s = opts.delay_s;
      cur->options.samba_params = opts.samba_params;
      cur->options.vsftpd_params = opts.vsftpd_params;
      cur->options.ganesha_params = opts.ganesha_params;
      save(*cur);
      apply_path(*cur, cur->options, delay_mode);
      if (samba_changed) servers::stop_smbd(*cur);
      if (vsftpd_changed) servers::stop_ftpd(*cur);
      if (ganesha_changed) ganesha::stop(*cur);
      // A lab from before the hosts mounted cgroups gets them now (best effort:
      // without them only CPU quotas go unseen).
      const std::vector<CgroupMount> cgroups = root_cgroup_mounts();
      if (!cgroups.empty()) {
        for (const LabHost* h : {&cur->server, &cur->client}) {
          run_command(host_cgroups_argv(*h, cgroups));
        }
      }
      // Servers that died (or a lab from before them), or smbd for new
      // settings, start again.
      const int smbd_before = cur->server.smbd_pid;
      const int nfsd_before = cur->server.nfsd_pid;
      servers::start(*cur, [&] { save(*cur); });
      // A new smbd (or ganesha.nfsd) is back under the CPU quota its predecessor had.
      if ((cur->server.smbd_pid != smbd_before && cur->throttle.smbd_cpu > 0) ||
          (cur->server.nfsd_pid != nfsd_before && cur->throttle.nfsd_cpu > 0)) {
        reapply_throttle(*cur);
      }
      return *cur;
    }
    // Remains of a broken lab: clear them, then build afresh.
    down_locked(dir, instance);
  }

  require_free(dir, instance);
  LabState s = plan(opts, dir, instance);
  try {
    create(s, delay_mode);
  } catch (const Error& e) {
    try {
      teardown(s, dir);
    } catch (const Error& rollback) {
      throw Error(e.kind(),
                  fmt::format("{} (and rolling back failed too: {})", e.what(), rollback.what()),
                  "run `chokepoint lab down` to remove what is left");
    }
    throw;
  } catch (...) {
    try {
      teardown(s, dir);
    } catch (const Error&) {
    }
    throw;
  }
  return s;
}

LabState throttle(const ThrottleRequest& req, int instance, const std::string& dir_arg) {
  require_root();
  instance_names(instance);  // CHECKs the range
  const std::string dir = resolve_dir(dir_arg, instance);
  sys::FileLock lock(instance_names(instance).lock_path, kLockWait);
  std::optional<LabState> cur = load_from(dir);
  if (!cur) {
    throw Error(ErrorKind::kConfig, fmt::format("no lab is up in {}", dir),
                "start one with `chokepoint lab up`");
  }
  require_instance(*cur, instance, dir);
  std::string why;
  if (!healthy(*cur, &why)) {
    throw Error(ErrorKind::kIo, fmt::format("the lab in {} is broken: {}", dir, why),
                "`chokepoint lab down`, then `chokepoint lab up`");
  }
  LabState s = *cur;
  s.dir = dir;
  LabThrottle want = req.clear ? LabThrottle{} : s.throttle;
  want.cgroups.clear();
  if (req.smbd_cpu) want.smbd_cpu = *req.smbd_cpu;
  if (req.nfsd_cpu) want.nfsd_cpu = *req.nfsd_cpu;
  if (req.disk_read_bps) want.disk_read_bps = *req.disk_read_bps;
  if (req.disk_write_bps) want.disk_write_bps = *req.disk_write_bps;
  if (req.client_cpu) want.client_cpu = *req.client_cpu;
  if (req.client_disk_read_bps) want.client_disk_read_bps = *req.client_disk_read_bps;
  if (req.client_disk_write_bps) want.client_disk_write_bps = *req.client_disk_write_bps;
  set_throttle(s, want);
  return s;
}

void down(int instance, const std::string& dir_arg) {
  require_root();
  instance_names(instance);  // CHECKs the range
  const std::string dir = resolve_dir(dir_arg, instance);
  sys::FileLock lock(instance_names(instance).lock_path, kLockWait);
  down_locked(dir, instance);
}

}  // namespace cp::lab
