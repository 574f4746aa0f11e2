#include "pipeline/runner.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <chrono>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "core/wire.h"
#include "remote/agent_link.h"

namespace cp::pipeline {
namespace {

namespace json = boost::json;
using remote::AgentLink;

// Inactivity limits when the plan's [timeouts] silence is not applied to the
// links (agents send a heartbeat every second, progress every 0.5 s).
constexpr double kCallTimeout = 120;

const char* kServer = "server";
const char* kClient = "client";

class StageScope {
 public:
  StageScope(RunObserver& obs, StageRecord rec) : obs_(obs) { id_ = obs_.on_stage_begin(rec); }
  ~StageScope() {
    if (!ended_) obs_.on_stage_end(id_, kInterrupted, "interrupted");
  }
  int64_t id() const { return id_; }
  void end(const std::string& status, const std::string& error = {}) {
    ended_ = true;
    obs_.on_stage_end(id_, status, error);
  }

 private:
  RunObserver& obs_;
  int64_t id_ = 0;
  bool ended_ = false;
};

std::string series_label(const std::string& where, const std::string& op, uint64_t size) {
  return fmt::format("disk {} {} {}", where, op, format_size(size));
}

// A sample during which an agent said nothing for longer than [timeouts]
// stall (stopped, a frozen host) timed the stall, not the layer: it is kept
// with the reason as its error and "stalled": true in its details, so the
// figures leave it out and the run is partial. `over` is the sample's time
// past its planned duration (TCP), s. Returns whether it flagged it.
bool flag_stall(const Plan& plan, SampleRecord& s, const std::vector<const AgentLink*>& links,
                double over, RunObserver& obs) {
  if (!s.error.empty()) return false;
  double silent = 0;
  for (const AgentLink* l : links) {
    if (l->last_call_max_silence() > plan.stall_after && l->last_call_max_silence() > silent) {
      silent = l->last_call_max_silence();
      s.error = fmt::format("stalled: {} said nothing for {:.1f} s during this sample", l->name(),
                            silent);
    }
  }
  if (s.error.empty() && over > plan.stall_after) {
    s.error =
        fmt::format("stalled: took {:.1f} s, {:.1f} s over its planned duration", s.seconds, over);
  }
  if (s.error.empty()) return false;
  json::object details;
  if (!s.details_json.empty()) {
    boost::system::error_code ec;
    json::value v = json::parse(s.details_json, ec);
    if (!ec && v.is_object()) details = v.as_object();
  }
  details["stalled"] = true;
  details["silent_seconds"] = silent;
  s.details_json = json::serialize(details);
  obs.on_note(s.error + "; this sample is left out of the figures");
  return true;
}

// The orphan sweep the agent did in `prepare` (run dirs of agents that are gone).
void note_swept(const json::object& prepared, RunObserver& obs, const std::string& who) {
  auto it = prepared.find("swept");
  if (it == prepared.end() || !it->value().is_array()) return;
  for (const auto& v : it->value().as_array()) {
    if (!v.is_object()) continue;
    obs.on_note(fmt::format("{}: removed {} left by an earlier run ({})", who,
                            wire::get_string(v.as_object(), "path"),
                            wire::get_string(v.as_object(), "reason")));
  }
}

void disk_stage(const Plan& plan, AgentLink& agent, const std::string& where,
                const std::string& dir, RunObserver& obs, const CancelToken& cancel) {
  StageRecord rec;
  rec.layer = "disk";
  rec.where = where;
  json::array sizes;
  for (auto s : plan.disk_sizes) sizes.push_back(s);
  rec.params_json = json::serialize(json::object{{"dir", dir},
                                                 {"sizes", sizes},
                                                 {"count", plan.disk_count},
                                                 {"block", plan.disk_block},
                                                 {"settle", plan.disk_settle}});
  rec.started_at = wall_seconds();
  StageScope stage(obs, rec);
  try {
    uint64_t biggest = 0;
    for (auto s : plan.disk_sizes) biggest = std::max(biggest, s);
    // All files of one size exist at once (written, then read back).
    agent.call("check_space", {{"dir", dir}, {"bytes", biggest * uint64_t(plan.disk_count)}}, 30);
    int seq = 0;
    for (uint64_t size : plan.disk_sizes) {
      for (const char* op : {"write", "read"}) {
        const std::string label = series_label(where, op, size);
        if (std::string(op) == "read") {
          // Let writeback of what was just written finish before timing reads.
          const double until = monotonic_seconds() + plan.disk_settle;
          while (monotonic_seconds() < until) {
            cancel.check();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        }
        for (int i = 1; i <= plan.disk_count; ++i) {
          cancel.check();
          // A distinct file per sample: a second copy of one file would come
          // from the page cache.
          const std::string file = fmt::format("{}-{}-{}.dat", where, size, i);
          json::object args{{"dir", dir}, {"op", op}, {"name", file}, {"block", plan.disk_block}};
          if (std::string(op) == "write")
            args["size"] = size;
          else
            args["delete_after"] = true;
          SampleRecord s;
          s.seq = ++seq;
          s.op = op;
          s.size = size;
          s.started_at = wall_seconds();
          auto progress = [&](uint64_t b, double t) {
            obs.on_progress({label, i, plan.disk_count, b, t, false});
          };
          json::object r;
          try {
            r = agent.call("disk", args, kCallTimeout, progress, &cancel);
          } catch (const Error& e) {
            if (e.kind() == ErrorKind::kCancelled) throw;
            s.error = e.what();
            obs.on_sample(stage.id(), s);
            throw;
          }
          s.bytes = wire::get_u64(r, "bytes");
          s.seconds = wire::get_double(r, "seconds");
          s.cache_possible = wire::get_bool(r, "cache_possible");
          s.details_json =
              json::serialize(json::object{{"file", file},
                                           {"method", wire::get_string(r, "method")},
                                           {"direct", wire::get_bool(r, "direct")},
                                           {"huge_page", wire::opt_bool(r, "huge_page", false)},
                                           {"block", plan.disk_block}});
          s.cpu_json = json::serialize(json::object{{where, wire::get_object(r, "cpu")}});
          flag_stall(plan, s, {&agent}, 0, obs);
          obs.on_sample(stage.id(), s);
          obs.on_progress({label, i, plan.disk_count, s.bytes, s.seconds, true});
        }
      }
    }
    stage.end(kComplete);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    stage.end(kFailed, describe(e));
    obs.on_note(fmt::format("disk stage on {} failed: {}", where, describe(e)));
  }
}

// One direction of TCP: the server agent listens, the client agent connects
// and sends (client->server) or receives (server->client). The receiver's
// count and time make the figure; the sender's tcp_info explains it.
void tcp_stage(const Plan& plan, Agents& a, bool upload, RunObserver& obs,
               const CancelToken& cancel) {
  StageRecord rec;
  rec.layer = "tcp";
  rec.where = upload ? "client->server" : "server->client";
  rec.params_json = json::serialize(json::object{{"seconds", plan.tcp_seconds},
                                                 {"count", plan.tcp_count},
                                                 {"buffer", plan.tcp_buffer},
                                                 {"data_address", a.data_address}});
  rec.started_at = wall_seconds();
  StageScope stage(obs, rec);
  const std::string label = "tcp " + rec.where;
  try {
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
      flag_stall(plan, s, {&a.server, &a.client}, s.seconds - plan.tcp_seconds, obs);
      obs.on_sample(stage.id(), s);
      obs.on_progress({label, i, plan.tcp_count, s.bytes, s.seconds, true});
    }
    stage.end(kComplete);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    stage.end(kFailed, describe(e));
    obs.on_note(fmt::format("TCP stage {} failed: {}", rec.where, describe(e)));
  }
}

json::object share_message(const SharePlan& share, const Agents& a);

// The server agent's run directory inside the share (made writable for the
// protocol server's user); its name, with a '/', prefixes remote paths.
std::string share_run_prefix(Agents& a, const SharePlan& share, RunObserver& obs) {
  json::object p = a.server.call(
      "prepare", {{"dirs", json::array{share.server_dir}}, {"shared", true}, {"run", a.run_id}},
      30);
  note_swept(p, obs, kServer);
  const std::string made = wire::get_string(wire::get_object(p, "dirs"), share.server_dir);
  return made.substr(made.rfind('/') + 1) + "/";
}

// The SMB session the client holds, as smbd reports it: dialect, signing,
// encryption (libsmbclient does not tell its caller). {"smb_negotiated":
// "unknown: why"} when the server cannot say.
json::object smb_negotiated(const Plan& plan, Agents& a, RunObserver& obs) {
  try {
    json::object st = a.server.call("smb_status", {{"conf", plan.server.samba_conf}}, 60);
    for (const auto& v : wire::get_array(st, "sessions")) {
      if (!v.is_object()) continue;
      const auto& sess = v.as_object();
      const std::string client = wire::get_string(sess, "client");
      // "ipv4:198.18.0.2:41234": this client's address between the colons.
      if (!a.client_address.empty() &&
          client.find(":" + a.client_address + ":") == std::string::npos) {
        continue;
      }
      json::object out;
      for (const char* k : {"dialect", "signing", "encryption"}) {
        std::string val = wire::get_string(sess, k);
        out[std::string("smb_") + k] = (val.empty() || val == "-") ? "none" : val;
      }
      return out;
    }
    return {{"smb_negotiated", "unknown: smbstatus lists no session from this client"}};
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    obs.on_note(fmt::format("cannot tell what SMB negotiated: {}", e.what()));
    return {{"smb_negotiated", std::string("unknown: ") + e.what()}};
  }
}

// One share through its protocol: for each size, `count` reads (a fresh
// server file each, evicted from the server's page cache on disk shares,
// read into the client's RAM dir) then `count` writes (a fresh client file
// written to the share). Both ends check size and checksum; both remove
// what they made.
void protocol_stage(const Plan& plan, const SharePlan& share, Agents& a, RunObserver& obs,
                    const CancelToken& cancel) {
  StageRecord rec;
  rec.layer = share.driver;
  rec.where = share.medium;
  json::array sizes;
  for (auto s : plan.proto_sizes) sizes.push_back(s);
  rec.params_json = json::serialize(json::object{{"share", share.name},
                                                 {"url", share.url},
                                                 {"server_dir", share.server_dir},
                                                 {"medium", share.medium},
                                                 {"sizes", sizes},
                                                 {"count", plan.proto_count},
                                                 {"block", plan.proto_block}});
  rec.started_at = wall_seconds();
  StageScope stage(obs, rec);
  const bool evict = share.medium == "disk";
  const std::string& client_dir = plan.client.ram_dir;
  const json::object share_msg = share_message(share, a);
  const bool has_server = !share.server_dir.empty();
  json::object negotiated;  // SMB: what smbd says it agreed with this client
  try {
    // The server's run directory inside the share; its name is the remote prefix.
    std::string prefix;
    if (!share.server_dir.empty()) {
      prefix = share_run_prefix(a, share, obs);
      uint64_t biggest = 0;
      for (auto s : plan.proto_sizes) biggest = std::max(biggest, s);
      a.server.call("check_space",
                    {{"dir", share.server_dir},
                     {"bytes", biggest},
                     {"hint",
                      "free some space on the share, or use smaller files ([protocol] "
                      "sizes)"}},
                    30);
    }
    int seq = 0;
    for (uint64_t size : plan.proto_sizes) {
      for (const char* op : {"read", "write"}) {
        const bool read = std::string(op) == "read";
        const std::string label =
            fmt::format("{} {} {} {}", share.driver, share.medium, op, format_size(size));
        for (int i = 1; i <= plan.proto_count; ++i) {
          cancel.check();
          // Named after the share too: a file a failed stage could not remove
          // never collides with the next share's.
          const std::string file = fmt::format("{}-{}-{}-{}.dat", share.name, op, size, i);
          SampleRecord s;
          s.seq = ++seq;
          s.op = op;
          s.size = size;
          s.started_at = wall_seconds();
          std::string expect;
          if (read) {
            if (!share.server_dir.empty()) {
              json::object m = a.server.call("make_file",
                                             {{"dir", share.server_dir},
                                              {"name", file},
                                              {"size", size},
                                              {"evict", evict},
                                              {"shared", true}},
                                             kCallTimeout, {}, &cancel);
              expect = wire::get_string(m, "checksum");
            }
          } else {
            json::object m =
                a.client.call("make_file", {{"dir", client_dir}, {"name", file}, {"size", size}},
                              kCallTimeout, {}, &cancel);
            expect = wire::get_string(m, "checksum");
          }
          if (!share.server_dir.empty()) a.server.call("cpu_start", {}, 30);
          json::object r;
          try {
            r = a.client.call(
                "transfer",
                {{"share", share_msg},
                 {"op", op},
                 {"remote", prefix + file},
                 {"dir", client_dir},
                 {"name", file},
                 {"size", size},
                 {"block", plan.proto_block},
                 {"delete_after", true}},
                kCallTimeout,
                [&](uint64_t b, double t) {
                  obs.on_progress({label, i, plan.proto_count, b, t, false});
                },
                &cancel);
          } catch (const Error& e) {
            if (e.kind() == ErrorKind::kCancelled) throw;
            s.error = e.what();
            obs.on_sample(stage.id(), s);
            // Both ends remove what this sample made, whatever reached them.
            try {
              if (has_server) {
                a.server.call("cpu_stop", {}, 30);
                a.server.call("remove_file", {{"dir", share.server_dir}, {"name", file}}, 30);
              }
              a.client.call("remove_file", {{"dir", client_dir}, {"name", file}}, 30);
            } catch (const Error& cleanup) {
              if (cleanup.kind() == ErrorKind::kCancelled) throw;
            }
            throw;
          }
          json::object server_cpu;
          std::string arrived = wire::get_string(r, "checksum");
          if (!share.server_dir.empty()) {
            server_cpu = a.server.call("cpu_stop", {}, 30);
            if (!read) {
              json::object info =
                  a.server.call("file_info", {{"dir", share.server_dir}, {"name", file}},
                                kCallTimeout, {}, &cancel);
              arrived = wire::get_string(info, "checksum");
              if (wire::get_u64(info, "bytes") != size) {
                s.error = fmt::format("the server holds {} bytes of {}, not {}",
                                      wire::get_u64(info, "bytes"), file, size);
              }
            }
            a.server.call("remove_file", {{"dir", share.server_dir}, {"name", file}}, 30);
          } else {
            arrived = expect = wire::get_string(r, "checksum");
          }
          s.bytes = wire::get_u64(r, "bytes");
          s.seconds = wire::get_double(r, "seconds");
          if (s.error.empty() && s.bytes != size) {
            s.error = fmt::format("moved {} bytes of {}, not {}", s.bytes, file, size);
          }
          if (s.error.empty() && arrived != expect) {
            s.error =
                fmt::format("checksum mismatch on {}: sent {}, arrived {}", file, expect, arrived);
          }
          json::object props = wire::get_object(r, "properties");
          if (share.driver == "smb" && has_server) {
            if (negotiated.empty()) negotiated = smb_negotiated(plan, a, obs);
            for (const auto& [k, v] : negotiated) props[k] = v;
            if (negotiated.contains("smb_dialect")) props.erase("negotiated");  // now known
          }
          s.details_json = json::serialize(json::object{
              {"file", file}, {"share", share.name}, {"checksum", expect}, {"properties", props}});
          json::object cpu{{"client", wire::get_object(r, "cpu")}};
          if (!server_cpu.empty()) cpu["server"] = server_cpu;
          s.cpu_json = json::serialize(cpu);
          const bool stalled =
              flag_stall(plan, s, {&a.client}, 0, obs);  // the transfer was its last call
          obs.on_sample(stage.id(), s);
          obs.on_progress({label, i, plan.proto_count, s.bytes, s.seconds, true});
          if (!s.error.empty() && !stalled) throw Error(ErrorKind::kIo, s.error);
        }
      }
    }
    a.client.call("close_shares", {}, 30);
    stage.end(kComplete);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    try {
      a.client.call("close_shares", {}, 30);
    } catch (const Error&) {
    }
    stage.end(kFailed, describe(e));
    obs.on_note(fmt::format("{} stage ({}) failed: {}", share.driver, share.name, describe(e)));
  }
}

json::object share_message(const SharePlan& share, const Agents& a) {
  json::object msg{
      {"name", share.name}, {"url", share.url}, {"driver", share.driver}, {"user", share.user}};
  if (auto it = a.passwords.find(share.name); it != a.passwords.end()) msg["password"] = it->second;
  json::object opts;
  for (const auto& [k, v] : share.options) opts[k] = v;
  msg["options"] = opts;
  return msg;
}

// The transfer-size sweep of one share: for each request size, sequential
// and random reads of one laid-out file, then sequential and random writes.
// Patterns the driver cannot do (random access over FTP) are skipped with a note.
void sweep_stage(const Plan& plan, const SharePlan& share, Agents& a, RunObserver& obs,
                 const CancelToken& cancel) {
  StageRecord rec;
  rec.layer = share.driver;
  rec.where = share.medium;
  json::array sizes;
  for (auto s : plan.sweep_sizes) sizes.push_back(s);
  rec.params_json = json::serialize(json::object{{"share", share.name},
                                                 {"url", share.url},
                                                 {"medium", share.medium},
                                                 {"sweep", true},
                                                 {"sizes", sizes},
                                                 {"bytes", plan.sweep_bytes},
                                                 {"file", plan.sweep_file}});
  rec.started_at = wall_seconds();
  StageScope stage(obs, rec);
  const json::object share_msg = share_message(share, a);
  const bool has_server = !share.server_dir.empty();
  try {
    std::string prefix;
    const std::string source = "sweep-source.dat";
    if (has_server) {
      prefix = share_run_prefix(a, share, obs);
      a.server.call("make_file",
                    {{"dir", share.server_dir},
                     {"name", source},
                     {"size", plan.sweep_file},
                     {"evict", share.medium == "disk"},
                     {"shared", true}},
                    kCallTimeout, {}, &cancel);
    }
    std::set<std::string> unsupported;
    int seq = 0;
    const int cells = static_cast<int>(plan.sweep_sizes.size() * 4);
    for (uint64_t request : plan.sweep_sizes) {
      for (const char* pattern : {"seqread", "randread", "seqwrite", "randwrite"}) {
        cancel.check();
        if (unsupported.count(pattern)) continue;
        const bool write = std::string(pattern).find("write") != std::string::npos;
        const std::string file = write ? fmt::format("sweep-{}-{}.dat", pattern, request) : source;
        SampleRecord s;
        s.op = std::string("sweep-") + pattern;
        s.size = request;
        s.started_at = wall_seconds();
        if (has_server) a.server.call("cpu_start", {}, 30);
        json::object r;
        try {
          r = a.client.call("sweep",
                            {{"share", share_msg},
                             {"remote", prefix + file},
                             {"pattern", pattern},
                             {"request", request},
                             {"bytes", plan.sweep_bytes},
                             {"file_size", plan.sweep_file}},
                            kCallTimeout, {}, &cancel);
        } catch (const Error& e) {
          if (e.kind() == ErrorKind::kCancelled) throw;
          if (has_server) a.server.call("cpu_stop", {}, 30);
          if (e.kind() == ErrorKind::kUnsupported) {
            unsupported.insert(pattern);
            obs.on_note(fmt::format("{} sweep: {} skipped: {}", share.name, pattern, e.what()));
            continue;
          }
          s.seq = ++seq;
          s.error = e.what();
          obs.on_sample(stage.id(), s);
          throw;
        }
        json::object cpu{{"client", wire::get_object(r, "cpu")}};
        if (has_server) {
          cpu["server"] = a.server.call("cpu_stop", {}, 30);
          if (write) a.server.call("remove_file", {{"dir", share.server_dir}, {"name", file}}, 30);
        }
        s.seq = ++seq;
        s.bytes = wire::get_u64(r, "bytes");
        s.seconds = wire::get_double(r, "seconds");
        s.details_json = json::serialize(
            json::object{{"share", share.name}, {"pattern", pattern}, {"request", request}});
        s.cpu_json = json::serialize(cpu);
        obs.on_sample(stage.id(), s);
        obs.on_progress({fmt::format("{} sweep {} {}", share.driver, pattern, format_size(request)),
                         seq, cells, s.bytes, s.seconds, true});
      }
    }
    if (has_server) a.server.call("remove_file", {{"dir", share.server_dir}, {"name", source}}, 30);
    stage.end(kComplete);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCancelled) throw;
    stage.end(kFailed, describe(e));
    obs.on_note(fmt::format("{} sweep ({}) failed: {}", share.driver, share.name, describe(e)));
  }
}

std::string net_address(const json::object& facts) {
  auto it = facts.find("net");
  if (it == facts.end() || !it->value().is_object()) return {};
  const auto& net = it->value().as_object();
  auto ad = net.find("address");
  return (ad != net.end() && ad->value().is_string()) ? std::string(ad->value().as_string()) : "";
}

}  // namespace

