// What every command's argument parsing shares: options parsed with bad ones
// a usage error, and the database a command uses (--db, else the default).
#pragma once

#include <boost/program_options.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lab/lab.h"
#include "pipeline/plan.h"
#include "remote/endpoint.h"

namespace cp::app {

// `args` parsed against `desc` (and `pos`, when given); a bad option or value
// is Error(kUsage) with `hint` as its fix.
boost::program_options::variables_map parse_options(
    const boost::program_options::options_description& desc, const std::vector<std::string>& args,
    const boost::program_options::positional_options_description* pos = nullptr,
    const std::string& hint = "see --help");

// Whether `vm` asks for --help; when it does, `desc`'s help is shown on `out`
// (show_help) and the command returns 0.
bool help_asked(const boost::program_options::variables_map& vm,
                const boost::program_options::options_description& desc, std::ostream& out);

// --db FILE, else Store::default_path().
std::string db_path(const boost::program_options::variables_map& vm);

// The plan a measuring command (diagnose, tune) runs: --plan over `base`,
// then the --share flags; with neither naming a share, the lab's shares when
// `lab` is the target. Not validated yet.
pipeline::Plan plan_from_options(const boost::program_options::variables_map& vm,
                                 const pipeline::Plan& base,
                                 const std::optional<lab::LabState>& lab);

// --ssh-config's file, which must exist (libssh would silently skip it).
std::string checked_ssh_config(const boost::program_options::variables_map& vm);

// The two ends a measuring command (diagnose, tune) works on, and what the
// lab (when it is the target) puts into the plan's defaults.
struct Targets {
  remote::EndpointSpec server, client;
  pipeline::Plan base;
  std::optional<lab::LabState> lab;
};

// --server and --client, or the lab (--lab, or neither given): Error(kUsage)
// naming `command` when they are half given or mixed with --lab, when no lab
// is up; Error(kUnsupported) when the lab is not healthy.
Targets targets_from_options(const boost::program_options::variables_map& vm,
                             const std::string& command);

}  // namespace cp::app
