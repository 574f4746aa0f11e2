// transfer_bench: moves one file between a local file (a tmpfs, so the local
// side costs nothing) and a share through a chokepoint transfer driver,
// exactly as the client agent does: connect, open, stream 1 MiB blocks,
// close. bench/protocols.sh holds it against curl and smbclient.
//
//   transfer_bench --driver smb --url smb://198.18.0.1/ram --user cplab
//                  --password-file /var/lib/chokepoint-lab/share_password
//                  get run-1/a.dat /dev/shm/a.dat      (or: put LOCAL REMOTE, rm REMOTE)
//   transfer_bench ... files ROOT COUNT SIZE  (the small-file pass, as the
//                  client agent's files_share runs it: one directory, one
//                  operation in flight; prints each phase's ops/s; with
//                  --in-flight N, N at once as the driver keeps them, and
//                  with --sessions on a session per operation in flight
//                  even where the driver could keep them on one)
//
// Prints one line: op, bytes, seconds (open to close, and whole run), MB/s,
// XXH3 of the bytes moved, the peak RSS (KiB), the CPU this process spent
// from open to close (user + system seconds), and the session's properties
// (what the driver kept in flight: in_flight_bytes, request_size, depth).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_main.h"
#include "core/checksum.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/files_pass.h"

namespace {

using namespace cp;

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "transfer_bench: " << why
            << "\nusage: transfer_bench --driver NAME --url URL [--user U] [--password-env VAR | "
               "--password-file FILE] [--option k=v]... [--block SIZE] [--size-hint BYTES] "
               "[--in-flight N] [--sessions] get "
               "REMOTE LOCAL | put LOCAL REMOTE | rm REMOTE | files ROOT COUNT SIZE\n";
  std::exit(2);
}

std::string read_password_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::kConfig, "cannot read password file " + path);
  std::string pw;
  std::getline(in, pw);
  return pw;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long peak_rss_kib(int who = RUSAGE_SELF) {
  rusage ru{};
  getrusage(who, &ru);
  return ru.ru_maxrss;
}

// The small-file pass over the share (transfer/files_pass.h), one directory
// and `in_flight` operations in flight (1: as a copy tool keeps them): a
// line with each phase's operations, seconds and mean in flight, and the
// CPU this process spent over the pass.
int files_pass(transfer::Session& session, const transfer::Share& share, const std::string& driver,
               const std::vector<std::string>& words, unsigned in_flight, bool sessions,
               const CancelToken& cancel) {
  transfer::DriverSpec spec = transfer::driver_spec(driver);
  if (sessions) spec.caps.file_ops_in_flight = false;
  transfer::SessionSource more = [&] {
    return transfer::make_driver(driver)->connect(share, cancel);
  };
  transfer::FilesPassOptions o;
  o.in_flight = in_flight;
  o.root = words[1];
  o.tree = {
      .count = parse_size(words[2], "COUNT"), .size = parse_size(words[3], "SIZE"), .dirs = 1};
  o.budget_s = 0;
  const double cpu0 = cpu_seconds();
  const transfer::FilesPassResult r = transfer::run_files_pass(session, more, spec, o, cancel);
  std::cout << fmt::format("op=files in_flight={} cpu_seconds={:.3f}", r.in_flight,
                           cpu_seconds() - cpu0);
  for (const files::PhaseStats& p : r.phases) {
    const std::string name(files::phase_name(p.phase));
    std::cout << fmt::format(
        " {}_ops={} {}_seconds={:.6f} {}_per_s={:.1f} {}_in_flight_mean={:.2f}", name, p.ops, name,
        p.seconds, name, p.seconds > 0 ? p.ops / p.seconds : 0.0, name, p.in_flight_mean);
    if (!p.error.empty() || !p.skipped.empty()) {
      std::cerr << "transfer_bench: " << name << ": " << p.error << p.skipped << "\n";
    }
  }
  std::cout << "\n";
  return r.leftover.empty() ? 0 : 1;
}

