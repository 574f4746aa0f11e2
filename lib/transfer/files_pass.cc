#include "transfer/files_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "core/checksum.h"
#include "core/error.h"
#include "transfer/forked_session.h"

namespace cp::transfer {
namespace {

using files::Phase;
using files::PhaseStats;

// One operation: what it does to file `i` through a session; the bytes it
// moved.
using Op = std::function<uint64_t(Session&, uint64_t i)>;

// The state of one phase shared by its workers.
struct PhaseRun {
  const std::vector<uint64_t>* items = nullptr;  // files in visit order
  std::atomic<size_t> next{0};                   // the next item to take
  std::atomic<uint64_t> done{0};                 // operations completed
  std::atomic<uint64_t> bytes{0};
  std::atomic<unsigned> flying{0}, flying_max{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> budget_hit{false};
  std::mutex mu;  // guards the fields below
  files::LatencyHistogram hist;
  double busy_s = 0;  // the operations' summed time: Little's law gives the mean in flight
  std::string error;
  ErrorKind error_kind = ErrorKind::kIo;
  bool cancelled = false;
};

// Pulls items until they are gone, the phase stops (an error, the budget,
// cancellation) or `ok(i)` marks what it did.
void work(PhaseRun& run, Session& s, const Op& op, double start, double budget_s,
          uint64_t min_before_budget, const CancelToken& cancel, std::vector<char>* ok) {
  files::LatencyHistogram hist;
  double busy = 0;
  while (!run.stop.load()) {
    if (cancel.cancelled()) {
      std::lock_guard<std::mutex> lock(run.mu);
      run.cancelled = true;
      run.stop = true;
      break;
    }
    if (budget_s > 0 && run.done.load() >= min_before_budget &&
        monotonic_seconds() - start > budget_s) {
      run.budget_hit = true;
      run.stop = true;
      break;
    }
    const size_t k = run.next.fetch_add(1);
    if (k >= run.items->size()) break;
    const uint64_t i = (*run.items)[k];
    const unsigned now = run.flying.fetch_add(1) + 1;
    unsigned seen = run.flying_max.load();
    while (now > seen && !run.flying_max.compare_exchange_weak(seen, now)) {
    }
    const double t0 = monotonic_seconds();
    try {
      run.bytes += op(s, i);
    } catch (const Error& e) {
      run.flying.fetch_sub(1);
      std::lock_guard<std::mutex> lock(run.mu);
      if (run.error.empty()) {
        run.error = e.what();
        run.error_kind = e.kind();
      }
      run.cancelled = run.cancelled || e.kind() == ErrorKind::kCancelled;
      run.stop = true;
      break;
    }
    const double dt = monotonic_seconds() - t0;
    run.flying.fetch_sub(1);
    hist.add(dt);
    busy += dt;
    if (ok) (*ok)[i] = 1;
    run.done.fetch_add(1);
  }
  std::lock_guard<std::mutex> lock(run.mu);
  run.hist.merge(hist);
  run.busy_s += busy;
}

class Pass {
 public:
  // `depth` > 0: that many in flight (1: one at a time) on the one
  // session's own calls (Capabilities::file_ops_in_flight); 0: one per
  // session, a thread each.
  Pass(std::vector<Session*> sessions, unsigned depth, const DriverSpec& driver,
       const FilesPassOptions& opts, const CancelToken& cancel)
      : sessions_(std::move(sessions)),
        depth_(depth),
        driver_(driver),
        opts_(opts),
        cancel_(cancel) {
    const files::Tree& t = opts_.tree;
    CP_CHECK(t.dirs >= 1 && !opts_.root.empty());
    // Sequential: a directory at a time, as `cp -r` copies a tree and as the
    // disk's own pass runs (its rows are held against these).
    order_ =
        opts_.random ? files::visit_order(t.count, true, opts_.seed) : files::directory_order(t);
    created_.assign(t.count, 0);
    touched_.assign(t.count, 0);
    data_.assign(static_cast<size_t>(t.size), '\0');
    // The bytes the server agent's files_tree layout writes too, so a read
    // checks them whoever made the file.
    fill_pattern(data_.data(), data_.size(), 1, 0);
    buf_.resize(static_cast<size_t>(t.size) + 1);  // a byte more than a file: a longer one shows
  }

  FilesPassResult run() {
    if (opts_.only) return run_one(*opts_.only);
    FilesPassResult r;
    r.in_flight = in_flight();
    if (opts_.laid_out) {
      created_.assign(opts_.tree.count, 1);
      created_count_ = opts_.tree.count;
      dirs_made_ = std::min(opts_.tree.dirs, opts_.tree.count);
    } else {
      sessions_[0]->mkdir(opts_.root);
    }
    for (size_t p = 0; p < files::kPhases.size(); ++p) {
      const Phase phase = files::kPhases[p];
      if (opts_.before_phase) opts_.before_phase(phase);
      r.phases[p] = run_phase(phase);
      if (cancelled_) break;
    }
    r.created = created_count_;
    r.leftover = clean_up();
    if (cancelled_) cancel_.check();
    return r;
  }

