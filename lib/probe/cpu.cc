#include "probe/cpu.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/mountinfo.h"
#include "core/text.h"
#include "probe/platform.h"

namespace cp::probe {
namespace {

constexpr size_t kTopProcesses = 5;
// Besides the busiest, up to this many processes near their cgroup's CPU limit are
// kept: a starved process (smbd at a 20 % quota) is easily outrun by busier ones.
constexpr size_t kLimitedProcesses = 5;
// Processes using less than this (% of a core) are not looked at for a limit.
constexpr double kMinLimitedPct = 1;

bool to_u64(std::string_view s, uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// Busy % of a core between two snapshots; -1 when the counters did not advance.
double busy_pct(const CpuTimes& a, const CpuTimes& b) {
  if (b.total <= a.total || b.busy < a.busy) return -1;
  return std::min(
      100.0, 100.0 * static_cast<double>(b.busy - a.busy) / static_cast<double>(b.total - a.total));
}

}  // namespace

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (const MountInfoLine& line : parse_mountinfo(mountinfo)) {
    if (line.fstype != "cgroup" && line.fstype != "cgroup2") continue;
    CgroupMount m;
    m.root = line.root;
    m.mount_point = line.mount_point;
    while (m.mount_point.size() > 1 && m.mount_point.back() == '/') m.mount_point.pop_back();
    if (m.mount_point == "/") m.mount_point.clear();  // files are <mount_point>/<rel>
    m.v2 = line.fstype == "cgroup2";
    if (!m.v2) {
      for (std::string_view opt : split_nonempty(line.super_options, ',')) {
        if (opt != "rw" && opt != "ro") m.controllers.emplace_back(opt);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<PidCgroup> parse_pid_cgroup(std::string_view text) {
  std::vector<PidCgroup> out;
  for (std::string_view line : split(text, '\n')) {
    // The path may hold ':' itself: only the first two separate fields.
    const size_t a = line.find(':');
    if (a == std::string_view::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos || a == 0 || b + 1 >= line.size() || line[b + 1] != '/') {
      continue;
    }
    PidCgroup c;
    c.hierarchy = std::string(line.substr(0, a));
    for (std::string_view ctl : split(line.substr(a + 1, b - a - 1), ',')) {
      if (!ctl.empty()) c.controllers.emplace_back(ctl);
    }
    c.path = std::string(line.substr(b + 1));
    out.push_back(std::move(c));
  }
  return out;
}

double parse_cfs_limit(std::string_view quota_us, std::string_view period_us) {
  quota_us = trim(quota_us);
  if (quota_us == "-1") return 0;
  uint64_t quota = 0, period = 0;
  if (!to_u64(quota_us, &quota) || !to_u64(trim(period_us), &period) || period == 0) return -1;
  return 100.0 * static_cast<double>(quota) / static_cast<double>(period);
}

double parse_cpu_max(std::string_view text) {
  const std::vector<std::string_view> f = split_ws(trim(text));
  if (f.size() != 2 && f.size() != 1) return -1;
  if (f[0] == "max") return 0;
  // The period defaults to 100 ms when the kernel prints the quota alone (it never does).
  return parse_cfs_limit(f[0], f.size() == 2 ? f[1] : "100000");
}

double process_cpu_limit_pct(int pid, const std::string& proc_root, const std::string& fs_root) {
  return os::CpuLimits(proc_root, fs_root).of_pid(pid);
}

bool parse_pid_stat(std::string_view text, std::string* comm, uint64_t* jiffies,
                    uint64_t* start_ticks, int* ppid) {
  // "pid (comm) state ppid ...": comm may hold anything, so it ends at the LAST ')'.
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  std::vector<std::string_view> f = split_ws(text.substr(close + 1));
  // f[0] is field 3 (state); utime is field 14, stime 15, starttime 22.
  uint64_t utime = 0, stime = 0, start = 0;
  if (f.size() < 13 || !to_u64(f[11], &utime) || !to_u64(f[12], &stime)) return false;
  if (start_ticks != nullptr) {
    if (f.size() < 20 || !to_u64(f[19], &start)) return false;
    *start_ticks = start;
  }
  if (ppid != nullptr) {
    auto [p, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), *ppid);
    if (ec != std::errc() || p != f[1].data() + f[1].size()) return false;
  }
  *comm = std::string(text.substr(open + 1, close - open - 1));
  *jiffies = utime + stime;
  return true;
}

bool parse_schedstat(std::string_view text, uint64_t* ns, uint64_t* wait_ns) {
  const std::vector<std::string_view> f = split_ws(trim(text));
  uint64_t wait = 0;
  if (f.size() != 3 || !to_u64(f[0], ns) || !to_u64(f[1], &wait)) return false;
  if (wait_ns != nullptr) *wait_ns = wait;
  return true;
}

bool is_file_server_comm(std::string_view comm) {
  // comm is at most 15 characters: "ganesha.nfsd" fits, longer names are cut.
  static constexpr std::string_view kServers[] = {
      "smbd",     "samba-dcerpcd", "rpcd_classic", "rpcd_winreg", "vsftpd",
      "proftpd",  "pure-ftpd",     "afpd",         "cnid_dbd",    "cnid_metad",
      "netatalk", "ganesha.nfsd",  "nfsd",         "rpc.mountd",  "sftp-server",
      "in.tftpd", "lighttpd",      "nginx",        "httpd",       "apache2"};
  for (std::string_view s : kServers)
    if (comm == s) return true;
  return false;
}

std::string process_role(int pid, int ppid, const std::string& comm,
                         const std::vector<std::string>& ancestor_comms) {
  // kthreadd is pid 2; every kernel thread is its child.
  if (pid == 2 || ppid == 2) return "kernel";
  if (is_file_server_comm(comm)) return "server";
  for (const std::string& a : ancestor_comms)
    if (is_file_server_comm(a)) return "server";
  return "other";
}

std::string canonical_address(std::string_view address) {
  const std::string a(address);
  in_addr v4{};
  if (::inet_pton(AF_INET, a.c_str(), &v4) == 1) {
    char buf[INET_ADDRSTRLEN];
    return ::inet_ntop(AF_INET, &v4, buf, sizeof buf) ? buf : "";
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, a.c_str(), &v6) != 1) return "";
  char buf[INET6_ADDRSTRLEN];
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    std::memcpy(&v4, &v6.s6_addr[12], 4);
    return ::inet_ntop(AF_INET, &v4, buf, sizeof buf) ? buf : "";
  }
  return ::inet_ntop(AF_INET6, &v6, buf, sizeof buf) ? buf : "";
}

std::vector<TcpSocketEntry> parse_proc_net_tcp(std::string_view text, bool v6) {
  // "sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...": each
  // address is the kernel's in-memory words printed as hex (%08X each).
  auto address = [v6](std::string_view hex) -> std::string {
    const size_t words = v6 ? 4 : 1;
    if (hex.size() != 8 * words) return "";
    uint32_t w[4] = {};
    for (size_t i = 0; i < words; ++i) {
      auto [p, ec] = std::from_chars(hex.data() + 8 * i, hex.data() + 8 * i + 8, w[i], 16);
      if (ec != std::errc() || p != hex.data() + 8 * i + 8) return "";
    }
    char buf[INET6_ADDRSTRLEN];
    if (!v6) return ::inet_ntop(AF_INET, w, buf, sizeof buf) ? canonical_address(buf) : "";
    return ::inet_ntop(AF_INET6, w, buf, sizeof buf) ? canonical_address(buf) : "";
  };
  std::vector<TcpSocketEntry> out;
  for (std::string_view line : split(text, '\n')) {
    const std::vector<std::string_view> f = split_ws(line);
    if (f.size() < 10 || f[0].empty() || f[0].back() != ':') continue;
    const size_t lc = f[1].rfind(':'), rc = f[2].rfind(':');
    if (lc == std::string_view::npos || rc == std::string_view::npos) continue;
    TcpSocketEntry e;
    const std::string_view port = f[1].substr(lc + 1);
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), e.local_port, 16);
    if (ec != std::errc() || p != port.data() + port.size()) continue;
    e.remote_address = address(f[2].substr(0, rc));
    if (e.remote_address.empty() || !to_u64(f[9], &e.inode)) continue;
    e.established = f[3] == "01";
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// Whether process `pid` or one of its ancestors holds the sample's server
// connection (`conn`). The socket may belong to another namespace than its
// holder's: vsftpd's isolate_network session keeps the control connection its
// listener accepted, so every namespace along the line is searched.
bool holds_connection(int pid, const std::map<int, os::ProcessTimes>& all,
                      const std::string& proc_root, const ServerConnection& conn) {
  std::vector<int> line;
  for (int up = pid, depth = 0; depth < 16 && up > 2; ++depth) {
    line.push_back(up);
    auto it = all.find(up);
    if (it == all.end()) break;
    up = it->second.ppid;
  }
  std::set<std::string> seen_netns;
  std::set<uint64_t> wanted;
  for (int p : line) {
    if (!seen_netns.insert(os::process_netns(proc_root, p)).second) continue;
    for (const TcpSocketEntry& e : os::netns_tcp_sockets(proc_root, p)) {
      if (e.established && e.local_port == conn.port && e.remote_address == conn.peer) {
        wanted.insert(e.inode);
      }
    }
  }
  if (wanted.empty()) return false;
  for (int p : line) {
    for (uint64_t inode : os::socket_inodes(proc_root, p))
      if (wanted.count(inode)) return true;
  }
  return false;
}

// Marks the processes in another network namespace than the agent's (a lab's
// other host, a container: competing load, not this end's). A file server's
// process whose file-server ancestor runs in the agent's namespace is this
// end's all the same: vsftpd's isolate_network (its default) runs each session
// in a fresh namespace of its own, forked by the listener the share talks to.
// So is the process holding the sample's server connection and what it forked,
// whatever its namespace (a file server in a container): a file server then,
// whatever its name. Returns the CPU % of processes that became the server's.
double mark_other_netns(std::vector<ProcLoad>& procs, const std::map<int, os::ProcessTimes>& all,
                        const std::string& proc_root, const ServerConnection& conn) {
  const std::string own = os::process_netns(proc_root, 0);
  if (own.empty()) return 0;
  auto foreign = [&](int pid) {
    const std::string netns = os::process_netns(proc_root, pid);
    return !netns.empty() && netns != own;
  };
  double now_server_pct = 0;
  for (ProcLoad& p : procs) {
    p.other_netns = foreign(p.pid);
    if (!p.other_netns) continue;
    if (p.role == "server") {
      int up = 0;
      if (auto it = all.find(p.pid); it != all.end()) up = it->second.ppid;
      for (int depth = 0; depth < 16 && up > 2; ++depth) {
        auto it = all.find(up);
        if (it == all.end()) break;
        if (is_file_server_comm(it->second.comm) && !foreign(up)) {
          p.other_netns = false;
          break;
        }
        up = it->second.ppid;
      }
    }
    if (!p.other_netns || conn.port <= 0 || conn.peer.empty()) continue;
    if (p.role != "other" && p.role != "server") continue;
    if (!holds_connection(p.pid, all, proc_root, conn)) continue;
    p.other_netns = false;
    if (p.role == "other") {
      p.role = "server";
      now_server_pct += p.cpu_pct;
    }
  }
  return now_server_pct;
}

// The file server instance serving the sample's connection `conn`: of the
// file-server processes, one holding it (or whose ancestor does), then its
// topmost file-server ancestor (vsftpd's listener for a session's process);
// 0 when none holds it or the connection is unknown.
int connection_instance(const std::map<int, os::ProcessTimes>& all, const std::string& proc_root,
                        const ServerConnection& conn) {
  if (conn.port <= 0 || conn.peer.empty()) return 0;
  for (const auto& [pid, p] : all) {
    if (!is_file_server_comm(p.comm) || !holds_connection(pid, all, proc_root, conn)) continue;
    int root = pid;
    for (int depth = 0; depth < 16; ++depth) {
      auto up = all.find(all.at(root).ppid);
      if (up == all.end() || up->first <= 2 || !is_file_server_comm(up->second.comm)) break;
      root = up->first;
    }
    return root;
  }
  return 0;
}

}  // namespace

struct CpuSampler::Impl {
  double interval_s;
  std::string proc_root;
  std::string fs_root;

