#include "agent_server/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "agent_server/client_role.h"
#include "agent_server/file_ops.h"
#include "agent_server/files_tree.h"
#include "agent_server/run_dir.h"
#include "agent_server/smb_status.h"
#include "agent_server/tcp_ops.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/facts_message_json.h"
#include "core/messages_json.h"
#include "core/process.h"
#include "core/units.h"
#include "core/wire.h"
#include "probe/cpu.h"
#include "probe/disk.h"
#include "probe/files.h"
#include "probe/sysinfo.h"
#include "probe/tcp.h"
#include "tune_agent/agent_requests.h"

namespace cp::agent {
namespace {

namespace json = boost::json;

int g_signal_pipe = -1;

// Seconds between heartbeats while a request runs (the orchestrator's
// [timeouts] silence and stall are several of these).
constexpr double kHeartbeatSeconds = 1.0;

void on_signal(int sig) {
  const char c = static_cast<char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe, &c, 1);
}

uint64_t max_rss_kb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss);
}

// A file name the orchestrator chose for a sample: a plain name, so the agent
// only ever writes inside its own run directory.
std::string checked_name(const std::string& name, const std::string& type) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos || name.size() > 200) {
    std::string shown;
    for (char c : name.substr(0, 200)) {
      shown +=
          (static_cast<unsigned char>(c) < 0x20) ? fmt::format("\\x{:02x}", c) : std::string(1, c);
    }
    throw Error(
        ErrorKind::kPeer,
        fmt::format("message '{}': field 'name' is not a plain file name: '{}'", type, shown),
        "the orchestrator and agent builds differ, or the peer is not chokepoint");
  }
  return name;
}

// Seconds the agent waits, once it stops, for a request that does not
// return (a worker blocked in the filesystem: a hung mount, a FIFO): after a
// signal the user wants it gone; after the channel closed no one waits.
constexpr double kSignalGraceSeconds = 2;
constexpr double kEofGraceSeconds = 10;

// One request as its handler sees it.
struct Request {
  const json::object& msg;  // the whole message: type, id and its fields
  const std::string& type;
  uint64_t id;
  const CancelToken& cancel;
};

class Agent {
 public:
  Agent(int in_fd, int out_fd, int signal_fd, AgentOptions options)
      : in_(in_fd), out_(out_fd), signal_fd_(signal_fd), options_(std::move(options)) {
    if (options_.client_role) client_ = options_.client_role();
  }

  int run();

 private:
  // The requests: the type on the wire -> its handler (like fio's ioengines
  // table); `handle` only looks the type up.
  using Handler = json::object (Agent::*)(const Request&);
  struct Op {
    std::string_view type;
    Handler handler;
  };
  static const Op kOps[];

  // Serialised frame writes: the worker and the reader both send.
  void send(json::object msg);
  void reply(uint64_t id, json::object data);
  void fail(uint64_t id, const Error& e);
  void worker_loop();
  json::object handle(const json::object& req, const CancelToken& cancel);
  // Sends the request's progress frames, at most one every 0.5 s.
  ProgressFn progress_to(uint64_t id);
  template <class T>
  T decode(const Request& r) {
    return msg::decode<T>(r.msg, r.type);
  }
  json::object do_hello(const Request&);
  json::object do_facts(const Request& r);
  json::object do_prepare(const Request& r);
  json::object do_clean_orphans(const Request& r);
  json::object do_check_space(const Request& r);
  json::object do_disk(const Request& r);
  json::object do_files(const Request& r);
  json::object do_tcp_listen(const Request& r);
  json::object do_tcp_run(const Request& r);
  json::object do_tcp_result(const Request& r);
  json::object do_make_file(const Request& r);
  json::object do_file_info(const Request& r);
  json::object do_remove_file(const Request& r);
  json::object do_cpu_start(const Request&);
  json::object do_cpu_stop(const Request&);
  json::object do_transfer(const Request& r);
  json::object do_size_scan(const Request& r);
  json::object do_files_share(const Request& r);
  json::object do_files_tree(const Request& r);
  json::object do_smb_status(const Request& r);
  json::object do_close_shares(const Request&);
  json::object do_stats(const Request&);
  json::object do_cleanup(const Request&);
  json::object do_tune(const Request& r);
  ClientRole& client(const std::string& type);
  const RunDir& prepared(const std::string& base);  // under dirs_mu_
  std::string run_dir_path(const std::string& base);
  // The request's file: its prepared run dir's fd + its checked name.
  RunFile run_file(const std::string& base, const std::string& name, const std::string& type);
  void cleanup();
  void remove_run_dirs();
  // After the grace: exits the process, cleaning what a blocked worker allows.
  [[noreturn]] void abandon_worker(int rc);
  void shutdown(const char* why);
  void heartbeat();

