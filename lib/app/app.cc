#include "app/app.h"

#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "analysis/ladder.h"
#include "app/command_table.h"
#include "app/generate.h"
#include "app/help.h"
#include "app/info_commands.h"
#include "app/options.h"
#include "app/push.h"
#include "app/report_commands.h"
#include "app/run_progress.h"
#include "app/run_status.h"
#include "app/signals.h"
#include "app/terminal.h"
#include "app/tune_command.h"
#include "app/verdict_summary.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/facts_message_json.h"
#include "core/messages_json.h"
#include "core/text.h"
#include "core/units.h"
#include "core/version.h"
#include "core/wire.h"
#include "lab/lab.h"
#include "lab/lab_cli.h"
#include "lab/layout.h"
#include "link/agent_link.h"
#include "pipeline/eta.h"
#include "pipeline/plan.h"
#include "pipeline/runner.h"
#include "remote/endpoint.h"
#include "report/report.h"
#include "store/store.h"
#include "transfer/driver.h"

namespace cp::app {
namespace {

namespace po = boost::program_options;
namespace json = boost::json;

// The first SIGINT/SIGTERM/SIGHUP cancels the run; a second exits at once.
CancelToken g_cancel;

// Ctrl-C ends a run within 2 s whatever the agents do. The orderly path
// (cancel, kCancelGrace per agent, channels closed) takes about 1 s; when it
// has not finished 1.5 s after the signal (an SSH close that blocks, a
// connect under way), this marks the run interrupted on its own connection
// and exits.
class CancelWatchdog {
 public:
  CancelWatchdog(std::string db, int64_t run_id)
      : db_(std::move(db)), run_(run_id), thread_([this] { loop(); }) {}
  ~CancelWatchdog() { disarm(); }
  void disarm() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    double since = 0;
    while (!done_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!g_cancel.cancelled()) continue;
      if (since == 0) since = monotonic_seconds();
      if (monotonic_seconds() - since < 1.5 || done_) continue;
      try {
        Store store(db_);
        store.end_run(run_, kInterrupted, "interrupted by a signal (agents abandoned)");
      } catch (const std::exception&) {
        // The next open of the database marks it interrupted (its writer is gone).
      }
      static const char msg[] =
          "chokepoint: interrupted; agents abandoned (they clean up when "
          "their channel closes)\n";
      [[maybe_unused]] ssize_t n = write(2, msg, sizeof msg - 1);
      _exit(kExitInterrupted);
    }
  }
  std::string db_;
  int64_t run_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Prints `run` (as_shown: escaped for text) as analyzed once by the caller
// (`a`), as text or JSON; text gives each finding in brief unless `explain`.
void print_run(const stored::Run& run, const analysis::Analysis& a, bool as_json, bool explain) {
  if (as_json) {
    std::cout << report::run_json(run, a);
  } else {
    report::TextOptions o;
    o.color = isatty(1) == 1;
    o.explain = explain;
    std::cout << report::run_text(run, a, o);
  }
  std::cout.flush();
}

// A share's password from its declared source: an environment variable, a
// file only its owner can read, or a prompt on the terminal (echo off).
std::optional<std::string> read_password(const pipeline::SharePlan& s) {
  const std::string who = fmt::format("share '{}'", s.name);
  if (!s.password_env.empty()) {
    const char* v = std::getenv(s.password_env.c_str());
    if (!v) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: password_env names {}, which is not set", who, s.password_env),
                  fmt::format("export {}=... in the shell that runs chokepoint", s.password_env));
    }
    return std::string(v);
  }
  if (!s.password_file.empty()) {
    struct stat st {};
    if (stat(s.password_file.c_str(), &st) != 0) {
      throw Error(ErrorKind::kConfig, fmt::format("{}: cannot read password_file '{}': {}", who,
                                                  s.password_file, errno_text(errno)));
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: password_file '{}' is not a file of yours (owner uid {}, you "
                              "are {})",
                              who, s.password_file, st.st_uid, geteuid()),
                  "put the password alone in a file you own, readable only by you (chmod 600), "
                  "and name that file");
    }
    std::ifstream in(s.password_file);
    std::string line, extra;
    std::getline(in, line);
    int more = 0;
    while (std::getline(in, extra)) more += !extra.empty();
    // A file of many lines (/etc/passwd) is not a password file: never
    // suggest chmod on it.
    if (more > 0) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: password_file '{}' holds {} lines; a password file holds the "
                              "password alone",
                              who, s.password_file, more + 1),
                  "put the password alone in a file of its own, readable only by you (chmod 600), "
                  "and name that file");
    }
    if (st.st_mode & 077) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: password_file '{}' can be read by others (mode {:o})", who,
                              s.password_file, st.st_mode & 0777),
                  fmt::format("chmod 600 {}", s.password_file));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }
  if (s.password_prompt) {
    FILE* tty = std::fopen("/dev/tty", "r+");
    if (!tty) {
      throw Error(ErrorKind::kConfig, who + ": password_prompt needs a terminal",
                  "use password_env or password_file when running without one");
    }
    std::fprintf(tty, "password for %s (%s): ", s.name.c_str(), s.url.c_str());
    std::fflush(tty);
    termios old{};
    tcgetattr(fileno(tty), &old);
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
    char buf[512] = {};
    const bool got = std::fgets(buf, sizeof buf, tty) != nullptr;
    tcsetattr(fileno(tty), TCSAFLUSH, &old);
    std::fputc('\n', tty);
    std::fclose(tty);
    std::string pw = got ? buf : "";
    while (!pw.empty() && (pw.back() == '\n' || pw.back() == '\r')) pw.pop_back();
    return pw;
  }
  return std::nullopt;
}