  std::mutex mu;
  std::condition_variable cv;
  bool running = false;
  bool stopping = false;
  std::thread thread;

  double t_start = 0;
  double t_last = 0;
  std::vector<CpuTimes> first;
  std::vector<CpuTimes> last;
  std::vector<double> max_pct;  // per core, over closed intervals; -1 = none yet
  int intervals = 0;
  std::map<int, os::ProcessTimes> procs_start;
  // This process's threads as last seen by the sampling thread: a thread that
  // ends inside the window (a TCP sample's connection thread) keeps its time.
  int me = 0;
  std::map<int, std::pair<uint64_t, uint64_t>> self_seen;
  // Each CPU-limited cgroup's throttling counters at start, by dir.
  std::map<std::string, os::ThrottleStat> throttle_start;
  ServerConnection conn;  // start()'s
  // Each process's CPU-limiting cgroup dir ("" when none), kept across samples:
  // reading every process's cgroup at every start() cost ~10 ms of ~30 with 250
  // processes. A process is known by pid and start time (a pid reused is
  // another process); one that moves to another cgroup in mid-run keeps its
  // old dir here (stop() reads the limits of the processes it lists afresh).
  struct LimitDir {
    uint64_t start_ticks = 0;
    std::string dir;
  };
  std::map<int, LimitDir> limit_dirs;