  int in_, out_;
  int signal_fd_;  // readable when SIGINT/SIGTERM/SIGHUP arrived
  AgentOptions options_;
  std::mutex write_mu_;
  bool out_broken_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<json::object> queue_;
  bool stopping_ = false;  // no new requests; worker exits when idle
  bool bye_ = false;
  std::shared_ptr<CancelToken> current_;  // the request being served
  uint64_t current_id_ = 0;
  std::atomic<double> last_send_{0};  // monotonic s of the last frame sent

  bool worker_done_ = false;  // under mu_

  // Base dir -> the run dir made in it. The worker's, but the reader thread
  // removes them when the worker is stuck: never held across blocking I/O
  // but their removal (try-locked there).
  std::timed_mutex dirs_mu_;
  std::map<std::string, RunDir> run_dirs_;

  // Worker-thread state.
  std::unique_ptr<probe::TcpServer> tcp_server_;
  std::unique_ptr<probe::CpuSampler> cpu_watch_;  // cpu_start .. cpu_stop
  // The protocol clients: null in the static server agent.
  std::unique_ptr<ClientRole> client_;
};

const Agent::Op Agent::kOps[] = {
    {"hello", &Agent::do_hello},
    {"facts", &Agent::do_facts},
    {"prepare", &Agent::do_prepare},
    {"sweep_orphans", &Agent::do_clean_orphans},
    {"check_space", &Agent::do_check_space},
    {"disk", &Agent::do_disk},
    {"files", &Agent::do_files},
    {"tcp_listen", &Agent::do_tcp_listen},
    {"tcp_run", &Agent::do_tcp_run},
    {"tcp_result", &Agent::do_tcp_result},
    {"make_file", &Agent::do_make_file},
    {"file_info", &Agent::do_file_info},
    {"remove_file", &Agent::do_remove_file},
    {"cpu_start", &Agent::do_cpu_start},
    {"cpu_stop", &Agent::do_cpu_stop},
    {"transfer", &Agent::do_transfer},
    {"sweep", &Agent::do_size_scan},  // the size scan's cells; its wire name kept
    {"files_share", &Agent::do_files_share},
    {"files_tree", &Agent::do_files_tree},
    {"smb_status", &Agent::do_smb_status},
    {"close_shares", &Agent::do_close_shares},
    {"stats", &Agent::do_stats},
    {"cleanup", &Agent::do_cleanup},
    {"tune_plan", &Agent::do_tune},
    {"tune_apply", &Agent::do_tune},
    {"tune_confirm", &Agent::do_tune},
    {"tune_revert", &Agent::do_tune},
};

void Agent::send(json::object msg) {
  std::string frame = wire::encode(std::move(msg));
  std::lock_guard<std::mutex> lock(write_mu_);
  if (out_broken_) return;
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = write(out_, frame.data() + off, frame.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out_broken_ = true;  // channel gone: the reader sees EOF and we clean up
      return;
    }
    off += static_cast<size_t>(n);
  }
  last_send_ = monotonic_seconds();
}

void Agent::reply(uint64_t id, json::object data) {
  send({{"type", "result"}, {"id", id}, {"data", std::move(data)}});
}

void Agent::fail(uint64_t id, const Error& e) {
  send({{"type", "error"},
        {"id", id},
        {"error", msg::to_json(msg::ErrorInfo{to_string(e.kind()), e.what(), e.hint()})}});
}

