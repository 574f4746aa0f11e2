// Stage 2: RAM-to-RAM TCP, one direction per stage (pipeline/stage.h): one
// stream per sample, then, where [tcp] streams asks for it, several at once.
#include "pipeline/stage.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
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

namespace {

// A thread or a core at >= 90 % of a core is CPU-bound (the verdict's
// kThreadSaturated): then one stream is no measure of the link.
constexpr double kStreamCpuBound = 90;
// streams = auto adds a stream while the total rises by at least 5 %, more
// than the sample-to-sample noise of a steady TCP (analysis kSteadyRate).
constexpr double kStreamsGain = 1.05;

// One sample's outcome: its record, and each end's CPU over it.
struct TcpSample {
  stored::Sample s;
  msg::CpuSummary server_cpu, client_cpu;
  bool stalled = false;
  double rate() const { return s.seconds > 0 ? double(s.bytes) / s.seconds : 0; }
};

bool cpu_bound(const msg::CpuSummary& c) {
  for (const msg::ProcLoad& p : c.top) {
    if (p.top_thread_pct >= kStreamCpuBound) return true;
  }
  return std::any_of(c.core_busy_pct.begin(), c.core_busy_pct.end(),
                     [](double b) { return b >= kStreamCpuBound; });
}

class TcpDirection {
 public:
  TcpDirection(StageContext& ctx, StageScope& stage, bool upload, std::string where)
      : ctx_(ctx), stage_(stage), upload_(upload), where_(std::move(where)) {}

  // Listens for the `streams` connections of each of `samples` samples.
  void listen(int samples, int streams) {
    tokens_.clear();
    next_ = 0;
    std::vector<std::string> all;
    for (int i = 0; i < samples * streams; ++i) all.push_back(random_hex(16));
    tokens_ = all;
    // The listener serves only these (random, 128 bits each): a stranger on
    // the server's port cannot pose as a sample. It listens on the data
    // address where the server has it.
    port_ = ask<msg::TcpListenResult>(ctx_.agents.server, "tcp_listen",
                                      msg::TcpListenRequest{ctx_.agents.data_address, all}, 30)
                .port;
  }

  // One sample of `streams` connections at once (1: the one stream of old).
  TcpSample sample(int seq, int of, int streams);