  // Reads /proc/stat; empty when unreadable.
  std::vector<CpuTimes> read_stat() { return os::read_core_times(proc_root); }

  // Closes the interval ending now. Caller holds mu.
  void close_interval_locked(const std::vector<CpuTimes>& now, double t) {
    if (now.empty()) return;
    if (max_pct.size() < now.size()) max_pct.resize(now.size(), -1);
    for (size_t i = 0; i < now.size() && i < last.size(); ++i) {
      double pct = busy_pct(last[i], now[i]);
      if (pct >= 0) max_pct[i] = std::max(max_pct[i], pct);
    }
    last = now;
    t_last = t;
    ++intervals;
  }

  void loop() {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait_for(lock, std::chrono::duration<double>(interval_s), [&] { return stopping; });
      if (stopping) return;
      lock.unlock();
      std::vector<CpuTimes> now = read_stat();
      const double t = monotonic_seconds();
      std::map<int, std::pair<uint64_t, uint64_t>> threads;
      if (me > 0) os::read_thread_times(proc_root, me, &threads);
      lock.lock();
      if (stopping) return;
      close_interval_locked(now, t);
      for (const auto& [tid, times] : threads) self_seen[tid] = times;
    }
  }
};

CpuSampler::CpuSampler(double interval_s, std::string proc_root, std::string fs_root)
    : impl_(std::make_unique<Impl>()) {
  CP_CHECK(interval_s > 0);
  impl_->interval_s = interval_s;
  impl_->proc_root = std::move(proc_root);
  impl_->fs_root = std::move(fs_root);
}