ProgressFn Agent::progress_to(uint64_t id) {
  return [this, id, last = 0.0](uint64_t bytes, double secs) mutable {
    if (secs - last < 0.5) return;
    last = secs;
    json::object frame = msg::to_json(msg::Progress{bytes, secs});
    frame["type"] = "progress";
    frame["id"] = id;
    send(std::move(frame));
  };
}

json::object Agent::do_hello(const Request&) {
  utsname u{};
  uname(&u);
  msg::Hello h{
      options_.version, options_.build_id, wire::kProtocolVersion,      getpid(), u.nodename,
      u.sysname,        u.machine,         client_ ? "full" : "server", {}};
  if (client_) h.drivers = client_->drivers();
  h.tune_at_start = tune::start_report();  // the run that started this agent reports it
  return msg::to_json(h);
}

// The probe's whole description of the host (core/facts_message.h).
json::object Agent::do_facts(const Request& r) {
  return msg::to_json(probe::collect_facts(decode<msg::FactsRequest>(r)));
}

json::object Agent::do_prepare(const Request& r) {
  const auto q = decode<msg::PrepareRequest>(r);
  msg::PrepareResult out;
  for (const std::string& base : q.dirs) {
    {
      std::lock_guard<std::timed_mutex> lock(dirs_mu_);
      if (auto it = run_dirs_.find(base); it != run_dirs_.end()) {
        // Prepared already (a share behind the disk stage's own disk_dir): a
        // share needs it open to the protocol server's user too.
        if (q.shared) share_run_dir(it->second);
        out.dirs[base] = it->second.path;
        continue;
      }
    }
    // Run directories of agents that were killed (SIGKILL, a crash, a reboot).
    std::vector<msg::RunDirEntry> kept;
    for (auto& s : clean_orphan_run_dirs(base, &kept)) out.swept.push_back(std::move(s));
    for (auto& k : kept) {
      if (!k.refused.empty()) out.refused.push_back(std::move(k));
    }
    RunDir d = make_run_dir(base, owner_record_json(q.run), q.shared);
    out.dirs[base] = d.path;
    std::lock_guard<std::timed_mutex> lock(dirs_mu_);
    run_dirs_.emplace(base, std::move(d));
  }
  return msg::to_json(out);
}

json::object Agent::do_clean_orphans(const Request& r) {
  msg::CleanOrphansResult out;
  for (const std::string& dir : decode<msg::CleanOrphansRequest>(r).dirs) {
    for (auto& s : clean_orphan_run_dirs(dir, &out.kept)) out.removed.push_back(std::move(s));
  }
  return msg::to_json(out);
}

const RunDir& Agent::prepared(const std::string& base) {
  auto it = run_dirs_.find(base);
  if (it == run_dirs_.end()) {
    throw Error(ErrorKind::kPeer, fmt::format("directory '{}' was not prepared", base));
  }
  return it->second;
}

std::string Agent::run_dir_path(const std::string& base) {
  std::lock_guard<std::timed_mutex> lock(dirs_mu_);
  return prepared(base).path;
}

RunFile Agent::run_file(const std::string& base, const std::string& name, const std::string& type) {
  const std::string plain = checked_name(name, type);
  std::lock_guard<std::timed_mutex> lock(dirs_mu_);
  const RunDir& d = prepared(base);
  return {d.fd.get(), plain, d.path + "/" + plain};
}

