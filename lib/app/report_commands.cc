#include "app/report_commands.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "analysis/compare.h"
#include "analysis/ladder.h"
#include "app/help.h"
#include "app/options.h"
#include "app/trend.h"
#include "app/verdict_summary.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/random.h"
#include "core/text.h"
#include "core/units.h"
#include "report/compare_report.h"
#include "report/export.h"
#include "report/html.h"
#include "report/openmetrics.h"
#include "report/report.h"
#include "store/store.h"

namespace cp::app {
namespace {

namespace po = boost::program_options;

bool to_tty(const std::ostream& out) { return (&out == &std::cout) && ::isatty(1) == 1; }

// A date "2026-11-30" (UTC midnight), Unix seconds; nullopt when it is not one.
std::optional<double> parse_date(const std::string& s) {
  tm t{};
  const char* end = strptime(s.c_str(), "%Y-%m-%d", &t);
  if (!end || *end != '\0') return std::nullopt;
  return double(timegm(&t));
}

double parse_since(const std::string& s) {
  // "7d", "12h" ago, or a date "2026-11-30".
  if (!s.empty() && (s.back() == 'd' || s.back() == 'h')) {
    try {
      double n = std::stod(s.substr(0, s.size() - 1));
      return wall_seconds() - n * (s.back() == 'd' ? 86400 : 3600);
    } catch (const std::exception&) {
    }
  }
  if (auto d = parse_date(s)) return *d;
  throw Error(ErrorKind::kUsage, fmt::format("--since '{}' is not a date or an age", s),
              "write --since 2026-11-01, --since 7d or --since 12h");
}

int trend(const Store& store, VerdictRefresher& refresher, const po::variables_map& vm,
          std::ostream& out) {
  const Trend t = build_trend(store, refresher, vm["trend"].as<std::string>(),
                              vm.count("host") ? vm["host"].as<std::string>() : "");
  if (vm.count("html")) write_file_atomic(vm["html"].as<std::string>(), trend_html(t));
  out << trend_text(t);
  return 0;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  // A random temporary name, created (never opened: O_EXCL|O_NOFOLLOW) in the
  // target's directory: another user there can neither predict it nor plant a
  // link at it. The rename replaces `path` itself, even a link, never its target.
  const std::string tmp = path + ".tmp." + random_hex(8);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, fmt::format("cannot write '{}': {}", path, errno_text(errno)),
                "check that its directory exists and is writable");
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(ErrorKind::kIo, fmt::format("cannot write '{}': {}", path, errno_text(err)),
                  "check the free space of its file system");
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::kIo, fmt::format("cannot write '{}': {}", path, errno_text(err)),
                "check that its directory exists and is writable");
  }
}

stored::Run as_shown(stored::Run run, bool text) {
  return text ? stored::sanitized(run) : std::move(run);
}

void write_run_html(const stored::Run& run, const analysis::Analysis& a, const std::string& path) {
  write_file_atomic(path, report::run_html(run, a));
}

int compare_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "chokepoint compare A B [options]\n\n"
      "Holds run B against run A (ids, labels or \"latest\"): per layer both medians, the "
      "change, and whether it is real (Mann-Whitney U on the samples, p < 0.05), then what "
      "differs between the runs (kernel, MTU, readahead, TCP sysctls, Samba config, plan)");
  desc.add_options()("help,h", "this help")("runs", po::value<std::vector<std::string>>(),
                                            "the two runs")(
      "db", po::value<std::string>(), "SQLite database")("json", "print as JSON")(
      "html", po::value<std::string>(), "also write a self-contained HTML page to FILE");
  po::positional_options_description pos;
  pos.add("runs", -1);
  auto vm = parse_options(desc, args, &pos);
  if (help_asked(vm, desc, out)) return 0;
  const auto runs =
      vm.count("runs") ? vm["runs"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (runs.size() != 2) {
    throw Error(ErrorKind::kUsage, fmt::format("compare needs two runs, got {}", runs.size()),
                "name them by id or label: `chokepoint compare before after`; "
                "`chokepoint history` lists them");
  }
  const Store store(db_path(vm), Store::Access::kReadOnly);
  const int64_t ida = store.resolve(runs[0]), idb = store.resolve(runs[1]);
  if (ida == idb) {
    throw Error(ErrorKind::kUsage,
                fmt::format("'{}' and '{}' are the same run ({})", runs[0], runs[1], ida),
                "compare two different runs: `chokepoint history` lists them");
  }
  // Remote strings (facts, Samba config) escaped for text, as in `show`.
  const bool as_json = vm.count("json") > 0;
  const analysis::Comparison c = analysis::compare_runs(as_shown(store.load(ida), !as_json),
                                                        as_shown(store.load(idb), !as_json));
  report::require_common_rows(c);
  if (vm.count("html")) write_file_atomic(vm["html"].as<std::string>(), report::compare_html(c));
  if (as_json) {
    out << report::compare_json(c);
  } else {
    out << report::compare_text(c, {to_tty(out)});
  }
  return 0;
}

