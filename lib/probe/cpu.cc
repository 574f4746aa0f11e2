#include "probe/cpu.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "probe/text_file.h"

namespace cp::probe {
namespace {

constexpr size_t kTopProcesses = 5;

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool to_u64(std::string_view s, uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

struct ProcSample {
  std::string comm;
  uint64_t jiffies = 0;
  uint64_t start_ticks = 0;
};

std::map<int, ProcSample> scan_processes(const std::string& proc_root) {
  std::map<int, ProcSample> out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return out;
  std::string text;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    int pid = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || p != name.data() + name.size() || pid <= 0) continue;
    // A process may exit between readdir and read: just skip it.
    if (!read_text_file(fmt::format("{}/{}/stat", proc_root, pid), &text)) continue;
    ProcSample s;
    if (parse_pid_stat(text, &s.comm, &s.jiffies, &s.start_ticks)) out[pid] = std::move(s);
  }
  ::closedir(dir);
  return out;
}

// Busy % of a core between two snapshots; -1 when the counters did not advance.
double busy_pct(const CpuTimes& a, const CpuTimes& b) {
  if (b.total <= a.total || b.busy < a.busy) return -1;
  return std::min(
      100.0, 100.0 * static_cast<double>(b.busy - a.busy) / static_cast<double>(b.total - a.total));
}

}  // namespace

std::vector<CpuTimes> parse_proc_stat(std::string_view text) {
  std::vector<CpuTimes> cores;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
    std::vector<std::string_view> f = split_ws(line);
    size_t index = 0;
    auto [p, ec] = std::from_chars(f[0].data() + 3, f[0].data() + f[0].size(), index);
    if (ec != std::errc() || p != f[0].data() + f[0].size() || index > 65535) continue;
    // user nice system idle iowait irq softirq steal guest guest_nice (older kernels: fewer)
    uint64_t v[8] = {};
    bool ok = f.size() >= 5;
    for (size_t k = 0; ok && k < 8 && k + 1 < f.size(); ++k) ok = to_u64(f[k + 1], &v[k]);
    if (!ok) continue;
    if (cores.size() <= index) cores.resize(index + 1);
    cores[index].busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    cores[index].total = cores[index].busy + v[3] + v[4];
  }
  return cores;
}

bool parse_pid_stat(std::string_view text, std::string* comm, uint64_t* jiffies,
                    uint64_t* start_ticks) {
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
  *comm = std::string(text.substr(open + 1, close - open - 1));
  *jiffies = utime + stime;
  return true;
}

struct CpuSampler::Impl {
  double interval_s;
  std::string proc_root;

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
  std::map<int, ProcSample> procs_start;

  // Reads /proc/stat; empty when unreadable.
  std::vector<CpuTimes> read_stat() {
    std::string text;
    if (!read_text_file(proc_root + "/stat", &text)) return {};
    return parse_proc_stat(text);
  }

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
      lock.lock();
      if (stopping) return;
      close_interval_locked(now, t);
    }
  }
};

CpuSampler::CpuSampler(double interval_s, std::string proc_root) : impl_(std::make_unique<Impl>()) {
  CP_CHECK(interval_s > 0);
  impl_->interval_s = interval_s;
  impl_->proc_root = std::move(proc_root);
}

CpuSampler::~CpuSampler() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void CpuSampler::start() {
  Impl& m = *impl_;
  std::vector<CpuTimes> first = m.read_stat();
  if (first.empty()) {
    throw Error(ErrorKind::kIo, fmt::format("cannot read CPU times from {}/stat", m.proc_root),
                "chokepoint needs a Linux /proc to measure CPU load");
  }
  auto procs = scan_processes(m.proc_root);
  {
    std::lock_guard lock(m.mu);
    CP_CHECK(!m.running);
    m.running = true;
    m.stopping = false;
    m.t_start = m.t_last = monotonic_seconds();
    m.first = m.last = std::move(first);
    m.max_pct.assign(m.first.size(), -1);
    m.intervals = 0;
    m.procs_start = std::move(procs);
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
  auto procs_end = scan_processes(m.proc_root);

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
  const size_t n = std::min(m.first.size(), now.size());
  uint64_t busy_sum = 0, total_sum = 0;
  size_t cores_counted = 0;
  for (size_t i = 0; i < n; ++i) {
    double avg = busy_pct(m.first[i], now[i]);
    double mx = i < m.max_pct.size() ? m.max_pct[i] : -1;
    s.core_busy_pct.push_back(std::max(avg, 0.0));
    // The max over intervals is never below the average (the short tail may have been dropped).
    s.core_busy_max_pct.push_back(std::max({mx, avg, 0.0}));
    if (avg >= 0) {
      busy_sum += now[i].busy - m.first[i].busy;
      total_sum += now[i].total - m.first[i].total;
      ++cores_counted;
    }
  }
  if (total_sum > 0) s.total_busy_pct = 100.0 * static_cast<double>(busy_sum) / total_sum;

  // Process CPU in % of one core: ticks used / ticks one core had in the window. /proc/stat
  // and /proc/PID/stat count the same ticks, so the window is measured in them too.
  double window_ticks = cores_counted > 0 ? static_cast<double>(total_sum) / cores_counted : 0;
  if (window_ticks <= 0) window_ticks = s.seconds * static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (window_ticks > 0) {
    for (const auto& [pid, p] : procs_end) {
      uint64_t base = 0;
      auto it = m.procs_start.find(pid);
      // Same pid and start time: the same process; otherwise it started in the window.
      if (it != m.procs_start.end() && it->second.start_ticks == p.start_ticks) {
        base = it->second.jiffies;
      }
      if (p.jiffies <= base) continue;
      s.top.push_back({pid, p.comm, 100.0 * static_cast<double>(p.jiffies - base) / window_ticks});
    }
  }
  std::sort(s.top.begin(), s.top.end(), [](const ProcLoad& a, const ProcLoad& b) {
    return a.cpu_pct != b.cpu_pct ? a.cpu_pct > b.cpu_pct : a.pid < b.pid;
  });
  if (s.top.size() > kTopProcesses) s.top.resize(kTopProcesses);
  return s;
}

}  // namespace cp::probe
