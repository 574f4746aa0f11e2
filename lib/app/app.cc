#include "app/app.h"

#include <signal.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>

#include "analysis/ladder.h"
#include "app/report_commands.h"
#include "app/tune_command.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/json_util.h"
#include "core/units.h"
#include "core/version.h"
#include "lab/lab.h"
#include "lab/lab_cli.h"
#include "lab/layout.h"
#include "pipeline/plan.h"
#include "pipeline/runner.h"
#include "remote/agent_link.h"
#include "remote/endpoint.h"
#include "report/report.h"
#include "store/store.h"

namespace cp::app {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage = R"(usage: chokepoint <command> [options]

Finds the layer that caps file-transfer throughput between two hosts.

commands:
  diagnose   measure disk and TCP between a server and a client, store and judge it
  history    list stored runs
  show RUN   print a stored run's report (RUN: id, label, or "latest")
  compare A B  hold run B against run A: what changed, whether it is real, what differs
  export RUN   every sample of a run as CSV or JSON
  lab        up | status | down: the built-in two-host lab (network namespaces)
  tune       try a knob's values, measure what it affects, put it back, say if it helped
  version    print the version

`chokepoint <command> --help` shows a command's options.
)";

CancelToken g_cancel;

void on_signal(int) { g_cancel.cancel(); }

// Writes live progress to stderr: one rewritten line on a TTY, plain lines
// (one per finished sample) otherwise.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet) : tty_(isatty(2) == 1), quiet_(quiet) {}
  void update(const pipeline::Progress& p) {
    if (quiet_) return;
    std::lock_guard<std::mutex> lock(mu_);
    const double rate = p.seconds > 0 ? double(p.bytes) / p.seconds : 0;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s  %d/%d  %s", p.stage.c_str(), p.index, p.count,
                   format_mbps(rate).c_str());
      if (p.done && p.index == p.count) std::fputc('\n', stderr);
      std::fflush(stderr);
    } else if (p.done) {
      std::fprintf(stderr, "%s %d/%d: %s\n", p.stage.c_str(), p.index, p.count,
                   format_mbps(rate).c_str());
    }
  }
  void note(const std::string& line) {
    if (quiet_) return;
    std::lock_guard<std::mutex> lock(mu_);
    std::fprintf(stderr, "%s%s\n", tty_ ? "\r\033[K" : "", line.c_str());
  }

 private:
  std::mutex mu_;
  bool tty_, quiet_;
};

// Stores every record as it arrives and shows progress.
class Recorder : public pipeline::RunObserver {
 public:
  Recorder(Store& store, int64_t run_id, ProgressPrinter& out)
      : store_(store), run_(run_id), out_(out) {}
  void on_host(const HostRecord& h) override {
    hosts_.push_back(h);
    store_.add_host(run_, h);
  }
  // Kept with the host's facts, so benchmarks and tests can read it back.
  void on_agent_stats(const std::string& role, uint64_t max_rss_kb) override {
    for (auto& h : hosts_) {
      if (h.role != role) continue;
      boost::json::object f = parse_json_object(h.facts_json);
      f["agent_max_rss_kb"] = max_rss_kb;
      h.facts_json = boost::json::serialize(f);
      store_.add_host(run_, h);
    }
  }
  int64_t on_stage_begin(const StageRecord& s) override { return store_.begin_stage(run_, s); }
  void on_sample(int64_t stage, const SampleRecord& s) override { store_.add_sample(stage, s); }
  void on_stage_end(int64_t stage, const std::string& status, const std::string& err) override {
    store_.end_stage(stage, status, err);
  }
  void on_progress(const pipeline::Progress& p) override { out_.update(p); }
  void on_note(const std::string& line) override { out_.note(line); }

 private:
  Store& store_;
  int64_t run_;
  ProgressPrinter& out_;
  std::vector<HostRecord> hosts_;
};

po::variables_map parse(const po::options_description& desc, const std::vector<std::string>& args,
                        const po::positional_options_description* pos = nullptr) {
  po::variables_map vm;
  try {
    auto parser = po::command_line_parser(args).options(desc);
    if (pos) parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(ErrorKind::kUsage, e.what(), "see --help");
  }
  return vm;
}

std::string db_path(const po::variables_map& vm) {
  return vm.count("db") ? vm["db"].as<std::string>() : Store::default_path();
}

void print_run(Store& store, int64_t id, bool as_json) {
  RunRecord run = store.load_run(id);
  analysis::Analysis a = analysis::analyze(run);
  if (as_json) {
    std::cout << report::run_json(run, a);
  } else {
    std::cout << report::run_text(run, a, {isatty(1) == 1});
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
    if (st.st_mode & 077) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: password_file '{}' can be read by others (mode {:o})", who,
                              s.password_file, st.st_mode & 0777),
                  fmt::format("chmod 600 {}", s.password_file));
    }
    std::ifstream in(s.password_file);
    std::string line;
    std::getline(in, line);
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