json::object Agent::do_check_space(const Request& r) {
  const auto q = decode<msg::CheckSpaceRequest>(r);
  const std::string& base = q.dir;
  const std::string dir = run_dir_path(base);
  const uint64_t need = q.bytes;
  probe::FsSpace s = probe::fs_space(dir);
  // Refuse when the stage would leave less than 10 % of the filesystem free.
  const double left = double(s.avail) - double(need);
  if (left < 0.10 * double(s.total)) {
    throw Error(ErrorKind::kIo,
                fmt::format("not enough space in '{}': the stage needs {} and {} of {} is free; "
                            "that would leave under 10 % free",
                            base, format_size(need), format_size(s.avail), format_size(s.total)),
                !q.hint.empty() ? q.hint
                                : "free some space, or use smaller or fewer files ([disk] sizes, "
                                  "count)");
  }
  // The directory's filesystem, so the runner can tell a "ram" share on a disk.
  std::string fs;
  try {
    fs = probe::fs_type(dir);
  } catch (const Error&) {
    fs = "unknown";
  }
  // ... and the disk under it ("sda", "md2"; null for tmpfs), so the runner can
  // tell a disk share on another disk than the one the disk stage measured.
  msg::CheckSpaceResult out{s.total, s.avail, fs, ""};
  if (const auto d = probe::dir_device_facts(dir)) out.disk = d->disk;
  return msg::to_json(out);
}