void run_stages(const Plan& plan, Agents a, RunObserver& obs, const CancelToken& cancel) {
  // Facts: the client's path to the server's data address first, then the
  // server's path back to the client's address on that path.
  json::object cf = a.client.call("facts",
                                  {{"ram_dir", plan.client.ram_dir},
                                   {"disk_dir", plan.client.disk_dir},
                                   {"peer_address", a.data_address}},
                                  60);
  a.client_address = net_address(cf);
  json::object sf = a.server.call("facts",
                                  {{"ram_dir", plan.server.ram_dir},
                                   {"disk_dir", plan.server.disk_dir},
                                   {"peer_address", a.client_address},
                                   {"samba_conf", plan.server.samba_conf}},
                                  60);
  // Which agent serves each end: the static server agent ("server") or the
  // full one, and the machine it runs on (from its hello).
  for (auto [facts, link] : {std::pair{&sf, &a.server}, std::pair{&cf, &a.client}}) {
    (*facts)["agent"] = {{"role", wire::opt_string(link->hello(), "role")},
                         {"arch", wire::opt_string(link->hello(), "arch")}};
  }
  obs.on_host({kServer, a.server_name, json::serialize(sf)});
  obs.on_host({kClient, a.client_name, json::serialize(cf)});

  note_swept(a.server.call("prepare",
                           {{"dirs", json::array{plan.server.ram_dir, plan.server.disk_dir}},
                            {"run", a.run_id}},
                           30),
             obs, kServer);
  note_swept(a.client.call("prepare",
                           {{"dirs", json::array{plan.client.ram_dir, plan.client.disk_dir}},
                            {"run", a.run_id}},
                           30),
             obs, kClient);

  if (plan.disk_enabled) {
    disk_stage(plan, a.server, kServer, plan.server.disk_dir, obs, cancel);
    disk_stage(plan, a.client, kClient, plan.client.disk_dir, obs, cancel);
  }
  if (plan.tcp_enabled) {
    tcp_stage(plan, a, /*upload=*/false, obs, cancel);
    tcp_stage(plan, a, /*upload=*/true, obs, cancel);
  }
  if (plan.proto_enabled) {
    // Stage 3 (RAM shares) before stage 4 (disk shares): bottom layer first.
    for (const char* medium : {"ram", "disk"}) {
      for (const auto& share : plan.shares) {
        if (share.medium != medium) continue;
        protocol_stage(plan, share, a, obs, cancel);
        if (plan.sweep) sweep_stage(plan, share, a, obs, cancel);
      }
    }
  }
  // Each agent removes its run dirs now; one that was abandoned (silent) or
  // whose channel closed does so when it wakes or exits, or the next run's sweep does.
  for (auto [role, link] : {std::pair{kServer, &a.server}, std::pair{kClient, &a.client}}) {
    try {
      json::object r = link->call("cleanup", {}, 60);
      obs.on_agent_stats(role, wire::get_u64(r, "max_rss_kb"));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      obs.on_note(fmt::format("{} agent could not clean up: {}", role, describe(e)));
    }
  }
}

}  // namespace cp::pipeline