CpuSampler::~CpuSampler() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void CpuSampler::start(const ServerConnection& conn) {
  Impl& m = *impl_;
  std::vector<CpuTimes> first = m.read_stat();
  if (first.empty()) {
    throw Error(ErrorKind::kIo, fmt::format("cannot read CPU times from {}/stat", m.proc_root),
                "chokepoint needs a Linux /proc to measure CPU load");
  }
  auto procs = os::read_processes(m.proc_root);
  // The throttling counters of every cgroup that limits a process's CPU: a
  // quota that binds shows as throttled periods, even when competing load keeps
  // the process from using all of it.
  std::map<std::string, os::ThrottleStat> throttle;
  os::CpuLimits limits(m.proc_root, m.fs_root);
  if (limits.any()) {
    // Only the sampling thread touches limit_dirs, and it is not running here.
    std::map<int, Impl::LimitDir> dirs;
    for (const auto& [pid, p] : procs) {
      Impl::LimitDir& d = dirs[pid];
      auto known = m.limit_dirs.find(pid);
      if (known != m.limit_dirs.end() && known->second.start_ticks == p.start_ticks) {
        d = known->second;
      } else {
        d.start_ticks = p.start_ticks;
        if (limits.of_pid(pid, &d.dir) <= 0) d.dir.clear();
      }
      if (d.dir.empty() || throttle.count(d.dir)) continue;
      if (auto t = os::read_throttle(d.dir)) throttle[d.dir] = *t;
    }
    m.limit_dirs = std::move(dirs);  // processes gone are forgotten
  }
  {
    std::lock_guard lock(m.mu);
    CP_CHECK(!m.running);
    m.running = true;
    m.stopping = false;
    m.t_start = m.t_last = monotonic_seconds();
    m.first = m.last = std::move(first);
    m.max_pct.assign(m.first.size(), -1);
    m.intervals = 0;
    m.me = os::self_pid(m.proc_root);
    m.self_seen.clear();
    if (auto it = procs.find(m.me); it != procs.end()) m.self_seen = it->second.thread_ns;
    m.procs_start = std::move(procs);
    m.conn = conn;
    m.conn.peer = canonical_address(conn.peer);
    m.throttle_start = std::move(throttle);
  }
  m.thread = std::thread([&m] { m.loop(); });
}

