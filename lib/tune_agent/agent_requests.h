// The agent's tune requests (schemas/agent-protocol.md, "Tuning"): the agent
// dispatches every "tune_*" message here, reverts a dead session's journal
// at its start and its own at its exit. Only .cc files include this header.
#pragma once

#include <boost/json/object.hpp>

#include <string>

#include "core/messages.h"

namespace cp::tune {

bool is_tune_request(const std::string& type);

// "tune_plan" {knob, value, disk_dir, samba_conf, data_address, console, afp_conf,
//   afp_restart}: the target, current
//   value and exact apply/revert commands, changing nothing;
// "tune_apply" (same fields): journal the original, then apply;
//   A change that may cut this host's SSH connection (cuts_ssh) is applied
//   only with console=true and arms a watchdog: unless "tune_confirm" comes
//   within confirm_s seconds (default 20), the agent reverts by itself;
// "tune_confirm" {}: {confirmed: false when the watchdog already reverted};
// "tune_revert" {}: revert everything journaled; the reply also lists what
//   this agent reverted at its start (a killed session's journal).
boost::json::object handle_tune_request(const std::string& type, const boost::json::object& req);

// At agent start, before the sentinel: reverts a journal no live process
// holds (what passes the journal's checks; the rest is refused, never run).
// Never throws: a failure is reported like the rest, by start_report().
void revert_at_agent_start() noexcept;

// What revert_at_agent_start reverted and refused, for the hello answer:
// the run that started this agent reports it.
msg::TuneStartReport start_report();

// When the agent ends (channel closed, bye, signal): reverts what it applied.
void revert_at_agent_exit() noexcept;

}  // namespace cp::tune
