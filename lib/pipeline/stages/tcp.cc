// Stage 2: RAM-to-RAM TCP, one direction per stage (pipeline/stage.h).
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <future>

#include "core/error.h"
#include "core/messages_json.h"
#include "core/random.h"
#include "core/units.h"
#include "core/wire.h"
#include "link/agent_port.h"

namespace cp::pipeline {

namespace json = boost::json;
using remote::AgentPort;

// One direction of TCP: the server agent listens, the client agent connects
// and sends (client->server) or receives (server->client). The receiver's
// count and time make the figure; the sender's tcp_info explains it.
void tcp_stage(StageContext& ctx, bool upload) {
  const Plan& plan = ctx.plan;
  RunObserver& obs = ctx.obs;
  const CancelToken& cancel = ctx.cancel;
  Agents& a = ctx.agents;
  StageRecord rec;
  rec.layer = "tcp";
  rec.where = upload ? "client->server" : "server->client";
  rec.params_json = json::serialize(json::object{{"seconds", plan.tcp_seconds},
                                                 {"count", plan.tcp_count},
                                                 {"buffer", plan.tcp_buffer},
                                                 {"data_address", a.data_address}});
  const std::string label = "tcp " + rec.where;
  run_series(ctx, rec, "TCP stage " + rec.where, [&](StageScope& stage) {
    // The listener serves only these (random, 128 bits each): a stranger on
    // the server's port cannot pose as a sample. It listens on the data
    // address where the server has it.
    std::vector<std::string> tokens;
    for (int i = 1; i <= plan.tcp_count; ++i) tokens.push_back(random_hex(16));
    const uint64_t port =
        ask<msg::TcpListenResult>(a.server, "tcp_listen",
                                  msg::TcpListenRequest{a.data_address, tokens}, 30)
            .port;
    for (int i = 1; i <= plan.tcp_count; ++i) {
      cancel.check();
      const std::string& token = tokens[static_cast<size_t>(i - 1)];
      SampleRecord s;
      s.seq = i;
      s.op = "send";
      s.started_at = wall_seconds();
      // The server side waits on its own thread (its own SSH session); a
      // client that fails or is cancelled ends that wait through `sample_cancel`
      // (the run's Ctrl-C reaches it as the link's default token too).
      CancelToken sample_cancel;
      auto server_side = std::async(std::launch::async, [&] {
        return ask<msg::TcpResult>(a.server, "tcp_result",
                                   msg::TcpResultRequest{token, plan.tcp_seconds + 60},
                                   plan.tcp_seconds + 90, {}, &sample_cancel);
      });
      msg::TcpResult client_r, server_r;
      std::string failure;
      try {
        const msg::TcpRunRequest run{
            a.data_address,   port,           token, upload ? "send" : "recv",
            plan.tcp_seconds, plan.tcp_buffer};
        client_r = ask<msg::TcpResult>(
            a.client, "tcp_run", run, kCallTimeout,
            [&](uint64_t b, double t) {
              obs.on_progress({label, i, plan.tcp_count, b, t, false});
            },
            &cancel);
      } catch (const Error& e) {
        sample_cancel.cancel();
        if (e.kind() == ErrorKind::kCancelled) {
          try {
            server_side.get();
          } catch (...) {
          }
          throw;
        }
        failure = e.what();
      }
      try {
        server_r = server_side.get();
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kCancelled && failure.empty()) throw;
        if (failure.empty()) failure = e.what();
      }
      if (!failure.empty()) {
        s.error = failure;
        obs.on_sample(stage.id(), s);
        throw Error(ErrorKind::kRemote, failure);
      }
      const msg::TcpResult& receiver = upload ? server_r : client_r;
      const msg::TcpResult& sender = upload ? client_r : server_r;
      s.bytes = receiver.bytes;
      s.seconds = receiver.seconds;
      s.details_json = json::serialize(
          msg::to_json(msg::TcpDetails{upload ? kClient : kServer, sender.bytes, sender.seconds,
                                       sender.tcp_info, receiver.tcp_info}));
      s.cpu_json = sample_cpu_json({{kServer, server_r.cpu}, {kClient, client_r.cpu}});
      const bool stalled =
          flag_stall(plan, s, {&a.server, &a.client}, s.seconds - plan.tcp_seconds, obs);
      obs.on_sample(stage.id(), s);
      if (!stalled && s.seconds > 0) a.tcp_rates[rec.where].push_back(double(s.bytes) / s.seconds);
      obs.on_progress({label, i, plan.tcp_count, s.bytes, s.seconds, true});
    }
  });
}

}  // namespace cp::pipeline
