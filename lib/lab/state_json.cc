// lab.json: the lab's state, written by `lab up` and read by every command.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/json_util.h"
#include "core/mountinfo.h"
#include "lab/layout.h"
#include "lab/throttle_json.h"

namespace cp::lab {
namespace json = boost::json;

// --- lab.json ---------------------------------------------------------------
//
// Each part's fields are listed once, in a fields(v, x) function: Put writes
// them (in that order), Get reads them back. need: a lab.json must hold it;
// opt: absent in one written by an older chokepoint (the field keeps its
// default). An int field is checked against its Range when read.

namespace {

constexpr int kStateVersion = 1;

struct Range {
  int64_t lo, hi;
  const char* problem;   // "is out of range"
  bool zero_ok = false;  // 0 (not set) is allowed besides lo..hi
};
constexpr Range kPid{0, INT32_MAX, "is not a process id"};
constexpr Range kMtu{kMinMtu, kMaxMtu, "is out of range"};
constexpr Range kOwnMtu{kMinMtu, kMaxMtu, "is out of range", true};

// Writes a part (core/json_fields.h); a nested part through its fields().
class Put : public FieldWriter<Put> {
 public:
  using FieldWriter::need;
  using FieldWriter::opt;
  Put& need(const char* key, const int& x, Range) { return need(key, x); }
  Put& opt(const char* key, const int& x, Range) { return need(key, x); }
};

// Typed reads that name the file and the field on failure.
class Get {
 public:
  static constexpr bool kReads = true;
  Get(const json::object& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(std::string_view name) const { return obj_.contains(name); }

  template <class T>
  Get& need(const char* key, T& x) {
    read(key, at(key), x);
    return *this;
  }
  template <class T>
  Get& opt(const char* key, T& x) {
    return has(key) ? need(key, x) : *this;
  }
  Get& need(const char* key, int& x, Range r) {
    int64_t n = 0;
    read(key, at(key), n);
    if (!(r.zero_ok && n == 0) && (n < r.lo || n > r.hi)) fail(key, r.problem);
    x = static_cast<int>(n);
    return *this;
  }
  Get& opt(const char* key, int& x, Range r) { return has(key) ? need(key, x, r) : *this; }
  template <class T>
  Get& need_if(bool needed, const char* key, T& x) {
    return needed ? need(key, x) : opt(key, x);
  }

  [[noreturn]] void fail(std::string_view name, std::string_view what) const {
    throw Error(ErrorKind::kConfig, fmt::format("lab state {}: '{}' {}", where_, name, what),
                "the lab dir was edited or is from another version: run `chokepoint lab down`");
  }

 private:
  const json::value& at(std::string_view name) const {
    const json::value* v = obj_.if_contains(name);
    if (!v) fail(name, "is missing");
    return *v;
  }
  void read(const char* key, const json::value& v, std::string& out) const {
    if (!v.is_string()) fail(key, "must be a string");
    out = std::string(v.get_string());
  }
  template <JsonInteger T>
  void read(const char* key, const json::value& v, T& out) const {
    const std::optional<T> n = json_integer<T>(v);
    if (!n)
      fail(key, std::is_signed_v<T> ? "must be a whole number" : "must be a whole number >= 0");
    out = *n;
  }
  void read(const char* key, const json::value& v, double& out) const {
    if (!v.is_number()) fail(key, "must be a number");
    out = v.to_number<double>();
  }
  void read(const char* key, const json::value& v, bool& out) const {
    if (!v.is_bool()) fail(key, "must be true or false");
    out = v.get_bool();
  }
  void read(const char* key, const json::value& v, std::vector<std::string>& out) const {
    if (!v.is_array()) fail(key, "must be an array");
    out.clear();
    for (const json::value& e : v.get_array()) {
      if (!e.is_string()) fail(key, "must hold strings");
      out.emplace_back(e.get_string());
    }
  }
  // An array of parts.
  template <class T>
  void read(const char* key, const json::value& v, std::vector<T>& out) const {
    if (!v.is_array()) fail(key, "must be an array");
    out.clear();
    for (const json::value& e : v.get_array()) {
      if (!e.is_object()) fail(key, "must hold objects");
      Get g(e.get_object(), where_ + "." + key + "[]");
      fields(g, out.emplace_back());
    }
  }
  // A part.
  template <class T>
  void read(const char* key, const json::value& v, T& out) const {
    if (!v.is_object()) fail(key, "must be an object");
    Get g(v.get_object(), where_ + "." + key);
    fields(g, out);
  }

  const json::object& obj_;
  std::string where_;
};

CP_FIELDS_OF(LabShare) {
  v.need("protocol", m.protocol)
      .need("medium", m.medium)
      .need("url", m.url)
      .need("server_dir", m.server_dir);
}

CP_FIELDS_OF(LabHost) {
  v.need("role", m.role)
      .need("netns", m.netns)
      .need("alias", m.alias)
      .need("hostname", m.hostname)
      .need("mgmt_address", m.mgmt_address)
      .need("data_address", m.data_address)
      .need("data_ifname", m.data_ifname)
      .need("ram_dir", m.ram_dir)
      .need("disk_dir", m.disk_dir)
      .need("loop_device", m.loop_device)
      .need("sshd_pid", m.sshd_pid, kPid)
      // Absent in a lab.json from before the lab served FTP, SMB and NFS.
      .opt("shares", m.shares)
      .opt("ftpd_pid", m.ftpd_pid, kPid)
      .opt("smbd_pid", m.smbd_pid, kPid)
      .opt("nfsd_pid", m.nfsd_pid, kPid)
      .opt("rpcbind_pid", m.rpcbind_pid, kPid);
}

CP_FIELDS_OF(LabOptions) {
  v.need("rate_bits", m.rate_bits)
      .need("mtu", m.mtu, kMtu)
      // Absent in a lab.json from before the switch.
      .opt("server_mtu", m.server_mtu, kOwnMtu)
      .opt("client_mtu", m.client_mtu, kOwnMtu)
      .opt("path_rate_bits", m.path_rate_bits)
      .need("delay_s", m.delay_s)
      .need("disk_bytes", m.disk_bytes)
      .need("ram_bytes", m.ram_bytes)
      .opt("samba_params", m.samba_params)
      .opt("server_profile", m.server_profile)
      .opt("server_login", m.server_login)
      .opt("vsftpd_params", m.vsftpd_params)
      .opt("ganesha_params", m.ganesha_params);
}

CP_FIELDS_OF(LabSwitch) {
  v.need("netns", m.netns)
      .need("delay_mode", m.delay_mode)
      .need("delay_line_pid", m.delay_line_pid, kPid);
}

CP_FIELDS_OF(LabThrottle) {
  v.need("smbd_cpu", m.smbd_cpu)
      .opt("nfsd_cpu", m.nfsd_cpu)
      .need("disk_read_bps", m.disk_read_bps)
      .need("disk_write_bps", m.disk_write_bps)
      // Absent in a lab.json from before the client throttles.
      .opt("client_cpu", m.client_cpu)
      .opt("client_disk_read_bps", m.client_disk_read_bps)
      .opt("client_disk_write_bps", m.client_disk_write_bps)
      .need("cgroups", m.cgroups);
}

// All but "version", which comes first.
CP_FIELDS_OF(LabState) {
  // Absent in a lab.json from before instances: the one lab was instance 0.
  v.opt("instance", m.instance, Range{0, kMaxInstance, "is out of range"})
      .need("dir", m.dir)
      .need("ssh_config", m.ssh_config)
      .need("identity", m.identity)
      .need("known_hosts", m.known_hosts)
      .need("options", m.options)
      .need("server", m.server)
      .need("client", m.client)
      .opt("switch", m.sw);
  // The share login: all three, or none in a lab.json from before it.
  const bool share_user = v.has("share_user");
  v.need_if(share_user, "share_user", m.share_user)
      .need_if(share_user, "share_password_file", m.share_password_file)
      .need_if(share_user, "share_user_created", m.share_user_created)
      .opt("throttle", m.throttle);
}

}  // namespace

json::object throttle_to_json(const LabThrottle& t) { return Put::value(t).as_object(); }

std::string state_to_json(const LabState& s) {
  Put put;
  put.need("version", kStateVersion);
  fields(put, s);
  return json::serialize(put.take()) + "\n";
}

LabState state_from_json(std::string_view text, const std::string& where) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) {
    throw Error(ErrorKind::kConfig,
                fmt::format("lab state {} is not a JSON object{}", where,
                            ec ? ": " + ec.message() : std::string()),
                "the lab dir was edited or is damaged: run `chokepoint lab down`");
  }
  Get get(v.get_object(), where);
  int version = 0;
  get.need("version", version,
           Range{kStateVersion, kStateVersion, "is not one this chokepoint reads"});
  LabState s;
  fields(get, s);
  if (s.server.role != "server") get.fail("server.role", "must be \"server\"");
  if (s.client.role != "client") get.fail("client.role", "must be \"client\"");
  return s;
}

}  // namespace cp::lab