int run(int argc, char** argv) {
  const double t0 = monotonic_seconds();
  std::string driver_name, user, password;
  transfer::Share share;
  size_t block = 1 << 20;
  // get: the size the caller expects, as the orchestrator tells the client
  // agent (0: none).
  uint64_t size_hint = 0;
  bool hint_given = false;  // puts: else the local file's size
  unsigned in_flight = 1;   // files: operations in flight
  bool sessions = false;    // files: a session per operation in flight
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--driver") {
      driver_name = value();
    } else if (a == "--url") {
      share.url = value();
    } else if (a == "--user") {
      share.user = value();
    } else if (a == "--password-env") {
      const char* v = std::getenv(value().c_str());
      share.password = v ? v : "";
    } else if (a == "--password-file") {
      share.password = read_password_file(value());
    } else if (a == "--option") {
      const std::string kv = value();
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) usage("--option takes key=value");
      share.options[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a == "--block") {
      block = parse_size(value(), "--block");
    } else if (a == "--size-hint") {
      size_hint = parse_size(value(), "--size-hint");
      hint_given = true;
    } else if (a == "--in-flight") {
      in_flight = static_cast<unsigned>(parse_size(value(), "--in-flight"));
    } else if (a == "--sessions") {
      sessions = true;
    } else if (!a.empty() && a[0] == '-') {
      usage("unknown option " + a);
    } else {
      words.push_back(a);
    }
  }
  if (driver_name.empty() || share.url.empty() || words.empty()) usage("missing arguments");
  const std::string op = words[0];
  if (!((op == "get" || op == "put") && words.size() == 3) && !(op == "rm" && words.size() == 2) &&
      !(op == "files" && words.size() == 4)) {
    usage("say get REMOTE LOCAL, put LOCAL REMOTE, rm REMOTE or files ROOT COUNT SIZE");
  }
  CancelToken cancel;
  auto driver = transfer::make_driver(driver_name);
  const double c0 = monotonic_seconds();
  auto session = driver->connect(share, cancel);
  const double connect_seconds = monotonic_seconds() - c0;
  if (op == "rm") {
    session->remove(words[1]);
    return 0;
  }
  if (op == "files") {
    return files_pass(*session, share, driver_name, words, in_flight, sessions, cancel);
  }
  std::vector<char> buf(block);
  Checksum sum;
  uint64_t bytes = 0;
  double t1 = 0, t2 = 0, cpu1 = 0, cpu2 = 0;
  if (op == "get") {
    const int fd = ::open(words[2].c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(ErrorKind::kIo, words[2] + ": " + errno_text(errno));
    t1 = monotonic_seconds();
    cpu1 = cpu_seconds();
    auto f = session->open(words[1], transfer::Mode::kRead, size_hint);
    while (size_t n = f->read(buf.data(), buf.size())) {
      sum.update(buf.data(), n);
      if (::write(fd, buf.data(), n) != static_cast<ssize_t>(n)) {
        throw Error(ErrorKind::kIo, words[2] + ": " + errno_text(errno));
      }
      bytes += n;
    }
    f->close();
    t2 = monotonic_seconds();
    cpu2 = cpu_seconds();
    ::close(fd);
  } else {
    const int fd = ::open(words[1].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(ErrorKind::kIo, words[1] + ": " + errno_text(errno));
    t1 = monotonic_seconds();
    cpu1 = cpu_seconds();
    // The file's size, as the client agent tells the driver (--size-hint:
    // another; 0 tells none).
    struct stat st {};
    if (!hint_given && ::fstat(fd, &st) == 0) size_hint = static_cast<uint64_t>(st.st_size);
    auto f = session->open(words[2], transfer::Mode::kWrite, size_hint);
    for (;;) {  // as the client agent does: into the driver's buffers
      const std::span<char> room = f->write_buffer(buf.size());
      const ssize_t n = ::read(fd, room.data(), room.size());
      if (n < 0) throw Error(ErrorKind::kIo, words[1] + ": " + errno_text(errno));
      if (n == 0) break;
      sum.update(room.data(), static_cast<size_t>(n));
      f->commit_write(static_cast<size_t>(n));
      bytes += static_cast<uint64_t>(n);
    }
    f->close();
    t2 = monotonic_seconds();
    cpu2 = cpu_seconds();
    ::close(fd);
  }
  const double total = monotonic_seconds() - t0;
  // The session ends first, so that its helper processes (smb connections>1)
  // have been waited for and count in RUSAGE_CHILDREN (the largest one's peak).
  const auto props = session->properties();
  session.reset();
  std::cout << fmt::format(
      "op={} bytes={} seconds={:.6f} connect_seconds={:.6f} total_seconds={:.6f} mbps={:.1f} "
      "xxh3={} peak_rss_kib={} helper_peak_rss_kib={} cpu_seconds={:.6f}",
      op, bytes, t2 - t1, connect_seconds, total, t2 > t1 ? bytes / (t2 - t1) / kMB : 0.0,
      sum.hex(), peak_rss_kib(), peak_rss_kib(RUSAGE_CHILDREN), cpu2 - cpu1);
  for (const auto& [k, v] : props) {
    if (k == "in_flight_bytes" || k == "request_size" || k == "depth" || k == "max_read_size" ||
        k == "max_write_size" || k == "requests_in_flight" || k == "io_size" ||
        k == "handshake_rtt_ms" || k == "path_rtt_ms" || k == "path_rtt_samples" ||
        k == "connections" || k == "connections_chosen") {
      std::cout << " " << k << "=" << v;
    }
  }
  std::cout << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cp::bench::main_of("transfer_bench", run, argc, argv); }