int diagnose(const std::vector<std::string>& args) {
  po::options_description desc("chokepoint diagnose [options]");
  desc.add_options()("help,h", "this help")("server", po::value<std::string>(),
                                            "the file server: SSH host or alias, or 'local'")(
      "client", po::value<std::string>(), "the client: SSH host or alias, or 'local'")(
      "lab", "diagnose the built-in lab (`chokepoint lab up`); the default without --server")(
      "plan", po::value<std::string>(), "plan file (see examples/plan.ini)")(
      "label", po::value<std::string>()->default_value(""), "a label stored with the run")(
      "db", po::value<std::string>(), "SQLite database (default: under $XDG_DATA_HOME)")(
      "json", "print the report as JSON")("html", po::value<std::string>(),
                                          "also write a self-contained HTML report to FILE")(
      "ssh-config", po::value<std::string>(), "SSH config file (default ~/.ssh/config)")(
      "accept-new-host-keys", "add unknown host keys to known_hosts (changed keys stay refused)")(
      "share", po::value<std::vector<std::string>>()->composing(),
      "a share to measure: NAME=URL,server_dir=DIR,medium=ram|disk[,user=U]"
      "[,password_env=VAR|password_file=F|password_prompt=yes][,options=k=v...] (repeatable)")(
      "quiet,q", "no progress output");
  auto vm = parse(desc, args);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  const bool use_lab = vm.count("lab") || (!vm.count("server") && !vm.count("client"));
  if (!use_lab && (!vm.count("server") || !vm.count("client"))) {
    throw Error(ErrorKind::kUsage, "diagnose needs both --server and --client",
                "name two hosts (e.g. --server nas --client local), or use --lab");
  }
  pipeline::Plan base;
  std::optional<lab::LabState> lab_state;
  remote::EndpointSpec server_spec, client_spec;
  server_spec.role = "server";
  client_spec.role = "client";
  if (vm.count("ssh-config")) {
    server_spec.ssh_config = client_spec.ssh_config = vm["ssh-config"].as<std::string>();
  }
  server_spec.accept_new_host_keys = client_spec.accept_new_host_keys =
      vm.count("accept-new-host-keys") > 0;
  if (use_lab) {
    const int instance = lab::default_instance();
    const std::string up_cmd = instance == 0
                                   ? std::string("chokepoint lab up")
                                   : fmt::format("chokepoint lab up --instance {}", instance);
    auto lab = lab::load();
    if (!lab) {
      throw Error(
          ErrorKind::kUsage,
          fmt::format("no --server/--client given and no lab is up (instance {}, {})", instance,
                      lab::default_dir()),
          fmt::format("start the lab with `{}`, or name hosts with --server and --client", up_cmd));
    }
    const lab::LabHealth health = lab::check_health(*lab);
    if (!health.healthy) {
      throw Error(
          ErrorKind::kUnsupported,
          fmt::format("the lab (instance {}) is not healthy: {}", lab->instance, health.why),
          fmt::format("`{}` restarts what is down (or `lab down`, then `lab up`)", up_cmd));
    }
    server_spec.host = lab->server.alias;
    client_spec.host = lab->client.alias;
    server_spec.ssh_config = client_spec.ssh_config = lab->ssh_config;
    base.server.ram_dir = lab->server.ram_dir;
    base.server.disk_dir = lab->server.disk_dir;
    base.client.ram_dir = lab->client.ram_dir;
    base.client.disk_dir = lab->client.disk_dir;
    base.data_address = lab->server.data_address;
    base.server.samba_conf = lab::server_files(*lab).smb_conf;
    lab_state = *lab;
  } else {
    server_spec.host = vm["server"].as<std::string>();
    client_spec.host = vm["client"].as<std::string>();
  }
  pipeline::Plan plan =
      vm.count("plan") ? pipeline::load_plan(vm["plan"].as<std::string>(), base) : base;
  if (plan.source.empty()) plan.source = use_lab ? "(defaults, lab)" : "(defaults)";
  if (vm.count("share")) {
    for (const auto& f : vm["share"].as<std::vector<std::string>>())
      pipeline::add_share_flag(plan, f);
  }
  // The lab's FTP and SMB shares, unless the plan or the flags name shares.
  if (lab_state && plan.shares.empty()) {
    for (const auto& ls : lab_state->server.shares) {
      pipeline::SharePlan sp;
      sp.name = ls.protocol + "-" + ls.medium;
      sp.url = ls.url;
      sp.driver = pipeline::driver_for_url(ls.url, "lab share " + sp.name);
      sp.server_dir = ls.server_dir;
      sp.medium = ls.medium;
      sp.user = lab_state->share_user;
      sp.password_file = lab_state->share_password_file;
      sp.declared_at = "the lab";
      plan.shares.push_back(sp);
    }
  }
  pipeline::validate(plan);
  // Passwords are read before anything connects, so a missing one fails fast;
  // they go to the client agent over the channel only.
  std::map<std::string, std::string> passwords;
  for (const auto& share : plan.shares) {
    if (auto pw = read_password(share)) passwords[share.name] = *pw;
  }
  const bool as_json = vm.count("json") > 0;
  ProgressPrinter progress(vm.count("quiet") > 0);

  Store store(db_path(vm));
  RunRecord run;
  run.label = vm["label"].as<std::string>();
  run.server = server_spec.host;
  run.client = client_spec.host;
  run.plan_json = pipeline::plan_to_json(plan);
  run.version = kVersion;
  const int64_t run_id = store.begin_run(run);
  progress.note(fmt::format("run {} stored in {}", run_id, store.path()));

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string status = kComplete, error;
  int rc = 0;
  try {
    auto log = [&](const std::string& line) { progress.note(line); };
    auto server = remote::Endpoint::open(server_spec, log);
    auto client = remote::Endpoint::open(client_spec, log);
    progress.note(fmt::format("agents up: server {} ({}), client {} ({})", server->host(),
                              server->deployment(), client->host(), client->deployment()));
    std::string data_address =
        plan.data_address.empty() ? server->default_data_address() : plan.data_address;
    Recorder recorder(store, run_id, progress);
    pipeline::run_stages(plan,
                         {server->agent(), client->agent(), server_spec.host, client_spec.host,
                          data_address, passwords, /*client_address=*/{}},
                         recorder, g_cancel);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled || g_cancel.cancelled()) {
      status = kInterrupted;
      error = "interrupted by a signal";
      rc = 130;
    } else {
      status = kFailed;
      error = describe(e);
      rc = 1;
    }
  }
  store.end_run(run_id, status, error);
  if (rc != 0) progress.note(fmt::format("chokepoint: run {} {}: {}", run_id, status, error));
  print_run(store, run_id, as_json);
  if (vm.count("html")) write_run_html(store, run_id, vm["html"].as<std::string>());
  return rc;
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
  tm t{};
  if (strptime(s.c_str(), "%Y-%m-%d", &t)) return double(timegm(&t));
  throw Error(ErrorKind::kUsage, fmt::format("--since '{}' is not a date or an age", s),
              "write --since 2026-11-01, --since 7d or --since 12h");
}