// The agents' links: give up on an agent silent past [timeouts] silence,
// stop on Ctrl-C, and say on the progress line whom the run waits on.
void configure_link(remote::AgentLink& link, const pipeline::Plan& plan, ProgressPrinter& out) {
  link.set_silence_limit(plan.silence_timeout);
  link.set_default_cancel(&g_cancel);
  link.set_wait_observer([&out](const std::string& who, double silent, double limit) {
    out.waiting(who, silent, limit);
  });
}

// diagnose --push: the stored run's metrics to a Pushgateway. A failed push
// loses nothing (the run is stored): it is reported, and a run that was
// otherwise complete exits kExitFailed.
int push_stored_run(const stored::Run& run, const analysis::Analysis& a, const std::string& base,
                    int rc) {
  try {
    const std::string url = push_run(run, a, base);
    std::cerr << fmt::format("chokepoint: run {}'s metrics pushed to {}\n", run.id, url);
  } catch (const Error& e) {
    std::cerr << "chokepoint: " << describe(e) << "\n";
    return rc == kExitComplete ? kExitFailed : rc;
  }
  return rc;
}

po::options_description diagnose_options() {
  po::options_description desc("chokepoint diagnose [options]");
  desc.add_options()("help,h", "this help")("server", po::value<std::string>(),
                                            "the file server: SSH host or alias, or 'local'")(
      "client", po::value<std::string>(), "the client: SSH host or alias, or 'local'")(
      "lab", "diagnose the built-in lab (`chokepoint lab up`); the default without --server")(
      "plan", po::value<std::string>(), "plan file (see examples/plan.ini)")(
      "label", po::value<std::string>()->default_value(""), "a label stored with the run")(
      "db", po::value<std::string>(), "SQLite database (default: under $XDG_DATA_HOME)")(
      "json", "print the report as JSON")(
      "explain", "give each finding with its full evidence (text; JSON and HTML always have it)")(
      "html", po::value<std::string>(), "also write a self-contained HTML report to FILE")(
      "ssh-config", po::value<std::string>(), "SSH config file (default ~/.ssh/config)")(
      "accept-new-host-keys", "add unknown host keys to known_hosts (changed keys stay refused)")(
      "share", po::value<std::vector<std::string>>()->composing(),
      "a share to measure: NAME=URL,server_dir=DIR,medium=ram|disk[,user=U]"
      "[,password_env=VAR|password_file=F|password_prompt=yes][,options=k=v...] (repeatable)")(
      "dry-run",
      "check the plan, the shares and their passwords, print what would be measured; "
      "connect to nothing, store nothing")(
      "push", po::value<std::string>(),
      "after the run, push its metrics to the Prometheus Pushgateway at URL")("quiet,q",
                                                                              "no progress output");
  return desc;
}