void CpuSampler::sample_now() {
  Impl& m = *impl_;
  std::vector<CpuTimes> now = m.read_stat();
  const double t = monotonic_seconds();
  std::lock_guard lock(m.mu);
  CP_CHECK(m.running);
  m.close_interval_locked(now, t);
}

namespace {

// The cores' figures between `first` and `now` (`max_pct`: each core's
// busiest closed interval, -1 none). Returns the window in clock ticks of one
// core: /proc/stat and /proc/PID/stat count the same ticks.
double add_core_figures(const std::vector<CpuTimes>& first, const std::vector<CpuTimes>& now,
                        const std::vector<double>& max_pct, CpuSummary& s) {
  const size_t n = std::min(first.size(), now.size());
  uint64_t busy_sum = 0, total_sum = 0, system_sum = 0, softirq_sum = 0;
  size_t cores_counted = 0;
  for (size_t i = 0; i < n; ++i) {
    double avg = busy_pct(first[i], now[i]);
    double mx = i < max_pct.size() ? max_pct[i] : -1;
    s.core_busy_pct.push_back(std::max(avg, 0.0));
    // The max over intervals is never below the average (the short tail may have been dropped).
    s.core_busy_max_pct.push_back(std::max({mx, avg, 0.0}));
    if (avg >= 0) {
      busy_sum += now[i].busy - first[i].busy;
      total_sum += now[i].total - first[i].total;
      if (now[i].system >= first[i].system) system_sum += now[i].system - first[i].system;
      if (now[i].softirq >= first[i].softirq) softirq_sum += now[i].softirq - first[i].softirq;
      ++cores_counted;
    }
  }
  if (total_sum > 0) {
    s.total_busy_pct = 100.0 * static_cast<double>(busy_sum) / total_sum;
    s.sys_pct = 100.0 * static_cast<double>(system_sum) / total_sum;
    s.softirq_pct = 100.0 * static_cast<double>(softirq_sum) / total_sum;
  }
  double window_ticks = cores_counted > 0 ? static_cast<double>(total_sum) / cores_counted : 0;
  if (window_ticks <= 0) window_ticks = s.seconds * static_cast<double>(::sysconf(_SC_CLK_TCK));
  return window_ticks;
}

// One process's load over the window (% of one core), from its times at the
// end and, when it is the same process (pid and start time), at the start
// (`start`, else nullptr: it started in the window).
ProcLoad process_load(int pid, const os::ProcessTimes& p, const os::ProcessTimes* start,
                      double window_ticks, double window_ns) {
  const uint64_t base = start ? start->jiffies : 0;
  double pct = p.jiffies > base ? 100.0 * static_cast<double>(p.jiffies - base) / window_ticks : 0;
  // Per-thread times in ns are exact where ticks are 10 ms coarse (a 0.1 s sample is
  // 10 ticks): prefer their sum, and take the busiest thread from them.
  double top_thread = -1, wait_pct = 0;
  if (!p.thread_ns.empty() && window_ns > 0) {
    uint64_t sum_ns = 0, max_ns = 0, wait_sum = 0;
    for (const auto& [tid, times] : p.thread_ns) {
      const auto [ns, wait] = times;
      uint64_t b = 0, bw = 0;
      if (start) {
        auto t = start->thread_ns.find(tid);
        if (t != start->thread_ns.end() && t->second.first <= ns && t->second.second <= wait) {
          b = t->second.first;
          bw = t->second.second;
        }
      }
      sum_ns += ns - b;
      max_ns = std::max(max_ns, ns - b);
      wait_sum += wait - bw;
    }
    wait_pct = 100.0 * static_cast<double>(wait_sum) / window_ns;
    // The tick count also holds threads that ended unseen: the larger of the two.
    if (!start || !start->thread_ns.empty()) {
      pct = std::max(pct, 100.0 * static_cast<double>(sum_ns) / window_ns);
    }
    top_thread = std::min(100.0, 100.0 * static_cast<double>(max_ns) / window_ns);
  }
  ProcLoad load{pid, p.comm, pct};
  load.top_thread_pct = top_thread;
  load.wait_pct = wait_pct;
  load.threads = static_cast<int>(p.thread_ns.size());
  return load;
}

// Every process that used the CPU in the window, into s.top (unsorted) and the
// per-role sums. `me`: this agent's pid.
void add_processes(const std::map<int, os::ProcessTimes>& procs_start,
                   const std::map<int, os::ProcessTimes>& procs_end, int me, double window_ticks,
                   CpuSummary& s) {
  if (window_ticks <= 0) return;
  const double window_ns = s.seconds * 1e9;
  // The role of each process: its own comm and those of its ancestors.
  auto role_of = [&](int pid, const os::ProcessTimes& p) {
    if (pid == me) return std::string("agent");
    std::vector<std::string> ancestors;
    int up = p.ppid;
    for (int depth = 0; depth < 16 && up > 2; ++depth) {
      auto it = procs_end.find(up);
      if (it == procs_end.end()) break;
      ancestors.push_back(it->second.comm);
      up = it->second.ppid;
    }
    return process_role(pid, p.ppid, p.comm, ancestors);
  };
  for (const auto& [pid, p] : procs_end) {
    auto it = procs_start.find(pid);
    const bool same = it != procs_start.end() && it->second.start_ticks == p.start_ticks;
    ProcLoad load = process_load(pid, p, same ? &it->second : nullptr, window_ticks, window_ns);
    if (load.cpu_pct <= 0) continue;
    load.role = role_of(pid, p);
    if (load.role == "agent" || load.role == "server") s.own_wait_pct += load.wait_pct;
    if (load.role == "agent")
      s.agent_pct += load.cpu_pct;
    else if (load.role == "server")
      s.server_pct += load.cpu_pct;
    else if (load.role == "kernel")
      s.kernel_pct += load.cpu_pct;
    else
      s.other_pct += load.cpu_pct;
    s.top.push_back(std::move(load));
  }
}

// Of `top` (busiest first): the kTopProcesses busiest, then those near their
// cgroup's limit and the endpoint's own among the rest; each limited one with
// how much of the window its cgroup was throttled (from `throttle_start`).
std::vector<ProcLoad> notable_processes(
    std::vector<ProcLoad>& top, os::CpuLimits& limits,
    const std::map<std::string, os::ThrottleStat>& throttle_start) {
  std::vector<ProcLoad> kept;
  for (size_t i = 0; i < top.size(); ++i) {
    ProcLoad& p = top[i];
    if (i < kTopProcesses) {
      p.cpu_limit_pct = limits.of_pid(p.pid);
      kept.push_back(p);
      continue;
    }
    if (p.cpu_pct < kMinLimitedPct || kept.size() >= kTopProcesses + kLimitedProcesses) break;
    p.cpu_limit_pct = limits.of_pid(p.pid);
    // Near its limit, or the endpoint's own (the agent, a file server): the verdict
    // needs their figures even when busier processes outrun them.
    if ((p.cpu_limit_pct > 0 && p.cpu_pct >= kNearLimit * p.cpu_limit_pct) || p.role == "agent" ||
        p.role == "server") {
      kept.push_back(p);
    }
  }
  for (ProcLoad& p : kept) {
    if (p.cpu_limit_pct <= 0) continue;
    std::string dir;
    limits.of_pid(p.pid, &dir);
    auto it = throttle_start.find(dir);
    const auto now = it == throttle_start.end() ? std::nullopt : os::read_throttle(dir);
    if (now && now->periods > it->second.periods && now->throttled >= it->second.throttled) {
      p.throttled_pct = 100.0 * static_cast<double>(now->throttled - it->second.throttled) /
                        static_cast<double>(now->periods - it->second.periods);
    }
  }
  return kept;
}

}  // namespace