// A file the agent itself made in a run directory: lstat'ed (fstatat without
// following) and owned by this uid; else Error(kIo).
void check_own_file(const RunFile& f) {
  struct stat st {};
  if (::fstatat(f.dir_fd, f.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    throw fileio::open_error(errno, f.path);
  }
  if (S_ISLNK(st.st_mode)) throw fileio::open_error(ELOOP, f.path);
  if (st.st_uid != ::geteuid()) {
    throw Error(
        ErrorKind::kIo,
        fmt::format("'{}' belongs to uid {}, not to the agent: left alone", f.path, st.st_uid),
        "another user of the server planted it in the run directory; remove it and "
        "find out who did");
  }
}

json::object Agent::do_disk(const Request& r) {
  const auto q = decode<msg::DiskRequest>(r);
  const RunFile f = run_file(q.dir, q.name, r.type);
  const std::string& path = f.path;
  if (q.block < 4096 || q.block > (16u << 20) || q.block % 4096 != 0) {
    throw Error(ErrorKind::kConfig, fmt::format("disk block size {} is not a multiple of 4 KiB "
                                                "between 4 KiB and 16 MiB",
                                                q.block));
  }
  const auto block = static_cast<uint32_t>(q.block);
  ProgressFn progress = progress_to(r.id);
  probe::CpuSampler cpu;
  cpu.start();
  probe::DiskResult d;
  if (q.op == "write") {
    d = probe::disk_write(path, q.size, block, r.cancel, progress);
  } else if (q.op == "syncwrite") {
    // The synchronous write rate: nothing reads the file back.
    d = probe::disk_write(path, q.size, block, r.cancel, progress, true, /*flush_each=*/true);
    if (q.delete_after) ::unlinkat(f.dir_fd, f.name.c_str(), 0);
  } else if (q.op == "read") {
    // The probe opens by path (O_DIRECT): only a file of this uid, not a link,
    // which no other user can swap in a sticky (or private) run directory.
    // (The write's O_CREAT|O_EXCL refuses a planted one by itself.)
    check_own_file(f);
    d = probe::disk_read(path, block, r.cancel, progress);
    if (q.delete_after) ::unlinkat(f.dir_fd, f.name.c_str(), 0);
  } else {
    throw Error(ErrorKind::kPeer,
                fmt::format("message 'disk': field 'op' must be read, write or syncwrite, "
                            "not '{}'",
                            q.op));
  }
  return msg::to_json(msg::DiskResult{d.bytes, d.seconds, d.direct, d.cache_possible, d.method,
                                      d.huge_page, cpu.stop(), d.cache_reason});
}

// One small-file pass on this end's disk (probe/files.h), in a fresh
// directory `name` of the run directory.
json::object Agent::do_files(const Request& r) {
  const auto q = decode<msg::FilesRequest>(r);
  if (q.order != "sequential" && q.order != "random") {
    throw Error(ErrorKind::kPeer,
                fmt::format("message 'files': field 'order' must be sequential or random, not "
                            "'{}'",
                            q.order.substr(0, 40)),
                "the orchestrator and agent builds differ: redeploy the agent");
  }
  const RunFile f = run_file(q.dir, q.name, r.type);
  probe::FilesOptions o;
  o.tree = {q.count, q.size, q.dirs};
  o.random = q.order == "random";
  o.seed = q.seed;
  o.budget = q.budget;
  const probe::FilesPassResult p =
      probe::files_pass(f.dir_fd, f.path.substr(0, f.path.size() - f.name.size() - 1), f.name, o,
                        r.cancel, progress_to(r.id));
  msg::FilesResult out{{}, p.fs_type, p.cache_possible, p.cache_reason};
  for (const auto& ph : p.phases) out.phases.push_back({ph.stats, ph.cpu});
  return msg::to_json(out);
}

json::object Agent::do_tcp_listen(const Request& r) {
  const auto q = decode<msg::TcpListenRequest>(r);
  tcp_server_.reset();
  // On the address the peer connects to, not every address, where this host has it.
  const std::string address = probe::listen_address_for(q.bind);
  tcp_server_ = std::make_unique<probe::TcpServer>(address, 0, q.tokens);
  return msg::to_json(msg::TcpListenResult{tcp_server_->port(), address});
}

json::object Agent::do_tcp_run(const Request& r) {
  return msg::to_json(tcp_run_op(decode<msg::TcpRunRequest>(r), r.cancel, progress_to(r.id)));
}

json::object Agent::do_tcp_result(const Request& r) {
  const auto q = decode<msg::TcpResultRequest>(r);
  if (!tcp_server_) throw Error(ErrorKind::kPeer, "tcp_result before tcp_listen");
  return msg::to_json(tcp_result_op(*tcp_server_, q, r.cancel));
}

json::object Agent::do_smb_status(const Request& r) {
  return msg::to_json(smb_status_op(decode<msg::SmbStatusRequest>(r)));
}

uint32_t block_of(uint64_t block) {
  if (block < 4096 || block > (16u << 20)) {
    throw Error(ErrorKind::kConfig, fmt::format("block size {} is outside 4 KiB .. 16 MiB", block));
  }
  return static_cast<uint32_t>(block);
}

json::object Agent::do_make_file(const Request& r) {
  const auto q = decode<msg::FileRequest>(r);
  if (!r.msg.contains("size")) wire::field(r.msg, "size");  // throws: missing
  const RunFile f = run_file(q.dir, q.name, r.type);
  msg::FileResult made =
      make_pattern_file(f, q.size, block_of(q.block), q.evict, q.shared ? 0644 : 0600, r.cancel);
  // Evicted, yet a filesystem cache of its own (ZFS's ARC) may still serve it.
  if (q.evict) {
    const probe::os::CacheVerdict v = probe::cache_verdict_of(f.path, made.bytes, true);
    made.cache_possible = v.cache_possible;
    made.cache_reason = v.reason;
  }
  return msg::to_json(made);
}

json::object Agent::do_file_info(const Request& r) {
  const auto q = decode<msg::FileRequest>(r);
  return msg::to_json(
      checksum_file(run_file(q.dir, q.name, r.type), block_of(q.block), q.evict, r.cancel));
}

json::object Agent::do_remove_file(const Request& r) {
  const auto q = decode<msg::FileRequest>(r);
  const RunFile f = run_file(q.dir, q.name, r.type);
  // unlinkat never follows a link: a planted one goes, its target stays.
  return msg::to_json(msg::RemoveFileResult{::unlinkat(f.dir_fd, f.name.c_str(), 0) == 0});
}

json::object Agent::do_cpu_start(const Request& r) {
  const auto q = decode<msg::CpuStartRequest>(r);
  if (q.port < 0 || q.port > 65535) {
    throw Error(ErrorKind::kPeer, fmt::format("cpu_start: port {} is no TCP port", q.port),
                "the orchestrator and agent builds differ: redeploy the agent");
  }
  cpu_watch_ = std::make_unique<probe::CpuSampler>();
  cpu_watch_->start({static_cast<int>(q.port), q.peer});
  return {};
}

json::object Agent::do_cpu_stop(const Request&) {
  if (!cpu_watch_) throw Error(ErrorKind::kPeer, "cpu_stop without cpu_start");
  json::object out = msg::to_json(cpu_watch_->stop()).as_object();
  cpu_watch_.reset();
  return out;
}

ClientRole& Agent::client(const std::string& type) {
  if (!client_) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("this is the server agent (chokepoint-agent-server): it has no "
                            "protocol clients, so it cannot serve '{}'",
                            type),
                "protocol stages run on the client end, which needs the full chokepoint-agent "
                "(built with the transfer drivers)");
  }
  return *client_;
}