// --dry-run: what would be measured, as text or JSON.
void print_dry_run(const Targets& t, const pipeline::Plan& plan, const std::string& disk_dir_note,
                   bool as_json) {
  if (as_json) {
    json::array stages;
    for (const pipeline::StageOutline& o : pipeline::plan_outline(plan)) {
      stages.push_back(
          {{"stage", o.stage}, {"what", o.what}, {"samples", o.samples}, {"bytes", o.bytes}});
    }
    std::cout << json::serialize(json::object{{"server", t.server.host},
                                              {"client", t.client.host},
                                              {"plan", json::parse(pipeline::plan_to_json(plan))},
                                              {"stages", std::move(stages)},
                                              {"notes", disk_dir_note}})
              << "\n";
    return;
  }
  std::cout << sanitize_text(fmt::format(
      "dry run: the plan ({}) and its shares are valid; nothing was measured or stored\n"
      "server {}, client {}\n{}{}",
      plan.source, t.server.host, t.client.host, pipeline::plan_outline_text(plan),
      disk_dir_note.empty() ? "" : "note: " + disk_dir_note + "\n"));
}

// How the stages of a run ended: status and error, and whether every stage ran.
struct StagesEnd {
  std::string status = kComplete, error;
  bool ran = false;
};

// Opens both ends and runs the plan's stages into run `run_id`.
StagesEnd run_diagnosis(const Targets& t, const pipeline::Plan& plan,
                        const std::map<std::string, std::string>& passwords, Store& store,
                        int64_t run_id, ProgressPrinter& progress) {
  StagesEnd end;
  try {
    auto log = [&](const std::string& line) { progress.note(line); };
    auto server = remote::Endpoint::open(t.server, log);
    auto client = remote::Endpoint::open(t.client, log);
    configure_link(server->agent(), plan, progress);
    configure_link(client->agent(), plan, progress);
    progress.note(fmt::format("agents up: server {} ({}), client {} ({})", server->host(),
                              server->deployment(), client->host(), client->deployment()));
    std::string data_address =
        plan.data_address.empty() ? server->default_data_address() : plan.data_address;
    Recorder recorder(store, run_id, progress, plan);
    pipeline::Agents agents{server->agent(),      client->agent(), t.server.host,
                            t.client.host,        data_address,    passwords,
                            /*client_address=*/{}};
    agents.run_id = run_id;
    pipeline::run_stages(plan, agents, recorder, g_cancel);
    end.ran = true;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled || g_cancel.cancelled()) {
      end.status = kInterrupted;
      end.error = "interrupted by a signal";
    } else {
      end.status = kFailed;
      end.error = describe(e);
    }
  }
  return end;
}

int diagnose(const std::vector<std::string>& args) {
  const po::options_description desc = diagnose_options();
  auto vm = parse_options(desc, args);
  if (help_asked(vm, desc, std::cout)) return 0;
  if (vm.count("push")) check_push_url(vm["push"].as<std::string>());
  const Targets targets = targets_from_options(vm, "diagnose");
  pipeline::Plan plan = plan_from_options(vm, targets.base, targets.lab);
  const std::string disk_dir_note = pipeline::settle_server_disk_dir(plan);
  pipeline::validate(plan);
  // Passwords are read before anything connects, so a missing one fails fast;
  // they go to the client agent over the channel only.
  std::map<std::string, std::string> passwords;
  for (const auto& share : plan.shares) {
    if (auto pw = read_password(share)) passwords[share.name] = *pw;
  }
  const bool as_json = vm.count("json") > 0;
  if (vm.count("dry-run")) {
    print_dry_run(targets, plan, disk_dir_note, as_json);
    return 0;
  }
  ProgressPrinter progress(vm.count("quiet") > 0);

  Store store(db_path(vm));
  RunRecord run;
  run.label = vm["label"].as<std::string>();
  run.server = targets.server.host;
  run.client = targets.client.host;
  if (targets.lab) {
    const lab::LabThrottle& t = targets.lab->throttle;
    plan.lab_throttle = {t.smbd_cpu, t.disk_read_bps, t.disk_write_bps};
  }
  run.plan_json = pipeline::plan_to_json(plan);
  run.version = kVersion;
  const int64_t run_id = store.begin_run(run);
  progress.note(fmt::format("run {} stored in {}", run_id, store.path()));
  if (!disk_dir_note.empty()) progress.note(disk_dir_note);

  install_stop_signals(g_cancel, /*exit_on_second=*/true);
  CancelWatchdog watchdog(store.path(), run_id);

  StagesEnd end = run_diagnosis(targets, plan, passwords, store, run_id, progress);
  std::optional<analysis::Analysis> verdict;  // judged once, for the status and every report
  if (end.ran && g_cancel.cancelled()) {
    end.status = kInterrupted;
    end.error = "interrupted by a signal";
  } else if (end.ran) {
    // Every stage ran; failed stages or samples make it partial, no verdict failed.
    const stored::Run measured = as_shown(store.load(run_id), !as_json);
    verdict = analysis::analyze(measured);
    RunOutcome o = outcome_of(measured, *verdict);
    end.status = o.status;
    end.error = o.error;
  }
  store.end_run(run_id, end.status, end.error);
  watchdog.disarm();
  const int rc = exit_code_for(end.status);
  if (rc != 0) {
    progress.note(fmt::format("chokepoint: run {} {}: {}", run_id, end.status, end.error));
  }
  // The run as it ended (status, stages the end interrupted); its samples are
  // those judged above.
  const stored::Run ended = as_shown(store.load(run_id), !as_json);
  if (!verdict) verdict = analysis::analyze(ended);
  store.put_verdicts(run_id, summarize_verdicts(*verdict));  // what `history` lists
  print_run(ended, *verdict, as_json, vm.count("explain") > 0);
  if (vm.count("html")) write_run_html(ended, *verdict, vm["html"].as<std::string>());
  if (vm.count("push")) return push_stored_run(ended, *verdict, vm["push"].as<std::string>(), rc);
  return rc;
}