CpuSummary CpuSampler::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    CP_CHECK(m.running);
    m.stopping = true;
  }
  m.cv.notify_all();
  if (m.thread.joinable()) m.thread.join();
  std::vector<CpuTimes> now = m.read_stat();
  const double t_end = monotonic_seconds();
  auto procs_end = os::read_processes(m.proc_root);

  std::lock_guard lock(m.mu);
  m.running = false;
  // A last interval much shorter than interval_s holds a tick or two per core, which would
  // read as 0% or 100%: it counts for the maximum only when it is the only interval.
  if (m.intervals == 0 || t_end - m.t_last >= m.interval_s / 2) {
    m.close_interval_locked(now, t_end);
  }
  if (now.empty()) now = m.last;

  CpuSummary s;
  s.seconds = t_end - m.t_start;
  // Process CPU in % of one core: ticks used / ticks one core had in the window.
  const double window_ticks = add_core_figures(m.first, now, m.max_pct, s);
  // Threads of this process that ended in the window count with their last-seen time.
  if (auto self = procs_end.find(m.me);
      self != procs_end.end() && !self->second.thread_ns.empty()) {
    for (const auto& [tid, times] : m.self_seen) self->second.thread_ns.try_emplace(tid, times);
  }
  add_processes(m.procs_start, procs_end, m.me, window_ticks, s);
  auto busiest_first = [](const ProcLoad& a, const ProcLoad& b) {
    return a.cpu_pct != b.cpu_pct ? a.cpu_pct > b.cpu_pct : a.pid < b.pid;
  };
  std::sort(s.top.begin(), s.top.end(), busiest_first);
  os::CpuLimits limits(m.proc_root, m.fs_root);
  std::vector<ProcLoad> kept = notable_processes(s.top, limits, m.throttle_start);
  const double moved = mark_other_netns(kept, procs_end, m.proc_root, m.conn);
  s.server_pct += moved;
  s.other_pct = std::max(0.0, s.other_pct - moved);
  std::sort(kept.begin(), kept.end(), busiest_first);
  s.top = std::move(kept);
  s.server_pid = connection_instance(procs_end, m.proc_root, m.conn);
  return s;
}

}  // namespace cp::probe
