#include "app/options.h"

#include <fmt/format.h>

#include <filesystem>
#include <tuple>

#include "app/help.h"
#include "app/terminal.h"
#include "core/error.h"
#include "lab/layout.h"
#include "store/store.h"

namespace cp::app {

namespace po = boost::program_options;

po::variables_map parse_options(const po::options_description& desc,
                                const std::vector<std::string>& args,
                                const po::positional_options_description* pos,
                                const std::string& hint) {
  po::variables_map vm;
  try {
    auto parser = po::command_line_parser(args).options(desc);
    if (pos) parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(ErrorKind::kUsage, e.what(), hint);
  }
  return vm;
}

bool help_asked(const po::variables_map& vm, const po::options_description& desc,
                std::ostream& out) {
  if (!vm.count("help")) return false;
  show_help(out, desc);
  return true;
}

std::string db_path(const po::variables_map& vm) {
  return vm.count("db") ? vm["db"].as<std::string>() : Store::default_path();
}

pipeline::Plan plan_from_options(const po::variables_map& vm, const pipeline::Plan& base,
                                 const std::optional<lab::LabState>& lab) {
  pipeline::Plan plan =
      vm.count("plan") ? pipeline::load_plan(vm["plan"].as<std::string>(), base) : base;
  if (plan.source.empty()) plan.source = lab ? "(defaults, lab)" : "(defaults)";
  if (vm.count("share")) {
    for (const auto& f : vm["share"].as<std::vector<std::string>>())
      pipeline::add_share_flag(plan, f);
  }
  if (!lab || !plan.shares.empty()) return plan;
  for (const auto& ls : lab->server.shares) {
    pipeline::SharePlan sp;
    sp.name = ls.protocol + "-" + ls.medium;
    sp.url = ls.url;
    sp.driver = pipeline::driver_for_url(ls.url, "lab share " + sp.name);
    sp.server_dir = ls.server_dir;
    sp.medium = ls.medium;
    sp.user = lab->share_user;
    sp.password_file = lab->share_password_file;
    sp.declared_at = "the lab";
    plan.shares.push_back(sp);
  }
  return plan;
}

// --ssh-config names a file that must exist (libssh would silently skip it).
std::string checked_ssh_config(const po::variables_map& vm) {
  const std::string path = vm["ssh-config"].as<std::string>();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::kUsage, fmt::format("--ssh-config '{}': no such file", path),
                "name an existing OpenSSH config file, or leave --ssh-config out to use "
                "~/.ssh/config");
  }
  return path;
}

// The lab's ends and directories; Error(kUsage) when no lab is up,
// Error(kUnsupported) when it is not healthy.
namespace {

void target_lab(Targets& t) {
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
    throw Error(ErrorKind::kUnsupported,
                fmt::format("the lab (instance {}) is not healthy: {}", lab->instance, health.why),
                fmt::format("`{}` restarts what is down (or `lab down`, then `lab up`)", up_cmd));
  }
  t.server.host = lab->server.alias;
  t.client.host = lab->client.alias;
  t.server.ssh_config = t.client.ssh_config = lab->ssh_config;
  // An unprivileged server login works in the shares it owns (lab.h).
  std::tie(t.base.server.ram_dir, t.base.server.disk_dir) = lab::diagnosis_dirs(*lab, lab->server);
  t.base.server.disk_dir_set = true;
  std::tie(t.base.client.ram_dir, t.base.client.disk_dir) = lab::diagnosis_dirs(*lab, lab->client);
  t.base.data_address = lab->server.data_address;
  t.base.server.samba_conf = lab::server_files(*lab).smb_conf;
  t.lab = *lab;
}

}  // namespace

Targets targets_from_options(const po::variables_map& vm, const std::string& command) {
  if (vm.count("lab") && (vm.count("server") || vm.count("client"))) {
    throw Error(ErrorKind::kUsage, "--lab cannot be combined with --server or --client",
                fmt::format("either {} the lab (--lab) or name two hosts (--server and --client)",
                            command));
  }
  const bool use_lab = vm.count("lab") || (!vm.count("server") && !vm.count("client"));
  if (!use_lab && (!vm.count("server") || !vm.count("client"))) {
    throw Error(ErrorKind::kUsage, command + " needs both --server and --client",
                "name two hosts (e.g. --server nas --client local), or use --lab");
  }
  Targets t;
  t.server.role = "server";
  t.client.role = "client";
  if (vm.count("ssh-config")) t.server.ssh_config = t.client.ssh_config = checked_ssh_config(vm);
  t.server.accept_new_host_keys = t.client.accept_new_host_keys =
      vm.count("accept-new-host-keys") > 0;
  if (use_lab) {
    target_lab(t);
  } else {
    t.server.host = checked_host("server", vm["server"].as<std::string>());
    t.client.host = checked_host("client", vm["client"].as<std::string>());
  }
  return t;
}

}  // namespace cp::app