json::object Agent::do_transfer(const Request& r) {
  ClientRole& role = client(r.type);
  const auto q = decode<msg::TransferRequest>(r);
  return msg::to_json(
      role.transfer(q, {r.cancel, progress_to(r.id), run_file(q.dir, q.name, r.type)}));
}

json::object Agent::do_size_scan(const Request& r) {
  ClientRole& role = client(r.type);
  return msg::to_json(
      role.size_scan(decode<msg::SizeScanRequest>(r), {r.cancel, progress_to(r.id), {}}));
}

json::object Agent::do_files_share(const Request& r) {
  ClientRole& role = client(r.type);
  return msg::to_json(
      role.files_share(decode<msg::FilesShareRequest>(r), {r.cancel, progress_to(r.id), {}}));
}

json::object Agent::do_files_tree(const Request& r) {
  const auto q = decode<msg::FilesTreeRequest>(r);
  const files::Tree tree{.count = q.count, .size = q.size, .dirs = std::max<uint64_t>(1, q.dirs)};
  const RunFile at = run_file(q.dir, q.name, r.type);
  if (q.action == "layout") return msg::to_json(lay_out_tree(at, tree, r.cancel));
  if (q.action == "drop") return msg::to_json(drop_tree(at, tree, r.cancel));
  if (q.action == "remove") return msg::to_json(remove_tree(at, tree));
  throw Error(ErrorKind::kPeer,
              "message 'files_tree': field 'action' must be layout, drop or remove");
}

json::object Agent::do_close_shares(const Request&) {
  if (client_) client_->close_shares();
  return {};
}

json::object Agent::do_stats(const Request&) { return msg::to_json(msg::AgentStats{max_rss_kb()}); }

json::object Agent::do_cleanup(const Request&) {
  cleanup();
  return msg::to_json(msg::AgentStats{max_rss_kb()});
}

json::object Agent::do_tune(const Request& r) { return tune::handle_tune_request(r.type, r.msg); }

json::object Agent::handle(const json::object& req, const CancelToken& cancel) {
  const wire::Envelope env = wire::envelope(req);
  const Request r{req, env.type, env.id, cancel};
  for (const Op& op : kOps) {
    if (op.type == env.type) return (this->*op.handler)(r);
  }
  throw Error(ErrorKind::kPeer, fmt::format("unknown message type '{}'", env.type),
              "the orchestrator and agent builds differ: redeploy the agent");
}

void Agent::worker_loop() {
  for (;;) {
    json::object req;
    std::shared_ptr<CancelToken> token;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      req = std::move(queue_.front());
      queue_.pop_front();
      current_ = token = std::make_shared<CancelToken>();
      current_id_ = wire::envelope(req).id;
    }
    const wire::Envelope env = wire::envelope(req);
    const uint64_t id = env.id;
    if (env.type == "bye") {
      cleanup();
      reply(id, msg::to_json(msg::AgentStats{max_rss_kb()}));
      std::lock_guard<std::mutex> lock(mu_);
      bye_ = true;
      stopping_ = true;
      return;
    }
    try {
      reply(id, handle(req, *token));
    } catch (const Error& e) {
      fail(id, e);
    } catch (const std::exception& e) {
      fail(id, Error(ErrorKind::kIo, e.what()));
    }
    std::lock_guard<std::mutex> lock(mu_);
    current_.reset();
  }
}

void Agent::cleanup() {
  if (client_) client_->close_shares();  // log out before the run dirs go
  cpu_watch_.reset();
  tcp_server_.reset();
  remove_run_dirs();
}

