#include "app/tune_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>

#include "app/help.h"
#include "app/options.h"
#include "app/signals.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/messages_json.h"
#include "core/units.h"
#include "lab/lab.h"
#include "lab/layout.h"
#include "link/agent_link.h"
#include "pipeline/plan.h"
#include "remote/endpoint.h"
#include "store/store.h"
#include "tune/sweep.h"
#include "tune_agent/knobs.h"

namespace cp::app {
namespace {

namespace po = boost::program_options;
namespace json = boost::json;

// Signals cancel the sweep, which then puts every knob back (a second
// signal must not cut that short: no exit on it).
CancelToken g_tune_cancel;

std::string list_text() {
  std::string out;
  for (const auto& k : tune::knob_table()) {
    out += fmt::format("{}\n  on: {}; privilege: {}\n  {}\n  how: {}\n  affects: {}\n", k.name,
                       k.endpoint, k.privilege, k.summary, tune::describe_mechanism(k),
                       tune::describe_affects(k));
  }
  return out;
}

std::string list_json() {
  json::array a;
  for (const auto& k : tune::knob_table()) {
    a.push_back(json::object{{"name", k.name},
                             {"endpoint", k.endpoint},
                             {"privilege", k.privilege},
                             {"summary", k.summary},
                             {"how", tune::describe_mechanism(k)},
                             {"affects", tune::describe_affects(k)}});
  }
  return json::serialize(a) + "\n";
}

// A share's password from the environment or a 0600 file (tune does not prompt).
std::optional<std::string> share_password(const pipeline::SharePlan& s) {
  if (!s.password_env.empty()) {
    const char* v = std::getenv(s.password_env.c_str());
    if (!v) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("share '{}': password_env names {}, which is not set", s.name,
                              s.password_env));
    }
    return std::string(v);
  }
  if (!s.password_file.empty()) {
    struct stat st {};
    if (stat(s.password_file.c_str(), &st) != 0 || (st.st_mode & 077)) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("share '{}': password_file '{}' is missing or readable by others",
                              s.name, s.password_file),
                  fmt::format("chmod 600 {}", s.password_file));
    }
    std::ifstream in(s.password_file);
    std::string line;
    std::getline(in, line);
    return line;
  }
  if (s.password_prompt) {
    throw Error(ErrorKind::kConfig,
                fmt::format("share '{}': tune runs many rounds and does not prompt", s.name),
                "give password_env or password_file");
  }
  return std::nullopt;
}

int revert_command(const po::variables_map& vm, const std::vector<std::string>& hosts_named) {
  std::vector<remote::EndpointSpec> specs;
  if (!hosts_named.empty()) {
    for (const auto& name : hosts_named) {
      remote::EndpointSpec s;
      s.role = "host";
      s.host = name;
      if (vm.count("ssh-config")) s.ssh_config = vm["ssh-config"].as<std::string>();
      s.accept_new_host_keys = vm.count("accept-new-host-keys") > 0;
      specs.push_back(s);
    }
  } else {
    const Targets h = targets_from_options(vm, "tune");
    specs = {h.server, h.client};
  }
  const bool as_json = vm.count("json") > 0;
  json::array report;
  int rc = 0;
  for (const auto& spec : specs) {
    // Starting the agent reverts a journal no live session holds; the
    // request reports that and reverts anything left.
    auto ep = remote::Endpoint::open(spec, [](const std::string&) {});
    const auto r =
        msg::decode<msg::TuneRevertResult>(ep->agent().call("tune_revert", {}, 120), "tune_revert");
    std::vector<msg::RevertedKnob> restored = r.reverted_at_start;
    restored.insert(restored.end(), r.reverted.begin(), r.reverted.end());
    if (!r.at_start_error.empty()) rc = 1;
    json::array restored_json;
    for (const auto& e : restored) restored_json.push_back(msg::to_json(e));
    if (!as_json) {
      if (restored.empty() && r.refused.empty()) {
        std::cout << fmt::format("{}: nothing to revert ({})\n", spec.host, r.journal);
      }
      for (const auto& e : restored) {
        if (!e.error.empty()) rc = 1;
        std::cout << fmt::format("{}: {} on {} {} {}\n", spec.host, e.knob, e.target,
                                 e.error.empty() ? "restored to" : "NOT restored to",
                                 e.original + (e.error.empty() ? "" : ": " + e.error));
      }
      if (!r.at_start_error.empty()) std::cout << spec.host << ": " << r.at_start_error << "\n";
      for (const auto& x : r.refused) {
        std::cout << fmt::format("{}: refused the tune journal {} ({}{}): {}\n", spec.host,
                                 r.journal, x.reason, x.knob.empty() ? "" : ", " + x.knob,
                                 x.detail);
      }
    }
    if (!r.refused.empty()) rc = 1;
    json::array refused_json;
    for (const auto& x : r.refused) refused_json.push_back(msg::to_json(x));
    report.push_back(json::object{{"host", spec.host},
                                  {"restored", std::move(restored_json)},
                                  {"refused", std::move(refused_json)},
                                  {"error", r.at_start_error},
                                  {"journal", r.journal}});
  }
  if (as_json) std::cout << json::serialize(report) << "\n";
  return rc;
}

