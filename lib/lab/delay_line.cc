#include "lab/delay_line.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "lab/sys.h"

namespace cp::lab {
namespace json = boost::json;

// --- the queue ----------------------------------------------------------------

DelayQueue::DelayQueue(int64_t delay_ns, uint64_t limit_bytes)
    : delay_ns_(delay_ns), limit_bytes_(limit_bytes) {
  CP_CHECK(delay_ns >= 0 && limit_bytes > 0);
}

bool DelayQueue::push(int64_t now_ns, std::vector<uint8_t> frame) {
  const uint64_t size = frame.size();
  if (bytes_ + size > limit_bytes_) {
    ++frames_dropped_;
    return false;
  }
  ++frames_in_;
  bytes_in_ += size;
  bytes_ += size;
  max_bytes_ = std::max(max_bytes_, bytes_);
  // A clock never runs backwards, so due times stay in order; clamp anyway.
  int64_t due = now_ns + delay_ns_;
  if (!q_.empty()) due = std::max(due, q_.back().due_ns);
  q_.push_back({due, std::move(frame)});
  return true;
}

int64_t DelayQueue::next_due_ns() const { return q_.empty() ? INT64_MAX : q_.front().due_ns; }

size_t DelayQueue::pop_due(int64_t now_ns, std::vector<std::vector<uint8_t>>* out) {
  size_t n = 0;
  while (!q_.empty() && q_.front().due_ns <= now_ns) {
    bytes_ -= q_.front().frame.size();
    out->push_back(std::move(q_.front().frame));
    q_.pop_front();
    ++n;
  }
  return n;
}

uint64_t delay_line_queue_bytes(uint64_t rate_bits, double delay_s) {
  const double rate = rate_bits > 0 ? static_cast<double>(rate_bits) : 10e9;
  const double held = rate / 8 * std::max(delay_s, 0.0);
  // At most 256 MiB: a long delay at a high rate must not take the machine's RAM.
  return std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(2 * held)), 4ull << 20, 256ull << 20);
}

std::vector<DelayLineStats> parse_delay_line_stats(const std::string& text) {
  std::vector<DelayLineStats> out;
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return {};
  const json::value* dirs = v.get_object().if_contains("directions");
  if (!dirs || !dirs->is_array()) return {};
  auto u64 = [](const json::object& o, std::string_view k) -> uint64_t {
    const json::value* x = o.if_contains(k);
    if (!x) return 0;
    if (x->is_uint64()) return x->get_uint64();
    if (x->is_int64() && x->get_int64() >= 0) return static_cast<uint64_t>(x->get_int64());
    return 0;
  };
  for (const json::value& d : dirs->get_array()) {
    if (!d.is_object()) return {};
    const json::object& o = d.get_object();
    const json::value* from = o.if_contains("from");
    const json::value* to = o.if_contains("to");
    if (!from || !from->is_string() || !to || !to->is_string()) return {};
    out.push_back({std::string(from->get_string()), std::string(to->get_string()), u64(o, "frames"),
                   u64(o, "bytes"), u64(o, "dropped"), u64(o, "send_errors"),
                   u64(o, "max_queued_bytes")});
  }
  return out;
}

// --- the process ------------------------------------------------------------