int history_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "chokepoint history [options]\n\n"
      "Lists stored runs, newest first, with their verdicts; --trend PATH follows one path\n"
      "(\"smb ram read\", \"server -> client\") over the runs between the same hosts");
  desc.add_options()("help,h", "this help")("db", po::value<std::string>(), "SQLite database")(
      "label", po::value<std::string>(), "only runs with this label")(
      "host", po::value<std::string>(), "only runs whose server or client name contains this")(
      "since", po::value<std::string>(), "only runs since a date (2026-11-01) or age (7d, 12h)")(
      "limit", po::value<int64_t>()->default_value(50), "at most this many runs (1 or more)")(
      "json", "print as JSON")("trend", po::value<std::string>(),
                               "the capping layer and figure of PATH over the runs, and what "
                               "changed between them")(
      "html", po::value<std::string>(), "with --trend: also write a self-contained HTML page");
  auto vm = parse_options(desc, args);
  if (help_asked(vm, desc, out)) return 0;
  if (vm.count("html") && !vm.count("trend")) {
    throw Error(ErrorKind::kUsage, "--html draws a trend: it needs --trend PATH",
                "write `chokepoint history --trend \"smb ram read\" --html trend.html`");
  }
  HistoryFilter f;
  if (vm.count("label")) f.label = vm["label"].as<std::string>();
  if (vm.count("host")) f.host = vm["host"].as<std::string>();
  if (vm.count("since")) f.since = parse_since(vm["since"].as<std::string>());
  const int64_t limit = vm["limit"].as<int64_t>();
  if (limit < 1) {
    throw Error(ErrorKind::kUsage, fmt::format("--limit {} is not a count of runs", limit),
                "give --limit 1 or more (the default is 50)");
  }
  f.limit = static_cast<size_t>(limit);
  const Store store(db_path(vm), Store::Access::kReadOnly);
  VerdictRefresher refresher(store);
  if (vm.count("trend")) return trend(store, refresher, vm, out);
  std::vector<RunListRow> rows = store.history(f);
  // Each run's stored verdict; one an older analysis wrote is derived again.
  refresher.refresh(rows);
  std::vector<analysis::Headline> verdicts;
  for (const auto& r : rows) verdicts.push_back(headline_of(r));
  // Labels, host names and stored verdicts came from users and peers: escaped
  // for the terminal (JSON escapes them itself).
  out << (vm.count("json") ? report::history_json(rows, verdicts)
                           : sanitize_text(report::history_text(rows, verdicts)));
  return 0;
}