int history(const std::vector<std::string>& args) {
  po::options_description desc("chokepoint history [options]");
  desc.add_options()("help,h", "this help")("db", po::value<std::string>(), "SQLite database")(
      "label", po::value<std::string>(), "only runs with this label")(
      "host", po::value<std::string>(), "only runs whose server or client name contains this")(
      "since", po::value<std::string>(), "only runs since a date (2026-11-01) or age (7d, 12h)")(
      "limit", po::value<size_t>()->default_value(50), "at most this many runs")("json",
                                                                                 "print as JSON");
  auto vm = parse(desc, args);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  HistoryFilter f;
  if (vm.count("label")) f.label = vm["label"].as<std::string>();
  if (vm.count("host")) f.host = vm["host"].as<std::string>();
  if (vm.count("since")) f.since = parse_since(vm["since"].as<std::string>());
  f.limit = vm["limit"].as<size_t>();
  Store store(db_path(vm));
  auto rows = store.history(f);
  std::cout << (vm.count("json") ? report::history_json(rows) : report::history_text(rows));
  return 0;
}

int show(const std::vector<std::string>& args) {
  po::options_description desc("chokepoint show RUN [options]");
  desc.add_options()("help,h", "this help")("run", po::value<std::string>(), "run id or label")(
      "db", po::value<std::string>(), "SQLite database")("json", "print as JSON")(
      "html", po::value<std::string>(), "also write a self-contained HTML report to FILE");
  po::positional_options_description pos;
  pos.add("run", 1);
  auto vm = parse(desc, args, &pos);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (!vm.count("run")) {
    throw Error(ErrorKind::kUsage, "show needs a run",
                "name one: `chokepoint show latest`, an id "
                "or a label from `chokepoint history`");
  }
  Store store(db_path(vm));
  const int64_t id = store.resolve(vm["run"].as<std::string>());
  print_run(store, id, vm.count("json") > 0);
  if (vm.count("html")) write_run_html(store, id, vm["html"].as<std::string>());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "diagnose") return diagnose(args);
    if (cmd == "history") return history(args);
    if (cmd == "show") return show(args);
    if (cmd == "compare") return compare_command(args, std::cout);
    if (cmd == "export") return export_command(args, std::cout);
    if (cmd == "lab") return lab::run_lab_command(args);
    if (cmd == "tune") return tune_command(args);
    if (cmd == "version" || cmd == "--version") {
      std::cout << "chokepoint " << kVersion << " (build " << kBuildId << ")\n";
      return 0;
    }
    throw Error(ErrorKind::kUsage, fmt::format("unknown command '{}'", cmd),
                "commands are diagnose, history, show, compare, export, lab, tune, version");
  } catch (const Error& e) {
    std::cerr << "chokepoint " << cmd << ": " << describe(e) << "\n";
    return e.kind() == ErrorKind::kUsage ? 2 : 1;
  }
}

}  // namespace cp::app