 private:
  // One phase on its own (FilesPassOptions::only). A create that failed, or
  // any phase cancelled, removes everything; else the tree stays for the next
  // phase's request, and the delete phase removes it.
  FilesPassResult run_one(Phase phase) {
    FilesPassResult r;
    r.in_flight = in_flight();
    if (phase == Phase::create) {
      sessions_[0]->mkdir(opts_.root);
    } else {
      const uint64_t n = std::min(opts_.existing, opts_.tree.count);
      for (uint64_t k = 0; k < n; ++k) created_[order_[k]] = 1;
      created_count_ = n;
      dirs_made_ = std::min(opts_.tree.dirs, opts_.tree.count);
    }
    if (opts_.before_phase) opts_.before_phase(phase);
    const size_t p = static_cast<size_t>(phase);
    r.phases[p] = run_phase(phase);
    r.created = created_count_;
    const bool failed_create = phase == Phase::create && !r.phases[p].error.empty();
    if (phase == Phase::remove || failed_create || cancelled_) {
      r.leftover = clean_up();
    } else {
      r.kept = true;
    }
    if (cancelled_) cancel_.check();
    return r;
  }

  unsigned in_flight() const {
    return depth_ > 0 ? depth_ : static_cast<unsigned>(sessions_.size());
  }
  // What one operation of `phase` costs on the wire: the session's figures
  // for what it negotiated, else the driver table's (none serial).
  RoundTrips round_trips(Phase phase) const {
    const auto i = static_cast<size_t>(phase);
    const RoundTrips rt = sessions_[0]->file_round_trips()[i];
    return rt.total > 0 ? rt : RoundTrips{driver_.caps.file_round_trips[i], 0};
  }
  std::string path(uint64_t i) const { return opts_.root + "/" + opts_.tree.file_path(i); }
  std::string dir(uint64_t d) const { return opts_.root + "/" + opts_.tree.dir_name(d); }

  PhaseStats run_phase(Phase phase) {
    PhaseStats st;
    st.phase = phase;
    st.in_flight_mean = 0;
    st.in_flight_max = 0;
    const bool stat = phase == Phase::stat, dirs = phase == Phase::create;
    if (dirs && opts_.laid_out) {
      st.skipped = "laid out by the server agent";
      return st;
    }
    if ((stat && !driver_.caps.stat) || (dirs && !driver_.caps.mkdir)) {
      st.skipped = fmt::format("the {} driver cannot {}", driver_.name,
                               stat ? "stat a file" : "create a directory");
      return st;
    }
    if (phase != Phase::create && created_count_ == 0) {
      st.skipped = "no file was created";
      return st;
    }
    std::vector<uint64_t> items;
    for (uint64_t i : order_) {
      if (phase == Phase::create || created_[i]) items.push_back(i);
    }
    const double start = monotonic_seconds();
    std::string setup_error;
    if (phase == Phase::create) {
      // The directories first, one at a time: in the phase's time, not its
      // operations (a file each).
      try {
        for (uint64_t d = 0; d < std::min(opts_.tree.dirs, opts_.tree.count); ++d) {
          sessions_[0]->mkdir(dir(d));
          dirs_made_ = d + 1;
        }
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kCancelled) cancelled_ = true;
        st.error = e.what();
        st.seconds = monotonic_seconds() - start;
        return st;
      }
    }
    PhaseRun run;
    run.items = &items;
    const bool budgeted = phase != Phase::remove;
    const uint64_t min_before = std::max<uint64_t>(1, opts_.tree.count / 10);
    std::vector<char>* ok = phase == Phase::create ? &created_ : nullptr;
    if (phase == Phase::remove) removed_.assign(opts_.tree.count, 0);
    const Op op = op_of(phase);
    if (depth_ > 0) {
      on_one_session(run, phase, start, budgeted ? opts_.budget_s : 0, min_before, ok);
    } else if (sessions_.size() == 1) {
      work(run, *sessions_[0], op, start, budgeted ? opts_.budget_s : 0, min_before, cancel_, ok);
    } else {
      std::vector<std::thread> threads;
      for (Session* s : sessions_) {
        threads.emplace_back([&, s] {
          work(run, *s, op, start, budgeted ? opts_.budget_s : 0, min_before, cancel_, ok);
        });
      }
      for (auto& t : threads) t.join();
    }
    if (phase == Phase::remove && run.error.empty() && !run.stop.load()) {
      // Then the directories and the root, in the phase's time.
      try {
        for (uint64_t d = 0; d < dirs_made_; ++d) sessions_[0]->rmdir(dir(d));
        sessions_[0]->rmdir(opts_.root);
        root_removed_ = true;
      } catch (const Error& e) {
        run.error = e.what();
        run.error_kind = e.kind();
      }
    }
    st.seconds = monotonic_seconds() - start;
    st.ops = run.done.load();
    st.bytes = run.bytes.load();
    st.latency = files::summarize(run.hist);
    st.in_flight_max = run.flying_max.load();
    st.in_flight_mean = st.seconds > 0 ? run.busy_s / st.seconds : 0;
    st.budget_hit = run.budget_hit.load();
    const RoundTrips rt = round_trips(phase);
    st.round_trips = rt.total;
    st.serial_round_trips = rt.serial;
    cancelled_ = cancelled_ || run.cancelled;
    if (!run.error.empty()) {
      // A driver or server that cannot do it at all: skipped, with why.
      if (run.error_kind == ErrorKind::kUnsupported && st.ops == 0) {
        st.skipped = run.error;
      } else {
        st.error = run.error;
      }
    }
    if (phase == Phase::create) {
      created_count_ = st.ops;
    } else if (phase == Phase::remove) {
      for (uint64_t i : items) {
        if (removed_[i]) created_[i] = touched_[i] = 0;  // nothing for clean_up to try
      }
    }
    return st;
  }