int prune_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "chokepoint prune (--before DATE | --keep N) [options]\n\n"
      "Removes stored runs older than a date or beyond the newest N (with both: runs that are\n"
      "both), then reclaims their space. Labelled runs and runs a stored tune session names\n"
      "stay unless asked; a run still running always stays");
  desc.add_options()("help,h", "this help")("db", po::value<std::string>(), "SQLite database")(
      "before", po::value<std::string>(), "remove runs started before DATE (2026-06-01, UTC)")(
      "keep", po::value<int64_t>(), "keep the newest N runs, remove older ones")(
      "labelled", "remove labelled runs too")("tune-runs",
                                              "remove runs a stored tune session names too")(
      "dry-run", "list what would be removed, change nothing");
  auto vm = parse_options(desc, args);
  if (help_asked(vm, desc, out)) return 0;
  PruneFilter f;
  if (vm.count("before")) {
    const std::string d = vm["before"].as<std::string>();
    const auto t = parse_date(d);
    if (!t) {
      throw Error(ErrorKind::kUsage, fmt::format("--before '{}' is not a date", d),
                  "write the date as YYYY-MM-DD: --before 2026-06-01");
    }
    f.before = *t;
  }
  if (vm.count("keep")) {
    const int64_t n = vm["keep"].as<int64_t>();
    if (n < 1) {
      throw Error(ErrorKind::kUsage, fmt::format("--keep {} is not a count of runs", n),
                  "give --keep 1 or more");
    }
    f.keep = static_cast<size_t>(n);
  }
  if (f.before <= 0 && f.keep == 0) {
    throw Error(ErrorKind::kUsage, "prune needs --before DATE or --keep N",
                "e.g. `chokepoint prune --keep 100 --dry-run` to see what would go");
  }
  f.labelled = vm.count("labelled") > 0;
  f.tune_runs = vm.count("tune-runs") > 0;
  const bool dry = vm.count("dry-run") > 0;
  const std::string path = db_path(vm);
  // A dry run only reads; neither creates a database.
  Store::require_existing(path);
  Store store(path, dry ? Store::Access::kReadOnly : Store::Access::kReadWrite);
  const PruneResult r = store.prune(f, dry);
  for (const RunListRow& run : r.removed) {
    out << fmt::format("{} run {:>5}  {}  {}  {} -> {}{}\n", dry ? "would remove" : "removed",
                       run.id, iso_time(run.started_at), run.status, run.server, run.client,
                       run.label.empty() ? "" : "  \"" + run.label + "\"");
  }
  if (dry) {
    out << fmt::format("{} runs would be removed from {} ({} now); nothing changed\n",
                       r.removed.size(), path, format_size(r.bytes_before));
  } else {
    out << fmt::format(
        "removed {} runs from {}: {} -> {} ({} reclaimed)\n", r.removed.size(), path,
        format_size(r.bytes_before), format_size(r.bytes_after),
        format_size(r.bytes_before > r.bytes_after ? r.bytes_before - r.bytes_after : 0));
  }
  return 0;
}

int export_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "chokepoint export RUN [options]\n\n"
      "Every sample of a stored run, one row each, for spreadsheets and scripts");
  desc.add_options()("help,h", "this help")("run", po::value<std::string>(),
                                            "run id, label or \"latest\"")(
      "format", po::value<std::string>()->default_value("csv"),
      "csv | json | openmetrics (layer medians, ratios and verdicts)")(
      "db", po::value<std::string>(), "SQLite database")("output,o", po::value<std::string>(),
                                                         "write to FILE instead of stdout");
  po::positional_options_description pos;
  pos.add("run", 1);
  auto vm = parse_options(desc, args, &pos);
  if (help_asked(vm, desc, out)) return 0;
  if (!vm.count("run")) {
    throw Error(ErrorKind::kUsage, "export needs a run",
                "name one: `chokepoint export latest`, an id or a label from `chokepoint history`");
  }
  const std::string format = vm["format"].as<std::string>();
  if (format != "csv" && format != "json" && format != "openmetrics") {
    throw Error(ErrorKind::kUsage,
                fmt::format("--format '{}' is not csv, json or openmetrics", format),
                "write --format csv, --format json or --format openmetrics");
  }
  const Store store(db_path(vm), Store::Access::kReadOnly);
  const stored::Run run = store.load(store.resolve(vm["run"].as<std::string>()));
  const std::string text = format == "csv" ? report::export_csv(run)
                           : format == "json"
                               ? report::export_json(run)
                               : report::export_openmetrics(run, analysis::analyze(run));
  if (vm.count("output")) {
    write_file_atomic(vm["output"].as<std::string>(), text);
  } else {
    out << text;
  }
  return 0;
}

}  // namespace cp::app
