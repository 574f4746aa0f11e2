#include "app/report_commands.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "analysis/compare.h"
#include "analysis/ladder.h"
#include "app/help.h"
#include "core/error.h"
#include "core/random.h"
#include "core/text.h"
#include "report/compare_report.h"
#include "report/export.h"
#include "report/html.h"
#include "report/openmetrics.h"
#include "store/store.h"

namespace cp::app {
namespace {

namespace po = boost::program_options;

po::variables_map parse(const po::options_description& desc, const std::vector<std::string>& args,
                        const po::positional_options_description& pos) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(ErrorKind::kUsage, e.what(), "see --help");
  }
  return vm;
}

std::string db_path(const po::variables_map& vm) {
  return vm.count("db") ? vm["db"].as<std::string>() : Store::default_path();
}

bool to_tty(const std::ostream& out) { return (&out == &std::cout) && ::isatty(1) == 1; }

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

void write_run_html(const RunRecord& run, const analysis::Analysis& a, const std::string& path) {
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
  auto vm = parse(desc, args, pos);
  if (vm.count("help")) {
    show_help(out, desc);
    return 0;
  }
  const auto runs =
      vm.count("runs") ? vm["runs"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (runs.size() != 2) {
    throw Error(ErrorKind::kUsage, fmt::format("compare needs two runs, got {}", runs.size()),
                "name them by id or label: `chokepoint compare before after`; "
                "`chokepoint history` lists them");
  }
  Store::require_existing(db_path(vm));
  Store store(db_path(vm));
  const int64_t ida = store.resolve(runs[0]), idb = store.resolve(runs[1]);
  if (ida == idb) {
    throw Error(ErrorKind::kUsage,
                fmt::format("'{}' and '{}' are the same run ({})", runs[0], runs[1], ida),
                "compare two different runs: `chokepoint history` lists them");
  }
  const RunRecord a = store.load_run(ida);
  const RunRecord b = store.load_run(idb);
  const analysis::Comparison c = analysis::compare_runs(a, b);
  if (vm.count("html")) write_file_atomic(vm["html"].as<std::string>(), report::compare_html(c));
  if (vm.count("json")) {
    out << report::compare_json(c);
  } else {  // remote strings (facts, Samba config) escaped, as in `show` (core/text.h)
    out << report::compare_text(analysis::compare_runs(sanitized_run(a), sanitized_run(b)),
                                {to_tty(out)});
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
  auto vm = parse(desc, args, pos);
  if (vm.count("help")) {
    show_help(out, desc);
    return 0;
  }
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
  Store::require_existing(db_path(vm));
  Store store(db_path(vm));
  const RunRecord run = store.load_run(store.resolve(vm["run"].as<std::string>()));
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