  Op op_of(Phase phase) {
    switch (phase) {
      case Phase::create:
        return [this](Session& s, uint64_t i) -> uint64_t {
          touched_[i] = 1;
          auto f = s.open(path(i), Mode::kWrite, opts_.tree.size);
          if (!data_.empty()) f->write(data_.data(), data_.size());
          f->close();
          return data_.size();
        };
      case Phase::stat:
        return [this](Session& s, uint64_t i) -> uint64_t {
          s.stat(path(i));
          return 0;
        };
      case Phase::read:
        return [this](Session& s, uint64_t i) -> uint64_t {
          auto f = s.open(path(i), Mode::kRead, opts_.tree.size);
          // Each thread its own buffer: the reads of several run at once.
          thread_local std::vector<char> buf;
          buf.resize(buf_.size());
          // Read whole (a byte more fits: a longer file shows) and checked
          // against what was written, as a copy that verifies would.
          size_t got = 0;
          for (size_t n; got < buf.size() && (n = f->read(buf.data() + got, buf.size() - got)) > 0;)
            got += n;
          f->close();
          check_read(i, {buf.data(), got});
          return got;
        };
      case Phase::remove:
        return [this](Session& s, uint64_t i) -> uint64_t {
          s.remove(path(i));
          removed_[i] = 1;
          return 0;
        };
    }
    ::cp::check_failed("unknown phase", __FILE__, __LINE__);
  }

  // A file read whole (up to a byte more than written): throws unless it
  // holds what was written.
  void check_read(uint64_t i, std::span<const char> got) const {
    // A driver that keeps nothing (null) reads back the size alone.
    const bool differ = got.size() == data_.size() && driver_.caps.keeps_data &&
                        std::memcmp(got.data(), data_.data(), got.size()) != 0;
    if (got.size() == data_.size() && !differ) return;
    throw Error(ErrorKind::kIo,
                fmt::format("{}: read {}{} bytes of a file written with {}{}", path(i), got.size(),
                            got.size() > data_.size() ? " or more" : "", data_.size(),
                            got.size() == data_.size() ? ", and they differ" : ""),
                "the share changed the file, or another client did: check the server");
  }