// What `clean` did on one host: the agent's answer, or why there is none.
struct CleanedHost {
  std::string host;
  msg::CleanOrphansResult result;
  msg::TuneStartReport tune_at_start;
  std::string error;  // "" when the agent answered
};

// One host's entry of `clean --json`: host, removed, kept and
// tune_at_start (when the agent's start did anything), or host and error.
json::object cleaned_json(const CleanedHost& h) {
  json::object entry{{"host", h.host}};
  if (!h.error.empty()) {
    entry["error"] = h.error;
    return entry;
  }
  json::object r = msg::to_json(h.result);
  entry["removed"] = std::move(r.at("removed"));
  entry["kept"] = std::move(r.at("kept"));
  if (!h.tune_at_start.empty()) entry["tune_at_start"] = msg::to_json(h.tune_at_start);
  return entry;
}

// One host's lines of `clean`'s text output.
void print_cleaned(const CleanedHost& h) {
  if (!h.error.empty()) {
    std::cout << h.host << ": " << h.error << "\n";
    return;
  }
  for (const msg::RunDirEntry& r : h.result.removed) {
    std::cout << h.host << ": removed " << wire::printable(r.path) << " ("
              << wire::printable(r.reason) << ")\n";
  }
  for (const msg::RunDirEntry& k : h.result.kept) {
    std::cout << h.host << ": kept " << wire::printable(k.path)
              << (!k.refused.empty() ? " (left alone, not a run directory of the agent's user: " +
                                           wire::printable(k.refused) + ")"
                  : !k.error.empty() ? " (cannot remove: " + wire::printable(k.error) + ")"
                                     : std::string(" (its agent still runs, or it has no "
                                                   "owner record and changed within the hour)"))
              << "\n";
  }
  for (const std::string& line : msg::tune_start_lines(h.tune_at_start))
    std::cout << h.host << ": " << line << "\n";
  if (h.result.removed.empty() && h.tune_at_start.empty())
    std::cout << h.host << ": nothing left behind\n";
}

