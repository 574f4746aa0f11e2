#include "lab/ganesha.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "lab/layout.h"
#include "lab/servers.h"
#include "lab/sys.h"

namespace cp::lab::ganesha {
namespace {

constexpr double kStartWait = 30;  // seconds for Ganesha to accept (it reads its exports first)
constexpr double kStopWait = 5;    // seconds after TERM before KILL

// Where Debian (and others) put Ganesha's FSAL plugins.
std::string find_plugins_dir() {
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu/ganesha", "/usr/lib/aarch64-linux-gnu/ganesha",
                          "/usr/lib64/ganesha", "/usr/lib/ganesha"}) {
    if (access((std::string(dir) + "/libfsalvfs.so").c_str(), R_OK) == 0) return dir;
  }
  return {};
}

void stop_pid(int pid) { sys::stop_process(pid, kStopWait); }

std::vector<std::string> logs(const NfsFiles& f) { return {f.out, f.log, f.rpcbind_out}; }

// Runs `argv` as a daemon inside the server host (nsenter into its sshd's
// mount, UTS and network namespaces; setsid, output to `out`, its pid to
// `pid_file`: exec keeps the shell's pid).
void spawn(const LabState& s, const std::string& out, const std::string& pid_file,
           const std::vector<std::string>& argv) {
  std::vector<std::string> cmd = {"nsenter",
                                  "-t",
                                  std::to_string(s.server.sshd_pid),
                                  "-m",
                                  "-u",
                                  "-n",
                                  "--",
                                  "setsid",
                                  "-f",
                                  "sh",
                                  "-c",
                                  "exec </dev/null >>\"$1\" 2>&1; echo $$ >\"$2\"; shift 2; "
                                  "exec \"$@\"",
                                  "cp-lab-nfs",
                                  out,
                                  pid_file};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  run_checked(cmd);
}

}  // namespace

NfsFiles nfs_files(const LabState& s) {
  NfsFiles f;
  f.dir = s.dir + "/server/nfs";
  f.conf = f.dir + "/ganesha.conf";
  f.log = f.dir + "/ganesha.log";
  f.out = f.dir + "/ganesha.out";
  f.pid = f.dir + "/ganesha.pid";
  f.recovery = f.dir + "/recovery";
  f.rpcbind_out = f.dir + "/rpcbind.out";
  f.rpcbind_pid = f.dir + "/rpcbind.pid";
  return f;
}

std::string conf_text(const LabState& s, bool v3, const std::string& plugins_dir) {
  const ServerFiles sf = server_files(s);
  const NfsFiles f = nfs_files(s);
  const char* protocols = v3 ? "3, 4" : "4";
  std::string out = fmt::format(
      "# chokepoint lab: NFS-Ganesha on the server host's data address\n"
      "NFS_CORE_PARAM {{\n"
      "  Protocols = {0};\n"
      "  Bind_addr = {1};\n"
      "  NFS_Port = {2};\n"
      "  Enable_UDP = false;\n"
      "  Enable_NLM = false;\n"
      "  Enable_RQUOTA = false;\n"
      "  Plugins_Dir = \"{3}\";\n"
      // NFSv3 MOUNT takes the same paths as NFSv4 (/ram, not the dir behind it).
      "  Mount_Path_Pseudo = true;\n"
      "}}\n"
      "NFSV4 {{\n"
      "  Graceless = true;\n"
      "  RecoveryBackend = fs;\n"
      "  RecoveryRoot = \"{4}\";\n"
      "}}\n"
      // Idle file descriptors closed within a second or two: the server
      // agent deletes files behind Ganesha's back, and an NFSv3 file's fd,
      // kept open, would keep a deleted file's space in the tmpfs.
      "MDCACHE {{\n"
      "  LRU_Run_Interval = 1;\n"
      "  FD_LWMark_Percent = 0;\n"
      "}}\n"
      "NFS_KRB5 {{ Active_krb5 = false; }}\n"
      "LOG {{ Default_Log_Level = EVENT; }}\n",
      protocols, s.server.data_address, kNfsPort, plugins_dir, f.recovery);
  const struct {
    int id;
    const char* pseudo;
    std::string path;
    const char* access;
  } exports[] = {{1, "/ram", sf.ram_share, "RW"},
                 {2, "/disk", sf.disk_share, "RW"},
                 {3, "/ro", sf.ro_share, "RO"}};
  // `lab up --ganesha` lines, in each export (where MaxRead/MaxWrite live).
  std::string extra;
  for (const std::string& p : s.options.ganesha_params) extra += "  " + p + ";\n";
  if (!extra.empty()) extra = "  # lab up --ganesha\n" + extra;
  for (const auto& e : exports) {
    out += fmt::format(
        "EXPORT {{\n"
        "  Export_Id = {};\n"
        "  Path = \"{}\";\n"
        "  Pseudo = \"{}\";\n"
        "  Access_Type = {};\n"
        "  Squash = Root_Squash;\n"
        "  SecType = sys;\n"
        "  Protocols = {};\n"
        "  Transports = TCP;\n"
        // Files and dirs change behind Ganesha's back (the server agent lays
        // out and removes them): no cached attributes or entries are trusted.
        "  Attr_Expiration_Time = 0;\n"
        "  FSAL {{ Name = VFS; }}\n"
        "{}"
        "}}\n",
        e.id, e.path, e.pseudo, e.access, protocols, extra);
  }
  return out;
}