  // The phase's operations on the one session, `depth_` in flight through
  // its own calls (Session::run_file_ops): as work() does per thread, the
  // budget and cancel checked before each start, an operation's latency
  // from its start to the end of its chain, the first error stopping it.
  void on_one_session(PhaseRun& run, Phase phase, double start, double budget_s,
                      uint64_t min_before, std::vector<char>* ok) {
    static constexpr FileOp kOps[] = {FileOp::kCreate, FileOp::kStat, FileOp::kRead,
                                      FileOp::kRemove};
    FileOps ops;
    ops.op = kOps[static_cast<size_t>(phase)];
    ops.depth = depth_;
    ops.data = {data_.data(), data_.size()};
    std::vector<double> began(opts_.tree.count, 0);  // seconds, per file started
    auto failed = [&](const Error& e) {
      if (run.error.empty()) {
        run.error = e.what();
        run.error_kind = e.kind();
      }
      run.cancelled = run.cancelled || e.kind() == ErrorKind::kCancelled;
      run.stop = true;
    };
    ops.next = [&](uint64_t& id, std::string& p) {
      if (run.stop.load()) return false;
      if (cancel_.cancelled()) {
        run.cancelled = true;
        run.stop = true;
        return false;
      }
      if (budget_s > 0 && run.done.load() >= min_before && monotonic_seconds() - start > budget_s) {
        run.budget_hit = true;
        run.stop = true;
        return false;
      }
      const size_t k = run.next.fetch_add(1);
      if (k >= run.items->size()) return false;
      id = (*run.items)[k];
      p = path(id);
      if (phase == Phase::create) touched_[id] = 1;
      run.flying_max = std::max(run.flying_max.load(), run.flying.fetch_add(1) + 1);
      began[id] = monotonic_seconds();
      return true;
    };
    ops.ended = [&](uint64_t id, std::span<const char> got, std::exception_ptr error) {
      const double dt = monotonic_seconds() - began[id];
      run.flying.fetch_sub(1);
      try {
        if (error) std::rethrow_exception(error);
        if (phase == Phase::read) check_read(id, got);
      } catch (const Error& e) {
        failed(e);
        return;
      }
      run.hist.add(dt);
      run.busy_s += dt;
      run.bytes += phase == Phase::create ? data_.size() : got.size();
      if (ok) (*ok)[id] = 1;
      if (phase == Phase::remove) removed_[id] = 1;
      run.done.fetch_add(1);
    };
    try {
      sessions_[0]->run_file_ops(ops);
    } catch (const Error& e) {
      failed(e);
    }
  }

  // Removes what is left (files a failed or stopped phase left, the
  // directories, the root), each removal tried once; "" when all went, else
  // the first failure.
  std::string clean_up() {
    std::string first;
    auto attempt = [&](const std::function<void()>& f) {
      try {
        f();
      } catch (const Error& e) {
        if (first.empty()) first = e.what();
      }
    };
    Session& s = *sessions_[0];
    for (uint64_t i = 0; i < opts_.tree.count; ++i) {
      if (created_[i]) {
        attempt([&] { s.remove(path(i)); });
      } else if (touched_[i]) {
        // A create that failed midway may have left the file: gone or not
        // there, either is fine.
        try {
          s.remove(path(i));
        } catch (const Error&) {
        }
      }
    }
    if (!root_removed_) {
      for (uint64_t d = 0; d < dirs_made_; ++d) attempt([&] { s.rmdir(dir(d)); });
      attempt([&] { s.rmdir(opts_.root); });
    }
    return first;
  }

  std::vector<Session*> sessions_;
  unsigned depth_ = 0;
  const DriverSpec& driver_;
  const FilesPassOptions& opts_;
  const CancelToken& cancel_;
  std::vector<uint64_t> order_;
  std::vector<char> created_, touched_, removed_;  // per file
  uint64_t created_count_ = 0, dirs_made_ = 0;
  std::string data_;  // a file's bytes
  std::vector<char> buf_;
  bool cancelled_ = false;
  bool root_removed_ = false;  // by the delete phase
};

}  // namespace

FilesPassResult run_files_pass(Session& session, const SessionSource& more,
                               const DriverSpec& driver, const FilesPassOptions& opts,
                               const CancelToken& cancel) {
  const unsigned want =
      std::max(1u, std::min({opts.in_flight, driver.caps.max_in_flight,
                             static_cast<unsigned>(std::max<uint64_t>(1, opts.tree.count))}));
  // On the one session's own calls where the driver keeps them so (one at
  // a time too: the same calls, one chain out).
  const bool one_session = driver.caps.file_ops_in_flight;
  std::vector<std::unique_ptr<Session>> extra;
  std::string note;
  if (want > 1 && more && !one_session) {
    try {
      while (extra.size() + 1 < want) {
        extra.push_back(driver.caps.threads ? more() : fork_session(more));
      }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      note = fmt::format("{} in flight asked, {} connected: {}", want, extra.size() + 1, e.what());
    }
  }
  std::vector<Session*> sessions = {&session};
  for (auto& s : extra) sessions.push_back(s.get());
  Pass pass(sessions, one_session ? want : 0, driver, opts, cancel);
  FilesPassResult r = pass.run();
  if (one_session && want > 1) {
    r.in_flight_note = fmt::format(
        "{} in flight on one connection: the {} driver's asynchronous calls", want, driver.name);
  } else if (!note.empty()) {
    r.in_flight_note = note;
  } else if (sessions.size() > 1) {
    r.in_flight_note = fmt::format("{} sessions, one thread each, one operation in flight on each",
                                   sessions.size());
  } else if (driver.caps.max_in_flight <= 1) {
    r.in_flight_note =
        fmt::format("one at a time: the {} driver keeps one operation in flight", driver.name);
  } else {
    r.in_flight_note = "one at a time, as asked";
  }
  return r;
}

}  // namespace cp::transfer
