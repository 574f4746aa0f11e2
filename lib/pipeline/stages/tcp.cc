// Stage 2: RAM-to-RAM TCP, one direction per stage (pipeline/stage.h).
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <unistd.h>

#include <future>

#include "core/error.h"
#include "core/units.h"
#include "core/wire.h"
#include "remote/agent_link.h"

namespace cp::pipeline {

namespace json = boost::json;
using remote::AgentLink;

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
    const std::string bind = a.data_address.find(':') != std::string::npos ? "::" : "0.0.0.0";
    json::object l = a.server.call("tcp_listen", {{"bind", bind}}, 30);
    const uint64_t port = wire::get_u64(l, "port");
    for (int i = 1; i <= plan.tcp_count; ++i) {
      cancel.check();
      const std::string token = fmt::format("{}-{}-{}", upload ? "up" : "down", i, getpid());
      SampleRecord s;
      s.seq = i;
      s.op = "send";
      s.started_at = wall_seconds();
      // The server side waits on its own thread (its own SSH session); a
      // client that fails or is cancelled ends that wait through `sample_cancel`
      // (the run's Ctrl-C reaches it as the link's default token too).
      CancelToken sample_cancel;
      auto server_side = std::async(std::launch::async, [&] {
        return a.server.call("tcp_result", {{"token", token}, {"timeout", plan.tcp_seconds + 60}},
                             plan.tcp_seconds + 90, {}, &sample_cancel);
      });
      json::object client_r, server_r;
      std::string failure;
      try {
        client_r = a.client.call(
            "tcp_run",
            {{"host", a.data_address},
             {"port", port},
             {"token", token},
             {"mode", upload ? "send" : "recv"},
             {"seconds", plan.tcp_seconds},
             {"buffer", plan.tcp_buffer}},
            kCallTimeout,
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
      const json::object& receiver = upload ? server_r : client_r;
      const json::object& sender = upload ? client_r : server_r;
      s.bytes = wire::get_u64(receiver, "bytes");
      s.seconds = wire::get_double(receiver, "seconds");
      s.details_json = json::serialize(
          json::object{{"sender", upload ? kClient : kServer},
                       {"sender_bytes", wire::get_u64(sender, "bytes")},
                       {"sender_seconds", wire::get_double(sender, "seconds")},
                       {"tcp_info", wire::get_object(sender, "tcp_info")},
                       {"receiver_tcp_info", wire::get_object(receiver, "tcp_info")}});
      s.cpu_json = json::serialize(json::object{{kServer, wire::get_object(server_r, "cpu")},
                                                {kClient, wire::get_object(client_r, "cpu")}});
      const bool stalled =
          flag_stall(plan, s, {&a.server, &a.client}, s.seconds - plan.tcp_seconds, obs);
      obs.on_sample(stage.id(), s);
      if (!stalled && s.seconds > 0) a.tcp_rates[rec.where].push_back(double(s.bytes) / s.seconds);
      obs.on_progress({label, i, plan.tcp_count, s.bytes, s.seconds, true});
    }
  });
}

}  // namespace cp::pipeline