namespace {

constexpr double kStartWait = 10;  // seconds for the daemon to report
constexpr double kStopWait = 3;    // seconds after TERM before KILL
// Largest frame read: a 64 KiB GSO frame plus headers, with room to spare
// (BIG TCP can exceed 64 KiB; longer frames are counted as dropped).
constexpr size_t kFrameBuffer = 256 << 10;
constexpr int kSocketBuffer = 32 << 20;       // bytes: rcv/snd buffers of each port
constexpr int64_t kIdlePollNs = 100'000'000;  // wake this often to notice TERM
constexpr int kBatch = 64;                    // frames read per wake-up, before due ones are sent

std::atomic<bool> g_stop{false};

void on_term(int) { g_stop.store(true); }

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Direction {
  std::string from, to;
  int in = -1, out = -1;
  std::mutex mu;  // guards q and the counters below (the stats writer reads them)
  DelayQueue q;
  uint64_t send_errors = 0;
  uint64_t truncated = 0;
  Direction(std::string f, std::string t, int i, int o, int64_t delay, uint64_t limit)
      : from(std::move(f)), to(std::move(t)), in(i), out(o), q(delay, limit) {}
};

void forward(Direction& d) {
  std::vector<uint8_t> buf(kFrameBuffer);
  std::vector<std::vector<uint8_t>> due;
  while (!g_stop.load(std::memory_order_relaxed)) {
    int64_t next;
    due.clear();
    {
      std::lock_guard lock(d.mu);
      d.q.pop_due(now_ns(), &due);
      next = d.q.next_due_ns();
    }
    uint64_t errors = 0;
    for (const auto& f : due) {
      // Never block: a full qdisc (tbf) or send buffer drops the frame, as a switch would.
      if (send(d.out, f.data(), f.size(), MSG_DONTWAIT) < 0) ++errors;
    }
    const int64_t now = now_ns();
    const int64_t wait =
        std::clamp<int64_t>(next == INT64_MAX ? kIdlePollNs : next - now, 0, kIdlePollNs);
    pollfd p{d.in, POLLIN, 0};
    const timespec ts{static_cast<time_t>(wait / 1'000'000'000),
                      static_cast<long>(wait % 1'000'000'000)};
    const int r = ppoll(&p, 1, &ts, nullptr);
    uint64_t truncated = 0;
    if (r > 0 && (p.revents & POLLIN)) {
      for (int i = 0; i < kBatch; ++i) {
        const ssize_t n = recv(d.in, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0) break;
        if (static_cast<size_t>(n) > buf.size()) {
          ++truncated;
          continue;
        }
        std::vector<uint8_t> frame(buf.begin(), buf.begin() + n);
        std::lock_guard lock(d.mu);
        d.q.push(now_ns(), std::move(frame));
      }
    }
    if (errors || truncated) {
      std::lock_guard lock(d.mu);
      d.send_errors += errors;
      d.truncated += truncated;
    }
  }
}

std::string stats_json(const DelayLineConfig& cfg, std::vector<Direction*> dirs) {
  json::array arr;
  for (Direction* d : dirs) {
    std::lock_guard lock(d->mu);
    arr.push_back(json::object{{"from", d->from},
                               {"to", d->to},
                               {"frames", d->q.frames_in()},
                               {"bytes", d->q.bytes_in()},
                               {"dropped", d->q.frames_dropped() + d->truncated},
                               {"send_errors", d->send_errors},
                               {"max_queued_bytes", d->q.max_bytes_queued()}});
  }
  return json::serialize(json::object{{"pid", getpid()},
                                      {"delay_s", cfg.delay_s},
                                      {"queue_bytes", cfg.queue_bytes},
                                      {"directions", std::move(arr)}}) +
         "\n";
}

// A port's socket: raw frames with their offload header, promiscuous, not
// seeing its own sends. Returns -1 with *err set.
int open_port(const std::string& ifname, std::string* err) {
  const unsigned idx = if_nametoindex(ifname.c_str());
  if (idx == 0) {
    *err = fmt::format("no interface {}: {}", ifname, errno_text(errno));
    return -1;
  }
  // Protocol 0: nothing is queued before bind, i.e. before the options hold.
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = "socket(AF_PACKET): " + errno_text(errno);
    return -1;
  }
  const int one = 1;
  const int size = kSocketBuffer;
  packet_mreq mr{};
  mr.mr_ifindex = static_cast<int>(idx);
  mr.mr_type = PACKET_MR_PROMISC;
  struct {
    int level, name;
    const void* val;
    socklen_t len;
    const char* what;
  } opts[] = {
      {SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one, "PACKET_VNET_HDR"},
      {SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one, "PACKET_IGNORE_OUTGOING"},
      {SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr, "PACKET_MR_PROMISC"},
      {SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size, "SO_RCVBUFFORCE"},
      {SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size, "SO_SNDBUFFORCE"},
  };
  for (const auto& o : opts) {
    if (setsockopt(fd, o.level, o.name, o.val, o.len) != 0) {
      *err = fmt::format("setsockopt {} on {}: {}", o.what, ifname, errno_text(errno));
      close(fd);
      return -1;
    }
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(idx);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    *err = fmt::format("bind to {}: {}", ifname, errno_text(errno));
    close(fd);
    return -1;
  }
  return fd;
}

void report(int fd, const std::string& line) {
  const std::string text = line + "\n";
  [[maybe_unused]] ssize_t w = write(fd, text.data(), text.size());
}

// The daemon itself (the grandchild); never returns.
[[noreturn]] void daemon_main(const DelayLineConfig& cfg, int report_fd, int netns_fd) {
  prctl(PR_SET_NAME, kDelayLineComm);
  // Wake-ups at the due time, not up to 50 us later (the default slack).
  prctl(PR_SET_TIMERSLACK, 1UL);
  auto fail = [&](const std::string& why) {
    report(report_fd, "error " + why);
    _exit(1);
  };
  if (setns(netns_fd, CLONE_NEWNET) != 0)
    fail("setns into " + cfg.netns + ": " + errno_text(errno));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int log_fd = open(cfg.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (null_fd < 0 || log_fd < 0) fail("cannot open " + cfg.log_file + ": " + errno_text(errno));
  dup2(null_fd, 0);
  dup2(log_fd, 1);
  dup2(log_fd, 2);
  // Only stdio and the report pipe (as fd 3) stay open: nothing of the
  // caller's (its lab lock above all) lives on in the daemon.
  if (report_fd != 3) {
    dup2(report_fd, 3);
    report_fd = 3;
  }
  close_range(4, ~0U, 0);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);

  std::string err;
  const int a = open_port(cfg.port_a, &err);
  if (a < 0) fail(err);
  const int b = open_port(cfg.port_b, &err);
  if (b < 0) fail(err);
  const auto delay = static_cast<int64_t>(std::llround(cfg.delay_s * 1e9));
  Direction ab(cfg.port_a, cfg.port_b, a, b, delay, cfg.queue_bytes);
  Direction ba(cfg.port_b, cfg.port_a, b, a, delay, cfg.queue_bytes);
  try {
    sys::write_file(cfg.pid_file, fmt::format("{}\n", getpid()), 0644);
    sys::write_file(cfg.stats_file, stats_json(cfg, {&ab, &ba}), 0644);
  } catch (const Error& e) {
    fail(e.what());
  }
  std::thread t1([&] { forward(ab); });
  std::thread t2([&] { forward(ba); });
  fmt::print("{} forwarding {} <-> {} in {}, delay {:g} ms, queue {} bytes per direction\n",
             kDelayLineComm, cfg.port_a, cfg.port_b, cfg.netns, cfg.delay_s * 1e3, cfg.queue_bytes);
  std::fflush(stdout);
  report(report_fd, fmt::format("ok {}", getpid()));
  close(report_fd);
  while (!g_stop.load()) {
    for (int i = 0; i < 10 && !g_stop.load(); ++i) usleep(100'000);
    try {
      sys::write_file(cfg.stats_file, stats_json(cfg, {&ab, &ba}), 0644);
    } catch (const Error& e) {
      fmt::print(stderr, "{}: stats: {}\n", kDelayLineComm, e.what());
    }
  }
  t1.join();
  t2.join();
  try {
    sys::write_file(cfg.stats_file, stats_json(cfg, {&ab, &ba}), 0644);
  } catch (const Error&) {
  }
  fmt::print("{} stopped\n", kDelayLineComm);
  std::fflush(stdout);
  _exit(0);
}

}  // namespace

pid_t start_delay_line(const DelayLineConfig& cfg) {
  CP_CHECK(cfg.delay_s >= 0 && cfg.queue_bytes > 0);
  const std::string ns_path = "/run/netns/" + cfg.netns;
  const int ns_fd = open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot open {}: {}", ns_path, errno_text(errno)),
                "`chokepoint lab down`, then `chokepoint lab up`");
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    const int e = errno;
    close(ns_fd);
    throw Error(ErrorKind::kIo, "pipe: " + errno_text(e));
  }
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    const int e = errno;
    close(ns_fd);
    close(p[0]);
    close(p[1]);
    throw Error(ErrorKind::kIo, "fork: " + errno_text(e));
  }
  if (child == 0) {
    // A session of its own, then a grandchild that init adopts.
    close(p[0]);
    setsid();
    const pid_t g = fork();
    if (g != 0) _exit(g < 0 ? 1 : 0);
    daemon_main(cfg, p[1], ns_fd);
  }
  close(ns_fd);
  close(p[1]);
  int status = 0;
  waitpid(child, &status, 0);
  std::string text;
  const double deadline = monotonic_seconds() + kStartWait;
  char buf[512];
  while (monotonic_seconds() < deadline) {
    pollfd pf{p[0], POLLIN, 0};
    if (poll(&pf, 1, 100) <= 0) continue;
    const ssize_t n = read(p[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.find('\n') != std::string::npos) break;
  }
  close(p[0]);
  if (text.rfind("ok ", 0) == 0) {
    const std::vector<pid_t> pids = sys::parse_pids(text.substr(3));
    if (pids.size() == 1) return pids[0];
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  throw Error(
      ErrorKind::kIo,
      fmt::format("the delay line in {} did not start: {}", cfg.netns,
                  text.rfind("error ", 0) == 0 ? text.substr(6)
                                               : "no word from it (see " + cfg.log_file + ")"),
      "fix what it names, then `chokepoint lab up` again");
}

bool delay_line_alive(pid_t pid) {
  return pid > 0 && sys::process_alive(pid) && sys::process_comm(pid) == kDelayLineComm;
}

void stop_delay_line(pid_t pid) {
  if (delay_line_alive(pid)) sys::stop_process(pid, kStopWait);
}

}  // namespace cp::lab