// chokepoint clean HOST...: removes the run directories that killed agents
// left on each host (the orphan cleanup every run's agents also do as they
// start).
int clean(const std::vector<std::string>& args) {
  po::options_description desc("chokepoint clean HOST... [options]");
  desc.add_options()("help,h", "this help")("hosts", po::value<std::vector<std::string>>(),
                                            "SSH hosts or aliases, or 'local'")(
      "dir", po::value<std::vector<std::string>>()->composing(),
      "a directory to clean (repeatable); default: the plan's directories")(
      "plan", po::value<std::string>(),
      "plan file whose ram_dir, disk_dir and shares' server_dir are swept")(
      "ssh-config", po::value<std::string>(), "SSH config file (default ~/.ssh/config)")(
      "accept-new-host-keys", "add unknown host keys to known_hosts (changed keys stay refused)")(
      "json", "print as JSON");
  po::positional_options_description pos;
  pos.add("hosts", -1);
  auto vm = parse_options(desc, args, &pos);
  if (help_asked(vm, desc, std::cout)) return 0;
  if (!vm.count("hosts")) {
    throw Error(ErrorKind::kUsage, "clean needs at least one host",
                "name them: `chokepoint clean nas laptop` (or `local`)");
  }
  std::vector<std::string> dirs;
  if (vm.count("dir")) {
    dirs = vm["dir"].as<std::vector<std::string>>();
  } else {
    pipeline::Plan plan =
        vm.count("plan") ? pipeline::load_plan(vm["plan"].as<std::string>()) : pipeline::Plan{};
    for (const auto& d :
         {plan.server.ram_dir, plan.server.disk_dir, plan.client.ram_dir, plan.client.disk_dir}) {
      dirs.push_back(d);
    }
    for (const auto& sh : plan.shares) {
      if (!sh.server_dir.empty()) dirs.push_back(sh.server_dir);
    }
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());

  remote::EndpointSpec spec;
  spec.role = "clean";
  if (vm.count("ssh-config")) spec.ssh_config = checked_ssh_config(vm);
  spec.accept_new_host_keys = vm.count("accept-new-host-keys") > 0;
  std::vector<CleanedHost> out;
  int rc = 0;
  for (const auto& host : vm["hosts"].as<std::vector<std::string>>()) {
    spec.host = host;
    CleanedHost& entry = out.emplace_back();
    entry.host = host;
    try {
      auto ep = remote::Endpoint::open(
          spec, [](const std::string& line) { std::cerr << sanitize_text(line) << "\n"; });
      // Directories missing on that host have nothing to clean.
      entry.result = msg::decode<msg::CleanOrphansResult>(
          ep->agent().call("sweep_orphans", msg::to_json(msg::CleanOrphansRequest{dirs}), 120),
          "sweep_orphans");
      // The agent's start reverted or refused a dead tune session's journal.
      entry.tune_at_start = ep->agent().hello().tune_at_start;
      const msg::TuneStartReport& ts = entry.tune_at_start;
      const bool tune_failed =
          !ts.refused.empty() || !ts.error.empty() ||
          std::any_of(ts.reverted.begin(), ts.reverted.end(),
                      [](const msg::RevertedKnob& k) { return !k.error.empty(); });
      if (tune_failed) rc = kExitFailed;
    } catch (const Error& e) {
      entry.error = describe(e);
      rc = kExitFailed;
    }
  }
  if (vm.count("json")) {
    json::array hosts;
    for (const CleanedHost& h : out) hosts.push_back(cleaned_json(h));
    std::cout << json::serialize(json::object{{"hosts", std::move(hosts)}}) << "\n";
    return rc;
  }
  // The agents' paths, reasons and errors reach the terminal escaped.
  EscapedStdout escaped;
  for (const CleanedHost& h : out) print_cleaned(h);
  return rc;
}

int show(const std::vector<std::string>& args) {
  po::options_description desc("chokepoint show RUN [options]");
  desc.add_options()("help,h", "this help")("run", po::value<std::string>(), "run id or label")(
      "db", po::value<std::string>(), "SQLite database")("json", "print as JSON")(
      "explain", "give each finding with its full evidence (text; JSON and HTML always have it)")(
      "html", po::value<std::string>(), "also write a self-contained HTML report to FILE");
  po::positional_options_description pos;
  pos.add("run", 1);
  auto vm = parse_options(desc, args, &pos);
  if (help_asked(vm, desc, std::cout)) return 0;
  if (!vm.count("run")) {
    throw Error(ErrorKind::kUsage, "show needs a run",
                "name one: `chokepoint show latest`, an id "
                "or a label from `chokepoint history`");
  }
  Store store(db_path(vm), Store::Access::kReadOnly);
  const int64_t id = store.resolve(vm["run"].as<std::string>());
  const bool as_json = vm.count("json") > 0;
  const stored::Run run = as_shown(store.load(id), !as_json);
  const analysis::Analysis a = analysis::analyze(run);
  print_run(run, a, as_json, vm.count("explain") > 0);
  if (vm.count("html")) write_run_html(run, a, vm["html"].as<std::string>());
  return 0;
}

}  // namespace