// `tune --show`: a stored session, read without creating or changing the
// database (a missing one is an error naming its path).
int show_command(const po::variables_map& vm, bool as_json) {
  const std::string db = db_path(vm);
  Store::require_existing(db);
  Store store(db);
  std::vector<tune::LayerSamples> samples;
  tune::TuneResult r = tune::load_session(store, vm["show"].as<std::string>(), &samples);
  std::cout << (as_json ? "[" + tune::result_json(r) + "]\n" : tune::result_text(r));
  if (vm.count("html"))
    std::ofstream(vm["html"].as<std::string>()) << tune::result_html(r, samples);
  return 0;
}

// The plan a sweep runs: --plan or the lab's, its shares, counts and size.
pipeline::Plan tune_plan(const po::variables_map& vm, const Targets& h, int count) {
  pipeline::Plan plan = plan_from_options(vm, h.base, h.lab);
  plan.disk_count = plan.proto_count = plan.tcp_count = count;
  if (vm.count("size")) {
    const uint64_t size = parse_size(vm["size"].as<std::string>(), "--size");
    plan.disk_sizes = plan.proto_sizes = {size};
  }
  return plan;
}

po::options_description tune_options() {
  po::options_description desc("chokepoint tune [options]");
  desc.add_options()("help,h", "this help")(
      "knob", po::value<std::vector<std::string>>()->composing(),
      "NAME=V1,V2,...: a knob and the values to try (repeatable: a grid of knobs in one "
      "session, see --grid)")(
      "grid", po::value<std::string>()->default_value("cross"),
      "several knobs: 'cross' tries every combination of their values (interactions show), "
      "'one-at-a-time' moves one knob with the others at their original")(
      "afp-conf", po::value<std::string>(),
      "netatalk knobs: the server's afp.conf (default: /etc/netatalk/afp.conf, "
      "/usr/local/etc/afp.conf)")(
      "afp-restart", po::value<std::string>(),
      "netatalk knobs: the shell command that restarts afpd on the server (default: systemctl "
      "restart netatalk)")(
      "list", "the knobs: where each lives, how it is applied, which stages it affects")(
      "dry-run", "print the exact commands a sweep would run, change nothing")(
      "revert", "undo what a killed session left applied (on the named hosts, else both ends)")(
      "show", po::value<std::string>()->implicit_value("latest"),
      "print a stored session again (its id, or latest), recomputed from its runs")(
      "server", po::value<std::string>(), "the file server: SSH host or alias, or 'local'")(
      "client", po::value<std::string>(), "the client: SSH host or alias, or 'local'")(
      "lab", "tune the built-in lab (the default without --server)")(
      "plan", po::value<std::string>(), "plan file (shares, dirs)")(
      "share", po::value<std::vector<std::string>>()->composing(),
      "a share, as for diagnose (repeatable)")(
      "i-have-console",
      "allow knobs on the interface SSH uses (MTU); each host reverts by itself unless the "
      "orchestrator still reaches it within --confirm-seconds")(
      "confirm-seconds", po::value<uint64_t>()->default_value(20),
      "how long a host waits for that confirmation before it reverts")(
      "rounds", po::value<int>()->default_value(3), "interleaved rounds over the values")(
      "count", po::value<int>()->default_value(3), "samples per size, op and value in a round")(
      "size", po::value<std::string>(),
      "file size of the disk and protocol samples (default: "
      "the plan's)")("db", po::value<std::string>(),
                     "SQLite database (default: under $XDG_DATA_HOME)")(
      "json", "print the result as JSON")("html", po::value<std::string>(),
                                          "also write an HTML chart to FILE")(
      "ssh-config", po::value<std::string>(), "SSH config file")(
      "accept-new-host-keys", "add unknown host keys to known_hosts")(
      "quiet,q", "no progress output")("hosts", po::value<std::vector<std::string>>(),
                                       "hosts for --revert");
  return desc;
}

}  // namespace

