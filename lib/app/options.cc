#include "app/options.h"

#include "core/error.h"
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

}  // namespace cp::app