void add_shares(LabState& s) {
  if (!serves_nfs(s)) add_server_shares(s, "nfs");
}

bool serves_nfs(const LabState& s) {
  for (const LabShare& sh : s.server.shares) {
    if (sh.protocol == "nfs") return true;
  }
  return false;
}

bool alive(const LabState& s) {
  return sys::process_is(s.server.nfsd_pid, "ganesha.nfsd", nfs_files(s).conf);
}

void start(LabState& s, const std::function<void()>& save) {
  CP_CHECK(s.server.sshd_pid > 0);
  add_shares(s);
  const NfsFiles f = nfs_files(s);
  const bool up = alive(s);
  const bool rpcbind_up = sys::process_is(s.server.rpcbind_pid, "rpcbind", "-f");
  if (up) return;
  const std::string nfsd = find_program("ganesha.nfsd");
  const std::string plugins = find_plugins_dir();
  if (nfsd.empty() || plugins.empty()) {
    throw Error(ErrorKind::kUnsupported,
                "the lab's NFS server needs NFS-Ganesha with its VFS plugin (ganesha.nfsd, "
                "libfsalvfs.so), which is not installed",
                "install nfs-ganesha and nfs-ganesha-vfs (scripts/install-deps.sh installs what "
                "chokepoint needs)");
  }
  // NFSv3 registers with rpcbind: without one, Ganesha serves NFSv4 only.
  const std::string rpcbind = find_program("rpcbind");
  const bool v3 = !rpcbind.empty();
  sys::make_dirs(f.dir, 0755);
  sys::make_dirs(f.recovery, 0755);
  sys::write_file(f.conf, conf_text(s, v3, plugins), 0644);
  if (v3 && !rpcbind_up) {
    ::unlink(f.rpcbind_pid.c_str());
    // rpcbind keeps its socket and lock under /run, the host's own tmpfs.
    run_checked({"nsenter", "-t", std::to_string(s.server.sshd_pid), "-m", "--", "mkdir", "-p",
                 "/run/rpcbind"});
    spawn(s, f.rpcbind_out, f.rpcbind_pid, {rpcbind, "-f"});
    const double deadline = monotonic_seconds() + kStartWait;
    int pid = 0;
    while (monotonic_seconds() < deadline) {
      if (pid == 0) pid = sys::read_pid_file(f.rpcbind_pid);
      if (pid > 0 && !sys::process_alive(pid))
        servers::server_failed("rpcbind of the server host exited", logs(f));
      if (pid > 0 &&
          sys::tcp_accepts_in_netns(s.server.netns, s.server.data_address, kRpcbindPort, 0.5)) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (pid <= 0 || !sys::process_alive(pid))
      servers::server_failed("rpcbind of the server host did not start", logs(f));
    s.server.rpcbind_pid = pid;
    save();
  }
  ::unlink(f.pid.c_str());
  // -F: in the foreground of its setsid shell, so the recorded pid is Ganesha's.
  spawn(s, f.out, f.pid,
        {nfsd, "-F", "-f", f.conf, "-L", f.log, "-p", f.dir + "/ganesha.nfsd.pid"});
  s.server.nfsd_pid = servers::wait_for(s, "ganesha.nfsd", "ganesha.nfsd", f.pid, f.conf, kNfsPort,
                                        logs(f), kStartWait);
  save();
}

void stop(LabState& s) {
  if (alive(s)) stop_pid(s.server.nfsd_pid);
  if (sys::process_is(s.server.rpcbind_pid, "rpcbind", "-f")) stop_pid(s.server.rpcbind_pid);
  s.server.nfsd_pid = 0;
  s.server.rpcbind_pid = 0;
}

}  // namespace cp::lab::ganesha
