#include "pipeline/runner.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <utility>

#include "core/error.h"
#include "core/facts_message_json.h"
#include "core/messages_json.h"
#include "link/agent_port.h"
#include "pipeline/stage.h"

namespace cp::pipeline {
namespace {

namespace json = boost::json;

// The stages, bottom layer first: a table entry each (its plan switch and what
// it runs); each stage lives in its own file under stages/.
struct StageKind {
  const char* name;
  bool (*enabled)(const Plan&);
  void (*run)(StageContext&);
};

const StageKind kStages[] = {
    {"disk", [](const Plan& p) { return p.disk_enabled; },
     [](StageContext& c) {
       disk_stage(c, kServer);
       disk_stage(c, kClient);
     }},
    // Small files on each end's disk, after the big files' disk stage.
    {"files", [](const Plan& p) { return p.files_enabled; },
     [](StageContext& c) {
       files_disk_stage(c, kServer);
       files_disk_stage(c, kClient);
     }},
    {"tcp", [](const Plan& p) { return p.tcp_enabled; },
     [](StageContext& c) {
       tcp_stage(c, /*upload=*/false);
       tcp_stage(c, /*upload=*/true);
     }},
    // Stage 3 (RAM shares) before stage 4 (disk shares).
    {"protocol", [](const Plan& p) { return p.proto_enabled; },
     [](StageContext& c) {
       for (const char* medium : {"ram", "disk"}) {
         for (const auto& share : c.plan.shares) {
           if (share.medium != medium) continue;
           protocol_stage(c, share);
           if (c.plan.size_scan) size_scan_stage(c, share);
         }
       }
     }},
    // Small files over each share, once its big files are measured: RAM
    // shares, then disk shares.
    {"files-shares",
     [](const Plan& p) { return p.files_enabled && p.files_shares && p.proto_enabled; },
     [](StageContext& c) {
       for (const char* medium : {"ram", "disk"}) {
         for (const auto& share : c.plan.shares) {
           if (share.medium == medium) files_share_stage(c, share);
         }
       }
     }},
};

}  // namespace

void run_stages(const Plan& plan, Agents a, RunObserver& obs, const CancelToken& cancel) {
  // Facts: the client's path to the server's data address first, then the
  // server's path back to the client's address on that path. They are decoded
  // (core/facts_message.h) and stored whole.
  // The client's facts leave Samba out: its verdict rules are the server's.
  msg::Facts cf = msg::decode<msg::Facts>(
      a.client.call("facts",
                    msg::to_json(msg::FactsRequest{plan.client.ram_dir, plan.client.disk_dir,
                                                   a.data_address, "", /*samba=*/false}),
                    60),
      "facts");
  a.client_address = cf.net && cf.net->address ? *cf.net->address : "";
  msg::Facts sf = msg::decode<msg::Facts>(
      a.server.call("facts",
                    msg::to_json(msg::FactsRequest{plan.server.ram_dir, plan.server.disk_dir,
                                                   a.client_address, plan.server.samba_conf}),
                    60),
      "facts");
  // Which agent serves each end: the static server agent ("server") or the
  // full one, and the machine it runs on (from its hello).
  for (auto [facts, link] : {std::pair{&sf, &a.server}, std::pair{&cf, &a.client}}) {
    facts->agent = msg::AgentFacts{link->hello().role, link->hello().arch};
  }
  // A dead tune session's journal that an agent reverted or refused as it
  // started: this run triggered it, so this run says so.
  for (auto [role, link] : {std::pair{kServer, &a.server}, std::pair{kClient, &a.client}}) {
    for (const std::string& line : msg::tune_start_lines(link->hello().tune_at_start)) {
      obs.on_note(fmt::format("{} agent: {}", role, line));
    }
  }
  obs.on_host({kServer, a.server_name, json::serialize(msg::to_json(sf))}, sf);
  obs.on_host({kClient, a.client_name, json::serialize(msg::to_json(cf))}, cf);

  prepare_dirs(a.server, {{plan.server.ram_dir, plan.server.disk_dir}, false, a.run_id}, obs,
               kServer);
  prepare_dirs(a.client, {{plan.client.ram_dir, plan.client.disk_dir}, false, a.run_id}, obs,
               kClient);

  StageContext ctx{plan, a, obs, cancel};
  for (const StageKind& kind : kStages) {
    if (kind.enabled(plan)) kind.run(ctx);
  }
  // Each agent removes its run dirs now; one that was abandoned (silent) or
  // whose channel closed does so when it wakes or exits, or the next run's orphan cleanup does.
  for (auto [role, link] : {std::pair{kServer, &a.server}, std::pair{kClient, &a.client}}) {
    try {
      obs.on_agent_stats(
          role, msg::decode<msg::AgentStats>(link->call("cleanup", {}, 60), "cleanup").max_rss_kb);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      obs.on_note(fmt::format("{} agent could not clean up: {}", role, describe(e)));
    }
  }
}

}  // namespace cp::pipeline
