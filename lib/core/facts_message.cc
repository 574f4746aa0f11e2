#include <fmt/format.h>

#include <boost/json.hpp>

#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/facts_message_json.h"
#include "core/json_fields.h"
#include "core/json_util.h"

namespace cp::msg {
namespace json = boost::json;
namespace {

// {name: value}, null for a value not known.
json::object named_values(const NamedValues& values) {
  json::object o;
  for (const NamedValue& v : values) o[v.name] = v.value ? json::value(*v.value) : nullptr;
  return o;
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
template <JsonInteger T>
void get(const Ctx& c, const json::object& o, const char* key, std::optional<T>& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (const std::optional<T> n = json_integer<T>(*v, c.src == Source::kStored))
    out = n;
  else
    c.bad(key, kNotJsonInteger<T>);
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

// A plain count: absent keeps the default.
void get(const Ctx& c, const json::object& o, const char* key, uint64_t& out) {
  std::optional<uint64_t> v;
  get(c, o, key, v);
  if (v) out = *v;
}
// A process id: only 1 .. INT32_MAX is one.
void get(const Ctx& c, const json::object& o, const char* key, int& out) {
  std::optional<int64_t> v;
  get(c, o, key, v);
  if (v && *v > 0 && *v <= INT32_MAX) out = static_cast<int>(*v);
}
// Share sections: {name: {parameter: value}}.
void get(const Ctx& c, const json::object& o, const char* key,
         std::map<std::string, NamedValues>& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (!v->is_object()) return c.bad(key, "must be an object");
  for (const auto& [name, values] : v->as_object()) {
    json::object one{{"v", values}};
    get(c, one, "v", out[std::string(name)]);
  }
}

// A part: its fields read into `m` (fields(), below).
template <class T>
void read(const Ctx& c, const json::object& o, T& m);

// A nested part: set when the key holds one.
template <class T>
void get(const Ctx& c, const json::object& o, const char* key, std::optional<T>& out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return;
  if (!v->is_object()) return c.bad(key, "must be an object");
  out.emplace();
  read(c.at(key), v->as_object(), *out);
}
template <class T>
requires std::is_class_v<T>
void get(const Ctx& c, const json::object& o, const char* key, T& out) {
  std::optional<T> v;
  get(c, o, key, v);
  if (v) out = std::move(*v);
}
// An array of parts, each read into a new element of `out`.
template <class T>
void get(const Ctx& c, const json::object& o, const char* key, std::vector<T>& out) {
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

// ---- each part's fields, listed once ------------------------------------
// fields(v, m) names every key of the part: Put writes them in that order
// (core/json_fields.h), Get reads them back. Every key may be absent (facts
// are never an error).

struct Get {
  static constexpr bool kReads = true;
  const Ctx& c;
  const json::object& o;

  bool has(const char* key) const { return o.contains(key); }
  template <class T>
  Get& opt(const char* key, T& x) {
    get(c, o, key, x);
    return *this;
  }
  template <class T>
  Get& omit_empty(const char* key, T& x) {
    return opt(key, x);
  }
  template <class T>
  Get& opt_if(bool, const char* key, T& x) {
    return opt(key, x);
  }
};

// Writes a part (core/json_fields.h), and a host's named values.
struct Put : FieldWriter<Put> {
  using FieldWriter::value;
  static json::value value(const NamedValues& x) { return named_values(x); }
  static json::value value(const std::map<std::string, NamedValues>& x) {
    json::object o;
    for (const auto& [name, values] : x) o[name] = named_values(values);
    return o;
  }
};

CP_FIELDS_OF(NetFacts) {
  v.opt("peer", m.peer)
      .opt("name", m.name)
      .opt("address", m.address)
      .opt("mtu", m.mtu)
      .opt("speed_mbit", m.speed_mbit)
      .opt("shaped_rate_bit", m.shaped_rate_bit)
      .omit_empty("error", m.error);
}

CP_FIELDS_OF(BusFacts) {
  v.opt("kind", m.kind).opt("link", m.link).opt("ceiling_bytes_per_s", m.ceiling_bytes_per_s);
}

CP_FIELDS_OF(MemberBusFacts) { v.opt("member", m.member).opt("bus", m.bus); }

CP_FIELDS_OF(BlockDeviceFacts) {
  v.opt("name", m.name)
      .opt("disk", m.disk)
      .opt("partition", m.partition)
      .opt("read_ahead_kb", m.read_ahead_kb)
      .opt("scheduler", m.scheduler)
      .opt("rotational", m.rotational)
      .opt("backing_file", m.backing_file)
      .opt("slaves", m.slaves)
      // Written only when known, so runs stored before the bus was asked
      // for re-encode to the same text.
      .omit_empty("bus", m.bus)
      .omit_empty("member_buses", m.member_buses);
}

CP_FIELDS_OF(ZfsFacts) {
  v.opt("arc_c_max_bytes", m.arc_c_max_bytes).opt("arc_size_bytes", m.arc_size_bytes);
}

CP_FIELDS_OF(DirFacts) {
  v.opt("path", m.path)
      .opt("fs_type", m.fs_type)
      .opt("total_bytes", m.total_bytes)
      .opt("avail_bytes", m.avail_bytes);
  // "ram_dir" has no device part.
  if constexpr (V::kReads) m.with_device = v.has("mount_source") || v.has("device") || v.has("zfs");
  v.opt_if(m.with_device, "mount_source", m.mount_source)
      .opt_if(m.with_device, "device", m.device)
      .opt_if(m.with_device, "zfs", m.zfs);
}

CP_FIELDS_OF(SambaFacts) {
  v.opt("config_path", m.config_path)
      .omit_empty("pid", m.pid)  // an instance of samba_instances
      .omit_empty("error", m.error);
  const bool told = m.error.empty();  // else only config_path (and pid) is set
  v.opt_if(told, "found_by", m.found_by)
      .opt_if(told, "source", m.source)
      .opt_if(told, "sha256", m.sha256)
      .opt_if(told, "global", m.global)
      // Facts stored before shares were read re-encode as they were.
      .opt_if(told && !m.shares.empty(), "shares", m.shares);
}

CP_FIELDS_OF(AgentFacts) { v.opt("role", m.role).opt("arch", m.arch); }

CP_FIELDS_OF(ServerConfigFacts) {
  v.opt("server", m.server)
      .opt("config_path", m.config_path)
      .opt("found_by", m.found_by)
      .opt("settings", m.settings)
      .omit_empty("error", m.error)
      .omit_empty("pid", m.pid);
}

CP_FIELDS_OF(DegradedFact) {
  v.opt("fact", m.fact).opt("method", m.method).opt("privilege", m.privilege);
}

CP_FIELDS_OF(Facts) {
  v.opt("hostname", m.hostname)
      .opt("os", m.os)
      .opt("kernel", m.kernel)
      .opt("arch", m.arch)
      .opt("cpu_model", m.cpu_model)
      .opt("cpu_cores", m.cpu_cores)
      .opt("boot_id", m.boot_id)
      .opt("memory_bytes", m.memory_bytes)
      .opt("net", m.net)
      .opt("ram_dir", m.ram_dir)
      .opt("disk_dir", m.disk_dir)
      .opt("tcp_sysctls", m.tcp_sysctls)
      .opt("samba", m.samba)
      .opt("euid", m.euid)
      .opt("degraded", m.degraded)
      // Facts stored before these re-encode as they were.
      .omit_empty("file_servers", m.file_servers)
      .omit_empty("samba_instances", m.samba_instances)
      .omit_empty("agent", m.agent)
      .omit_empty("agent_max_rss_kb", m.agent_max_rss_kb);
}

template <class T>
void read(const Ctx& c, const json::object& o, T& m) {
  Get g{c, o};
  fields(g, m);
}

}  // namespace

const std::string* find_value(const NamedValues& values, std::string_view name) {
  for (const NamedValue& v : values) {
    if (v.name == name) return v.value ? &*v.value : nullptr;
  }
  return nullptr;
}

json::object to_json(const Facts& m) { return Put::value(m).as_object(); }

void from_json(const json::value& v, Facts& m, Source src, std::string_view what) {
  if (!v.is_object()) {
    if (src == Source::kPeer) {
      throw Error(ErrorKind::kPeer, fmt::format("message '{}' is not a JSON object", what),
                  "the orchestrator and agent builds differ: redeploy the agent");
    }
    return;
  }
  const Ctx c{src, std::string(what.empty() ? "facts" : what)};
  read(c, v.as_object(), m);
}

}  // namespace cp::msg