namespace {

int compare_to_stdout(const std::vector<std::string>& args) {
  return compare_command(args, std::cout);
}
int export_to_stdout(const std::vector<std::string>& args) {
  return export_command(args, std::cout);
}
int history_to_stdout(const std::vector<std::string>& args) {
  return history_command(args, std::cout);
}
int prune_to_stdout(const std::vector<std::string>& args) { return prune_command(args, std::cout); }

// The commands: the usage text, the dispatch and "did you mean" all come from
// this one table (ninja's tool table does the same; struct Command is in
// command_table.h). Each handler answers --help with its own options.

const Command kCommands[] = {
    {"diagnose", "",
     "measure disk, TCP and the protocols between a server and a client, store "
     "and judge it",
     diagnose},
    {"history", "", "list stored runs with their verdicts; --trend PATH: one path over the runs",
     history_to_stdout},
    {"show", "RUN", "print a stored run's report (RUN: id, label, or \"latest\")", show},
    {"compare", "A B", "hold run B against run A: what changed, whether it is real, what differs",
     compare_to_stdout},
    {"export", "RUN", "every sample of a run as CSV or JSON", export_to_stdout},
    {"prune", "", "remove old runs (--before DATE, --keep N) and reclaim their space",
     prune_to_stdout},
    {"clean", "HOST...", "remove run directories that killed agents left on those hosts", clean},
    {"lab", "up|status|throttle|down", "the built-in two-host lab (network namespaces)",
     lab::run_lab_command},
    {"tune", "", "try a knob's values, measure what it affects, put it back, say if it helped",
     tune_command},
    {"drivers", "", "list the protocol drivers: share URLs, options, capabilities",
     drivers_command},
    {"version", "", "print the version", version_command},
};

std::string usage() {
  std::string out =
      "usage: chokepoint <command> [options]\n\n"
      "Finds the layer that caps file-transfer throughput between two hosts.\n\ncommands:\n";
  for (const Command& c : kCommands) {
    const std::string head = std::string(c.name) + (*c.args ? std::string(" ") + c.args : "");
    out += fmt::format("  {:<30} {}\n", head, c.help);
  }
  out += "\n`chokepoint <command> --help` shows a command's options.\n";
  return out;
}

// Edit distance, for "did you mean".
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string unknown_command_hint(const std::string& cmd) {
  const Command* best = nullptr;
  size_t best_d = 3;  // at most 2 edits away
  std::string names;
  for (const Command& c : kCommands) {
    names += (names.empty() ? "" : ", ") + std::string(c.name);
    const size_t d = distance(cmd, c.name);
    const bool prefix = cmd.size() >= 2 && std::string(c.name).rfind(cmd, 0) == 0;
    if (prefix || d < best_d) {
      best = &c;
      best_d = prefix ? 0 : d;
    }
  }
  if (best) return fmt::format("did you mean `chokepoint {}`? (commands: {})", best->name, names);
  return "commands are " + names + "; `chokepoint --help` lists them";
}

}  // namespace

std::span<const Command> command_table() { return kCommands; }

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << usage();
    return args.empty() ? kExitUsage : 0;
  }
  std::string cmd = args[0];
  if (cmd == "--version") cmd = "version";
  args.erase(args.begin());
  try {
    if (cmd == "--generate") return generate_command(args);  // hidden: the build's man page
    for (const Command& c : kCommands) {
      if (cmd == c.name) return c.run(args);
    }
    throw Error(ErrorKind::kUsage, fmt::format("unknown command '{}'", cmd),
                unknown_command_hint(cmd));
  } catch (const Error& e) {
    std::cerr << "chokepoint " << sanitize_field(cmd) << ": " << sanitize_text(describe(e)) << "\n";
    return e.kind() == ErrorKind::kUsage ? kExitUsage : kExitFailed;
  } catch (const std::exception& e) {
    // Not a typed error: a bug, but never a core dump on a peer's or user's
    // input. Exit 1 as every other failure (README's exit codes).
    std::cerr << "chokepoint " << sanitize_field(cmd)
              << ": unexpected error: " << sanitize_text(e.what())
              << " (a bug in chokepoint: please report it with the command line)\n";
    return kExitFailed;
  } catch (...) {
    std::cerr << "chokepoint " << sanitize_field(cmd)
              << ": unexpected error (a bug in chokepoint: please "
              << "report it with the command line)\n";
    return kExitFailed;
  }
}

}  // namespace cp::app