int tune_command(const std::vector<std::string>& args) {
  const po::options_description desc = tune_options();
  po::positional_options_description pos;
  pos.add("hosts", -1);
  const po::variables_map vm = parse_options(desc, args, &pos, "see chokepoint tune --help");
  if (help_asked(vm, desc, std::cout)) return 0;
  const bool as_json = vm.count("json") > 0;
  if (vm.count("list")) {
    std::cout << (as_json ? list_json() : list_text());
    return 0;
  }
  if (vm.count("show")) return show_command(vm, as_json);
  const std::vector<std::string> hosts_named =
      vm.count("hosts") ? vm["hosts"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (vm.count("revert")) return revert_command(vm, hosts_named);
  if (!hosts_named.empty()) {
    throw Error(ErrorKind::kUsage, fmt::format("unexpected argument '{}'", hosts_named.front()),
                "hosts are named with --server and --client (or after --revert)");
  }
  if (!vm.count("knob")) {
    throw Error(ErrorKind::kUsage, "tune needs a --knob NAME=V1,V2,... (or --list, --revert)",
                "e.g. --knob server.readahead=128K,1M,4M; `tune --list` names the knobs");
  }
  std::vector<tune::KnobRequest> knobs;
  for (const auto& k : vm["knob"].as<std::vector<std::string>>())
    knobs.push_back(tune::parse_knob_arg(k));
  const int rounds = vm["rounds"].as<int>();
  const int count = vm["count"].as<int>();
  if (rounds < 1 || rounds > 100 || count < 1 || count > 1000) {
    throw Error(ErrorKind::kUsage, "--rounds must be 1..100 and --count 1..1000",
                "3 rounds of 3 samples give each value 9 samples, enough for p < 0.05");
  }

  const Targets h = targets_from_options(vm, "tune");
  pipeline::Plan plan = tune_plan(vm, h, count);
  pipeline::validate(plan);
  // Each knob's stages must exist before anything connects.
  for (const auto& k : knobs) tune::affected_plan(*k.knob, plan);
  for (size_t i = 0; i < knobs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (knobs[i].knob == knobs[j].knob) {
        throw Error(ErrorKind::kUsage, fmt::format("--knob {} is given twice", knobs[i].knob->name),
                    "give all its values in one --knob NAME=V1,V2");
      }
    }
  }
  const std::string grid_arg = vm["grid"].as<std::string>();
  if (grid_arg != "cross" && grid_arg != "one-at-a-time") {
    throw Error(ErrorKind::kUsage, fmt::format("--grid '{}' is unknown", grid_arg),
                "give cross or one-at-a-time");
  }
  std::map<std::string, std::string> passwords;
  for (const auto& s : plan.shares) {
    if (auto pw = share_password(s)) passwords[s.name] = *pw;
  }

  const bool quiet = vm.count("quiet") > 0;
  auto note = [&](const std::string& line) {
    if (!quiet) std::cerr << line << "\n";
  };
  install_stop_signals(g_tune_cancel, /*exit_on_second=*/false);

  auto server = remote::Endpoint::open(h.server, note);
  auto client = remote::Endpoint::open(h.client, note);
  const std::string data_address =
      plan.data_address.empty() ? server->default_data_address() : plan.data_address;
  json::array results;
  int rc = 0;
  tune::SweepSetup s;
  for (const auto& k : knobs) s.axes.push_back({k.knob, k.values});
  s.grid = grid_arg == "cross" ? tune::Grid::kCross : tune::Grid::kOneAtATime;
  s.rounds = rounds;
  s.plan = plan;
  s.server = &server->agent();
  s.client = &client->agent();
  s.server_name = h.server.host;
  s.client_name = h.client.host;
  s.data_address = data_address;
  s.passwords = passwords;
  s.console = vm.count("i-have-console") > 0;
  s.confirm_s = vm["confirm-seconds"].as<uint64_t>();
  if (vm.count("afp-conf")) s.afp_conf = vm["afp-conf"].as<std::string>();
  if (vm.count("afp-restart")) s.afp_restart = vm["afp-restart"].as<std::string>();
  if (vm.count("dry-run")) {
    std::cout << tune::dry_run_text(s);
    return 0;
  }
  Store store(db_path(vm));
  std::vector<tune::LayerSamples> samples;
  try {
    tune::TuneResult r = tune::run_sweep(s, store, g_tune_cancel, note, &samples);
    if (as_json) {
      results.push_back(json::parse(tune::result_json(r)));
    } else {
      std::cout << tune::result_text(r);
    }
    if (vm.count("html")) {
      std::ofstream(vm["html"].as<std::string>()) << tune::result_html(r, samples);
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled || g_tune_cancel.cancelled()) {
      std::cerr << "chokepoint tune: interrupted; the knobs are back at their original values\n";
      return 130;
    }
    throw;
  }
  if (as_json && !vm.count("dry-run")) std::cout << json::serialize(results) << "\n";
  return rc;
}

}  // namespace cp::app