 private:
  StageContext& ctx_;
  StageScope& stage_;
  bool upload_;
  std::string where_;
  std::vector<std::string> tokens_;
  size_t next_ = 0;
  uint64_t port_ = 0;
};

TcpSample TcpDirection::sample(int seq, int of, int streams) {
  const Plan& plan = ctx_.plan;
  Agents& a = ctx_.agents;
  CP_CHECK(next_ + static_cast<size_t>(streams) <= tokens_.size());
  std::vector<std::string> tokens(tokens_.begin() + static_cast<ptrdiff_t>(next_),
                                  tokens_.begin() + static_cast<ptrdiff_t>(next_) + streams);
  next_ += static_cast<size_t>(streams);
  if (streams == 1) tokens.clear();  // one stream: the request as older agents know it
  const std::string& token = tokens_[next_ - static_cast<size_t>(streams)];
  const std::string label =
      streams == 1 ? "tcp " + where_ : fmt::format("tcp {}, {} streams", where_, streams);
  TcpSample out;
  stored::Sample& s = out.s;
  s.seq = seq;
  s.op = "send";
  s.started_at = wall_seconds();
  // The server side waits on its own thread (its own SSH session); a client
  // that fails or is cancelled ends that wait through `sample_cancel` (the
  // run's Ctrl-C reaches it as the link's default token too).
  CancelToken sample_cancel;
  auto server_side = std::async(std::launch::async, [&] {
    return ask<msg::TcpResult>(a.server, "tcp_result",
                               msg::TcpResultRequest{token, plan.tcp_seconds + 60, tokens},
                               plan.tcp_seconds + 90, {}, &sample_cancel);
  });
  msg::TcpResult client_r, server_r;
  std::string failure;
  try {
    const msg::TcpRunRequest run{
        a.data_address,   port_,           token, upload_ ? "send" : "recv",
        plan.tcp_seconds, plan.tcp_buffer, tokens};
    client_r = ask<msg::TcpResult>(
        a.client, "tcp_run", run, kCallTimeout,
        [&](uint64_t b, double t) {
          ctx_.obs.on_progress({label, seq, of, b, t, false});
        },
        &ctx_.cancel);
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
  if (failure.empty() && streams > 1 &&
      (client_r.streams.size() != size_t(streams) || server_r.streams.size() != size_t(streams))) {
    failure = fmt::format("asked for {} TCP streams, the agents ran {} and {}", streams,
                          client_r.streams.size(), server_r.streams.size());
  }
  if (!failure.empty()) {
    s.error = failure;
    ctx_.obs.on_sample(stage_.id(), s);
    throw Error(ErrorKind::kRemote, failure, "redeploy both agents from this build");
  }
  const msg::TcpResult& receiver = upload_ ? server_r : client_r;
  const msg::TcpResult& sender = upload_ ? client_r : server_r;
  s.bytes = receiver.bytes;
  s.seconds = receiver.seconds;
  msg::TcpDetails tcp{upload_ ? kClient : kServer,
                      sender.bytes,
                      sender.seconds,
                      sender.tcp_info,
                      receiver.tcp_info,
                      {}};
  // Each stream: the receiver's count and time, the sender's socket.
  for (size_t i = 0; i < receiver.streams.size(); ++i) {
    tcp.streams.push_back(
        {receiver.streams[i].bytes, receiver.streams[i].seconds, sender.streams[i].tcp_info});
  }
  s.details.kind = std::move(tcp);
  s.cpu = std::vector<stored::EndCpu>{{kServer, server_r.cpu}, {kClient, client_r.cpu}};
  out.server_cpu = server_r.cpu;
  out.client_cpu = client_r.cpu;
  out.stalled = flag_stall(plan, s, {&a.server, &a.client}, s.seconds - plan.tcp_seconds, ctx_.obs);
  ctx_.obs.on_sample(stage_.id(), s);
  ctx_.obs.on_progress({label, seq, of, s.bytes, s.seconds, true});
  return out;
}

// streams = auto: several streams only where one is CPU-bound on either end,
// at most one per core of the end with fewer cores.
int auto_stream_limit(const std::vector<TcpSample>& single) {
  bool bound = false;
  size_t cores = 0;
  for (const TcpSample& t : single) {
    if (!t.s.error.empty() || t.stalled) continue;
    bound = bound || cpu_bound(t.server_cpu) || cpu_bound(t.client_cpu);
    const size_t fewer =
        std::min(t.server_cpu.core_busy_pct.size(), t.client_cpu.core_busy_pct.size());
    if (fewer > 0) cores = cores ? std::min(cores, fewer) : fewer;
  }
  return bound ? static_cast<int>(std::min<size_t>(cores, kMaxTcpStreams)) : 1;
}

double median_rate(const std::vector<TcpSample>& samples) {
  std::vector<double> r;
  for (const TcpSample& t : samples) {
    if (!t.stalled && t.rate() > 0) r.push_back(t.rate());
  }
  if (r.empty()) return 0;
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

}  // namespace

// One direction of TCP: the server agent listens, the client agent connects
// and sends (client->server) or receives (server->client). The receiver's
// count and time make the figure; the sender's tcp_info explains it.
void tcp_stage(StageContext& ctx, bool upload) {
  const Plan& plan = ctx.plan;
  Agents& a = ctx.agents;
  StageRecord rec = new_stage("tcp", upload ? "client->server" : "server->client",
                              {{"seconds", plan.tcp_seconds},
                               {"count", plan.tcp_count},
                               {"buffer", plan.tcp_buffer},
                               {"streams", streams_value(plan.tcp_streams)},
                               {"data_address", a.data_address}});
  run_series(ctx, rec, "TCP stage " + rec.where, [&](StageScope& stage) {
    TcpDirection dir(ctx, stage, upload, rec.where);
    dir.listen(plan.tcp_count, 1);
    std::vector<TcpSample> single;
    for (int i = 1; i <= plan.tcp_count; ++i) {
      ctx.cancel.check();
      single.push_back(dir.sample(i, plan.tcp_count, 1));
      if (!single.back().stalled && single.back().rate() > 0) {
        a.tcp_rates[rec.where].push_back(single.back().rate());
      }
    }
    // Several streams: N as the plan says, or auto's climb.
    int seq = plan.tcp_count;
    int best = plan.tcp_streams;
    if (plan.tcp_streams == kAutoTcpStreams) {
      const int limit = auto_stream_limit(single);
      if (limit < 2) return;
      dir.listen(limit - 1 + plan.tcp_count - 1, limit);
      const int most = seq + limit - 1 + plan.tcp_count - 1;  // samples, at most
      double best_rate = median_rate(single);
      best = 1;
      for (int n = 2; n <= limit; ++n) {
        ctx.cancel.check();
        const TcpSample t = dir.sample(++seq, most, n);
        if (t.stalled || t.rate() < best_rate * kStreamsGain) break;
        best = n;
        best_rate = t.rate();
      }
      if (best < 2) return;
      // The best count's series: its first sample is in already.
      for (int i = 2; i <= plan.tcp_count; ++i) {
        ctx.cancel.check();
        dir.sample(++seq, most, best);
      }
      return;
    }
    if (best < 2) return;
    dir.listen(plan.tcp_count, best);
    for (int i = 1; i <= plan.tcp_count; ++i) {
      ctx.cancel.check();
      dir.sample(++seq, plan.tcp_count * 2, best);
    }
  });
}

}  // namespace cp::pipeline
