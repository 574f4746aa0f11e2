// files_bench: one small-file pass on a local directory through the disk
// probe, exactly as the agent's `files` request runs it (probe::files_pass:
// a fresh root, its four phases, this end's CPU sampled per phase). The stage
// stores the same figures; this prints them with the create's syncfs apart,
// so bench/files.sh can hold the create against peers that do not sync
// (bonnie++ -n, fio's filecreate) as well as with it.
//
//   files_bench --dir /mnt/x [--count 131072] [--size 0] [--dirs 10]
//               [--order sequential|random] [--seed 1] [--no-cpu]
//
// Prints one line per phase: phase, ops, seconds, sync_seconds (of seconds),
// ops/s, ops/s without the syncfs, median/p99/max latency in us, and this
// process's CPU (user + system s) over the pass.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "bench_main.h"
#include "core/clock.h"
#include "core/error.h"
#include "probe/files.h"

namespace {

using namespace cp;

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "files_bench: " << why
            << "\nusage: files_bench --dir DIR [--count N] [--size BYTES] [--dirs N] [--order "
               "sequential|random] [--seed N] [--no-cpu]\n";
  std::exit(2);
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int run(int argc, char** argv) {
  std::string dir;
  probe::FilesOptions o;
  o.tree = {131072, 0, 10};
  o.budget = 0;
  o.seed = 1;
  bool with_cpu = true;  // as the agent runs it; --no-cpu: without the CPU sampler's thread
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-cpu") {
      with_cpu = false;
      continue;
    }
    if (i + 1 >= argc) usage("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--dir")
      dir = v;
    else if (a == "--count")
      o.tree.count = std::stoull(v);
    else if (a == "--size")
      o.tree.size = std::stoull(v);
    else if (a == "--dirs")
      o.tree.dirs = std::stoull(v);
    else if (a == "--seed")
      o.seed = std::stoull(v);
    else if (a == "--order" && (v == "sequential" || v == "random"))
      o.random = v == "random";
    else
      usage("unknown argument " + a + " " + v);
  }
  if (dir.empty()) usage("--dir is required");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) usage("cannot open directory " + dir);
  const std::string root = fmt::format("files-bench-{}", ::getpid());
  CancelToken cancel;
  const double cpu0 = cpu_seconds();
  const probe::FilesPassResult r = probe::files_pass(fd, dir, root, o, cancel, {}, with_cpu);
  const double cpu = cpu_seconds() - cpu0;
  ::close(fd);
  for (const probe::FilesPhaseResult& p : r.phases) {
    const files::PhaseStats& s = p.stats;
    const double unsynced = s.seconds - s.sync_seconds;
    fmt::print("{} {} {:.6f} {:.6f} {:.1f} {:.1f} {:.2f} {:.2f} {:.2f} {:.3f}\n",
               files::phase_name(s.phase), s.ops, s.seconds, s.sync_seconds, s.ops_per_second(),
               unsynced > 0 ? double(s.ops) / unsynced : 0.0, s.latency.median_us, s.latency.p99_us,
               s.latency.max_us, cpu);
  }
  fmt::print("fs_type {}\n", r.fs_type);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cp::bench::main_of("files_bench", run, argc, argv); }
