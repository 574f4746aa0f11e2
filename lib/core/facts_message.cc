#include <fmt/format.h>

#include <boost/json.hpp>

#include <cmath>

#include "core/error.h"
#include "core/facts_message_json.h"

namespace cp::msg {
namespace json = boost::json;
namespace {

// ---- writing: nullopt is null ----------------------------------------------

template <class T>
json::value or_null(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object named_values(const NamedValues& values) {
  json::object o;
  for (const NamedValue& v : values) o[v.name] = or_null(v.value);
  return o;
}

json::object to_json(const NetFacts& m) {
  json::object o{{"peer", m.peer},
                 {"name", or_null(m.name)},
                 {"address", or_null(m.address)},
                 {"mtu", or_null(m.mtu)},
                 {"speed_mbit", or_null(m.speed_mbit)},
                 {"shaped_rate_bit", or_null(m.shaped_rate_bit)}};
  if (!m.error.empty()) o["error"] = m.error;
  return o;
}

json::object to_json(const BusFacts& m) {
  return {{"kind", m.kind}, {"link", m.link}, {"ceiling_bytes_per_s", m.ceiling_bytes_per_s}};
}

json::object to_json(const BlockDeviceFacts& m) {
  json::array slaves;
  for (const std::string& s : m.slaves) slaves.emplace_back(s);
  json::object o{{"name", m.name},
                 {"disk", m.disk},
                 {"partition", m.partition},
                 {"read_ahead_kb", or_null(m.read_ahead_kb)},
                 {"scheduler", or_null(m.scheduler)},
                 {"rotational", or_null(m.rotational)},
                 {"backing_file", or_null(m.backing_file)},
                 {"slaves", std::move(slaves)}};
  // Written only when known, so runs stored before the bus was asked for
  // re-encode to the same text.
  if (m.bus) o["bus"] = to_json(*m.bus);
  if (!m.member_buses.empty()) {
    json::array members;
    for (const MemberBusFacts& b : m.member_buses) {
      members.push_back(json::object{{"member", b.member}, {"bus", to_json(b.bus)}});
    }
    o["member_buses"] = std::move(members);
  }
  return o;
}

json::object to_json(const ZfsFacts& m) {
  return {{"arc_c_max_bytes", or_null(m.arc_c_max_bytes)},
          {"arc_size_bytes", or_null(m.arc_size_bytes)}};
}

json::object to_json(const DirFacts& m) {
  json::object o{{"path", m.path},
                 {"fs_type", or_null(m.fs_type)},
                 {"total_bytes", or_null(m.total_bytes)},
                 {"avail_bytes", or_null(m.avail_bytes)}};
  if (m.with_device) {
    o["mount_source"] = or_null(m.mount_source);
    o["device"] = m.device ? json::value(to_json(*m.device)) : json::value(nullptr);
    o["zfs"] = m.zfs ? json::value(to_json(*m.zfs)) : json::value(nullptr);
  }
  return o;
}

json::object to_json(const SambaFacts& m) {
  json::object o{{"config_path", m.config_path}};
  if (m.pid > 0) o["pid"] = m.pid;  // an instance of samba_instances
  if (!m.error.empty()) {
    o["error"] = m.error;
    return o;
  }
  o["found_by"] = m.found_by;
  o["source"] = m.source;
  o["sha256"] = m.sha256;
  o["global"] = named_values(m.global);
  if (!m.shares.empty()) {  // facts stored before shares were read re-encode as they were
    json::object shares;
    for (const auto& [name, values] : m.shares) shares[name] = named_values(values);
    o["shares"] = std::move(shares);
  }
  return o;
}

template <class T>
json::value object_or_null(const std::optional<T>& v) {
  return v ? json::value(to_json(*v)) : json::value(nullptr);
}

// ---- reading: absent / null keep the default; mistyped too from storage,
// from the peer Error(kPeer) naming the field --------------------------------

// Where a read is: its source, and the path of the object for messages.
struct Ctx {
  Source src;
  std::string path;  // "facts", "facts.net"
  Ctx at(const char* key) const { return {src, path + "." + key}; }
  void bad(const char* key, std::string_view problem) const {
    if (src == Source::kStored) return;
    throw Error(ErrorKind::kPeer, fmt::format("message '{}': field '{}' {}", path, key, problem),
                "the orchestrator and agent builds differ: redeploy the agent");
  }
  std::string text(const char* key, const json::value& v) const {
    if (src == Source::kPeer && v.as_string().size() > kMaxPeerString) {
      bad(key,
          fmt::format("is {} bytes, over the {} byte cap", v.as_string().size(), kMaxPeerString));
    }
    return std::string(v.as_string());
  }
};

const json::value* field(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

void get(const Ctx& c, const json::object& o, const char* key, std::string& out) {
  const json::value* v = field(o, key);
  if (v && v->is_string())
    out = c.text(key, *v);
  else if (v)
    c.bad(key, "must be a string");
}
void get(const Ctx& c, const json::object& o, const char* key, std::optional<std::string>& out) {
  const json::value* v = field(o, key);
  if (v && v->is_string())
    out = c.text(key, *v);
  else if (v)
    c.bad(key, "must be a string");
}
void get(const Ctx& c, const json::object& o, const char* key, bool& out) {
  const json::value* v = field(o, key);
  if (v && v->is_bool())
    out = v->as_bool();
  else if (v)
    c.bad(key, "must be true or false");
}
void get(const Ctx& c, const json::object& o, const char* key, std::optional<bool>& out) {
  const json::value* v = field(o, key);
  if (v && v->is_bool())
    out = v->as_bool();
  else if (v)
    c.bad(key, "must be true or false");
}
// Integers as stored; a double (another writer's) is truncated when stored,
// a peer's is refused; a negative one is no uint64.
void get(const Ctx& c, const json::object& o, const char* key, std::optional<int64_t>& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (v->is_int64())
    out = v->as_int64();
  else if (v->is_uint64() && v->as_uint64() <= uint64_t(INT64_MAX))
    out = int64_t(v->as_uint64());
  else if (c.src == Source::kStored && v->is_double() && std::abs(v->as_double()) < 9e18)
    out = static_cast<int64_t>(v->as_double());
  else
    c.bad(key, "must be an integer");
}
void get(const Ctx& c, const json::object& o, const char* key, std::optional<uint64_t>& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (v->is_uint64())
    out = v->as_uint64();
  else if (v->is_int64() && v->as_int64() >= 0)
    out = uint64_t(v->as_int64());
  else if (c.src == Source::kStored && v->is_double() && v->as_double() >= 0 &&
           v->as_double() < 1.8e19)
    out = static_cast<uint64_t>(v->as_double());
  else
    c.bad(key, "must be a non-negative integer");
}
void get(const Ctx& c, const json::object& o, const char* key, NamedValues& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (!v->is_object()) return c.bad(key, "must be an object");
  for (const auto& [name, value] : v->as_object()) {
    NamedValue nv{c.text(key, json::value(name)), std::nullopt};
    if (value.is_string())
      nv.value = c.text(key, value);
    else if (!value.is_null())
      c.bad(key, "must hold strings or nulls");
    out.push_back(std::move(nv));
  }
}
void get(const Ctx& c, const json::object& o, const char* key, std::vector<std::string>& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (!v->is_array()) return c.bad(key, "must be an array");
  for (const json::value& e : v->as_array()) {
    if (e.is_string())
      out.push_back(c.text(key, e));
    else
      c.bad(key, "must hold strings");
  }
}

// The nested objects' readers, declared before get() reads them.
void read(const Ctx& c, const json::object& o, NetFacts& m);
void read(const Ctx& c, const json::object& o, BusFacts& m);
void read(const Ctx& c, const json::object& o, BlockDeviceFacts& m);
void read(const Ctx& c, const json::object& o, ZfsFacts& m);
void read(const Ctx& c, const json::object& o, DirFacts& m);
void read(const Ctx& c, const json::object& o, SambaFacts& m);
void read(const Ctx& c, const json::object& o, AgentFacts& m);

// A nested object: set when the key holds one.
template <class T>
void get(const Ctx& c, const json::object& o, const char* key, std::optional<T>& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (!v->is_object()) return c.bad(key, "must be an object");
  out.emplace();
  read(c.at(key), v->as_object(), *out);
}

void read(const Ctx& c, const json::object& o, NetFacts& m) {
  get(c, o, "peer", m.peer);
  get(c, o, "name", m.name);
  get(c, o, "address", m.address);
  get(c, o, "mtu", m.mtu);
  get(c, o, "speed_mbit", m.speed_mbit);
  get(c, o, "shaped_rate_bit", m.shaped_rate_bit);
  get(c, o, "error", m.error);
}

void read(const Ctx& c, const json::object& o, BlockDeviceFacts& m) {
  get(c, o, "name", m.name);
  get(c, o, "disk", m.disk);
  get(c, o, "partition", m.partition);
  get(c, o, "read_ahead_kb", m.read_ahead_kb);
  get(c, o, "scheduler", m.scheduler);
  get(c, o, "rotational", m.rotational);
  get(c, o, "backing_file", m.backing_file);
  get(c, o, "slaves", m.slaves);
  get(c, o, "bus", m.bus);
  if (const json::value* v = field(o, "member_buses"); v != nullptr) {
    if (!v->is_array()) return c.bad("member_buses", "must be an array");
    const Ctx members = c.at("member_buses");
    for (const json::value& e : v->as_array()) {
      if (!e.is_object()) return members.bad("[]", "must be an object");
      MemberBusFacts b;
      get(members, e.as_object(), "member", b.member);
      std::optional<BusFacts> bus;
      get(members, e.as_object(), "bus", bus);
      if (bus) b.bus = *bus;
      m.member_buses.push_back(std::move(b));
    }
  }
}

void read(const Ctx& c, const json::object& o, BusFacts& m) {
  get(c, o, "kind", m.kind);
  get(c, o, "link", m.link);
  std::optional<uint64_t> ceiling;
  get(c, o, "ceiling_bytes_per_s", ceiling);
  m.ceiling_bytes_per_s = ceiling.value_or(0);
}

void read(const Ctx& c, const json::object& o, ZfsFacts& m) {
  get(c, o, "arc_c_max_bytes", m.arc_c_max_bytes);
  get(c, o, "arc_size_bytes", m.arc_size_bytes);
}

void read(const Ctx& c, const json::object& o, DirFacts& m) {
  get(c, o, "path", m.path);
  get(c, o, "fs_type", m.fs_type);
  get(c, o, "total_bytes", m.total_bytes);
  get(c, o, "avail_bytes", m.avail_bytes);
  m.with_device = o.contains("mount_source") || o.contains("device") || o.contains("zfs");
  get(c, o, "mount_source", m.mount_source);
  get(c, o, "device", m.device);
  get(c, o, "zfs", m.zfs);
}

void read(const Ctx& c, const json::object& o, SambaFacts& m) {
  std::optional<int64_t> pid;
  get(c, o, "pid", pid);
  if (pid && *pid > 0 && *pid <= INT32_MAX) m.pid = static_cast<int>(*pid);
  get(c, o, "config_path", m.config_path);
  get(c, o, "error", m.error);
  get(c, o, "found_by", m.found_by);
  get(c, o, "source", m.source);
  get(c, o, "sha256", m.sha256);
  get(c, o, "global", m.global);
  if (const json::value* v = o.if_contains("shares"); v && !v->is_null()) {
    if (!v->is_object()) {
      c.bad("shares", "must be an object");
    } else {
      for (const auto& [name, values] : v->as_object()) {
        json::object one{{"v", values}};
        get(c, one, "v", m.shares[std::string(name)]);
      }
    }
  }
}

void read(const Ctx& c, const json::object& o, AgentFacts& m) {
  get(c, o, "role", m.role);
  get(c, o, "arch", m.arch);
}

// An array of objects under `key`, each read into a new element of `out`
// with read(Ctx, object, T&).
template <class T>
void read_objects(const Ctx& c, const json::object& o, const char* key, std::vector<T>& out) {
  const json::value* d = field(o, key);
  if (!d) return;
  if (!d->is_array()) return c.bad(key, "must be an array");
  const Ctx ec = c.at((std::string(key) + "[]").c_str());
  for (const json::value& e : d->as_array()) {
    if (!e.is_object()) {
      c.bad(key, "must hold objects");
      continue;
    }
    read(ec, e.as_object(), out.emplace_back());
  }
}

void read(const Ctx& c, const json::object& o, ServerConfigFacts& f) {
  get(c, o, "server", f.server);
  std::optional<int64_t> pid;
  get(c, o, "pid", pid);
  if (pid && *pid > 0 && *pid <= INT32_MAX) f.pid = static_cast<int>(*pid);
  get(c, o, "config_path", f.config_path);
  get(c, o, "found_by", f.found_by);
  get(c, o, "error", f.error);
  get(c, o, "settings", f.settings);
}

void read(const Ctx& c, const json::object& o, DegradedFact& f) {
  get(c, o, "fact", f.fact);
  get(c, o, "method", f.method);
  get(c, o, "privilege", f.privilege);
}

}  // namespace

const std::string* find_value(const NamedValues& values, std::string_view name) {
  for (const NamedValue& v : values) {
    if (v.name == name) return v.value ? &*v.value : nullptr;
  }
  return nullptr;
}

json::object to_json(const Facts& m) {
  json::array degraded;
  for (const DegradedFact& d : m.degraded) {
    degraded.push_back({{"fact", d.fact}, {"method", d.method}, {"privilege", d.privilege}});
  }
  json::object o{{"hostname", or_null(m.hostname)},
                 {"os", or_null(m.os)},
                 {"kernel", or_null(m.kernel)},
                 {"arch", or_null(m.arch)},
                 {"cpu_model", or_null(m.cpu_model)},
                 {"cpu_cores", or_null(m.cpu_cores)},
                 {"boot_id", or_null(m.boot_id)},
                 {"memory_bytes", or_null(m.memory_bytes)},
                 {"net", object_or_null(m.net)},
                 {"ram_dir", object_or_null(m.ram_dir)},
                 {"disk_dir", object_or_null(m.disk_dir)},
                 {"tcp_sysctls", named_values(m.tcp_sysctls)},
                 {"samba", object_or_null(m.samba)},
                 {"euid", or_null(m.euid)},
                 {"degraded", std::move(degraded)}};
  if (!m.file_servers.empty()) {  // facts stored before re-encode as they were
    json::array servers;
    for (const ServerConfigFacts& f : m.file_servers) {
      json::object one{{"server", f.server},
                       {"config_path", f.config_path},
                       {"found_by", f.found_by},
                       {"settings", named_values(f.settings)}};
      if (!f.error.empty()) one["error"] = f.error;
      if (f.pid > 0) one["pid"] = f.pid;
      servers.push_back(std::move(one));
    }
    o["file_servers"] = std::move(servers);
  }
  if (!m.samba_instances.empty()) {  // facts stored before re-encode as they were
    json::array instances;
    for (const SambaFacts& f : m.samba_instances) instances.push_back(to_json(f));
    o["samba_instances"] = std::move(instances);
  }
  if (m.agent) o["agent"] = {{"role", m.agent->role}, {"arch", m.agent->arch}};
  if (m.agent_max_rss_kb) o["agent_max_rss_kb"] = *m.agent_max_rss_kb;
  return o;
}

void from_json(const json::value& v, Facts& m, Source src, std::string_view what) {
  if (!v.is_object()) {
    if (src == Source::kPeer) {
      throw Error(ErrorKind::kPeer, fmt::format("message '{}' is not a JSON object", what),
                  "the orchestrator and agent builds differ: redeploy the agent");
    }
    return;
  }
  const json::object& o = v.as_object();
  const Ctx c{src, std::string(what.empty() ? "facts" : what)};
  get(c, o, "hostname", m.hostname);
  get(c, o, "os", m.os);
  get(c, o, "kernel", m.kernel);
  get(c, o, "arch", m.arch);
  get(c, o, "cpu_model", m.cpu_model);
  get(c, o, "cpu_cores", m.cpu_cores);
  get(c, o, "boot_id", m.boot_id);
  get(c, o, "memory_bytes", m.memory_bytes);
  get(c, o, "net", m.net);
  get(c, o, "ram_dir", m.ram_dir);
  get(c, o, "disk_dir", m.disk_dir);
  get(c, o, "tcp_sysctls", m.tcp_sysctls);
  get(c, o, "samba", m.samba);
  read_objects(c, o, "file_servers", m.file_servers);
  read_objects(c, o, "samba_instances", m.samba_instances);
  get(c, o, "euid", m.euid);
  read_objects(c, o, "degraded", m.degraded);
  get(c, o, "agent", m.agent);
  get(c, o, "agent_max_rss_kb", m.agent_max_rss_kb);
}

}  // namespace cp::msg