void Agent::remove_run_dirs() {
  std::unique_lock<std::timed_mutex> lock(dirs_mu_, std::defer_lock);
  // The worker may hold it, blocked in a removal of its own: then it stays.
  if (!lock.try_lock_for(std::chrono::seconds(1))) return;
  for (const auto& [base, d] : run_dirs_) {
    const int base_fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base_fd < 0) continue;
    remove_tree_at(base_fd, d.path.substr(d.path.rfind('/') + 1));
    ::close(base_fd);
  }
  run_dirs_.clear();
}

void Agent::abandon_worker(int rc) {
  remove_run_dirs();
  // Knobs back too, unless the stuck request holds tune's lock itself.
  auto revert = std::make_shared<std::promise<void>>();
  std::thread([revert] {
    tune::revert_at_agent_exit();
    revert->set_value();
  }).detach();
  revert->get_future().wait_for(std::chrono::seconds(2));
  ::_exit(rc);  // the worker's thread cannot be joined, nor the Agent destroyed under it
}

// From the reader thread, while a request is served: the orchestrator tells
// a slow request (heartbeats keep coming) from a stopped agent (silence).
void Agent::heartbeat() {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!current_) return;
    id = current_id_;
  }
  if (monotonic_seconds() - last_send_ < kHeartbeatSeconds) return;
  send({{"type", "heartbeat"}, {"id", id}});
}

void Agent::shutdown(const char* why) {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  queue_.clear();
  if (current_) current_->cancel();
  if (client_) client_->cancel_sessions();
  cv_.notify_all();
}

int Agent::run() {
  // The sentinel: one strict line the orchestrator waits for; everything a
  // login shell printed before it is skipped.
  const std::string line = wire::sentinel_line(options_.build_id);
  if (write(out_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 1;

  // SIGINT/SIGTERM/SIGHUP reach this (reader) thread only: the worker and the
  // threads it starts block them, so a signal never lands in a worker's
  // blocked call (EINTR there would be luck, not a way out).
  sigset_t stop_signals, old_mask;
  sigemptyset(&stop_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
  std::thread worker([this] {
    worker_loop();
    std::lock_guard<std::mutex> lock(mu_);
    worker_done_ = true;
    cv_.notify_all();
  });
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  wire::Decoder decoder;
  char buf[65536];
  int rc = 0;
  double grace = kEofGraceSeconds;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bye_) break;
    }
    pollfd fds[2] = {{in_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
    int n = poll(fds, 2, 200);
    if (n < 0 && errno == EINTR) continue;
    heartbeat();
    if (fds[1].revents) {
      shutdown("signal");
      rc = 1;
      grace = kSignalGraceSeconds;
      break;
    }
    if (!fds[0].revents) continue;
    ssize_t got = read(in_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {  // the channel closed: the orchestrator is gone
      shutdown("eof");
      break;
    }
    try {
      decoder.feed(std::string_view(buf, static_cast<size_t>(got)));
      while (auto msg = decoder.next()) {
        if (wire::envelope(*msg).type == "cancel") {
          std::lock_guard<std::mutex> lock(mu_);
          if (current_) current_->cancel();
          continue;
        }
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(std::move(*msg));
        cv_.notify_all();
      }
    } catch (const Error& e) {
      // The stream cannot be resynchronised after a bad frame: say why, stop.
      fail(0, e);
      shutdown("protocol");
      rc = 2;
      break;
    }
  }
  {
    // A worker blocked in the filesystem (cancel cannot reach a hung open)
    // must not keep the agent: past the grace it goes without it.
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::duration<double>(grace), [&] { return worker_done_; })) {
      lock.unlock();
      abandon_worker(rc);
    }
  }
  worker.join();
  cleanup();
  tune::revert_at_agent_exit();  // channel closed, bye or signal: put knobs back
  return rc;
}

}  // namespace

int serve(int in_fd, int out_fd, const AgentOptions& options) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  g_signal_pipe = fds[1];
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  tune::revert_at_agent_start();  // a killed session's knobs, before anything else
  Agent agent(in_fd, out_fd, fds[0], options);
  return agent.run();
}

}  // namespace cp::agent
