// lab.json: the lab's state, written by `lab up` and read by every command.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/mountinfo.h"
#include "lab/layout.h"
#include "lab/throttle_json.h"

namespace cp::lab {
namespace json = boost::json;

// --- lab.json ---------------------------------------------------------------

json::object throttle_to_json(const LabThrottle& t) {
  json::array cgroups;
  for (const std::string& c : t.cgroups) cgroups.emplace_back(c);
  return {{"smbd_cpu", t.smbd_cpu},
          {"nfsd_cpu", t.nfsd_cpu},
          {"disk_read_bps", t.disk_read_bps},
          {"disk_write_bps", t.disk_write_bps},
          {"client_cpu", t.client_cpu},
          {"client_disk_read_bps", t.client_disk_read_bps},
          {"client_disk_write_bps", t.client_disk_write_bps},
          {"cgroups", std::move(cgroups)}};
}

namespace {

constexpr int kStateVersion = 1;

json::object host_to_json(const LabHost& h) {
  json::array shares;
  for (const LabShare& sh : h.shares) {
    shares.push_back(json::object{{"protocol", sh.protocol},
                                  {"medium", sh.medium},
                                  {"url", sh.url},
                                  {"server_dir", sh.server_dir}});
  }
  return {{"role", h.role},
          {"netns", h.netns},
          {"alias", h.alias},
          {"hostname", h.hostname},
          {"mgmt_address", h.mgmt_address},
          {"data_address", h.data_address},
          {"data_ifname", h.data_ifname},
          {"ram_dir", h.ram_dir},
          {"disk_dir", h.disk_dir},
          {"loop_device", h.loop_device},
          {"sshd_pid", h.sshd_pid},
          {"shares", std::move(shares)},
          {"ftpd_pid", h.ftpd_pid},
          {"smbd_pid", h.smbd_pid},
          {"nfsd_pid", h.nfsd_pid},
          {"rpcbind_pid", h.rpcbind_pid}};
}

json::object options_to_json(const LabOptions& o) {
  json::array samba;
  for (const std::string& p : o.samba_params) samba.emplace_back(p);
  json::array vsftpd, ganesha;
  for (const std::string& p : o.vsftpd_params) vsftpd.emplace_back(p);
  for (const std::string& p : o.ganesha_params) ganesha.emplace_back(p);
  return {{"rate_bits", o.rate_bits},
          {"mtu", o.mtu},
          {"server_mtu", o.server_mtu},
          {"client_mtu", o.client_mtu},
          {"path_rate_bits", o.path_rate_bits},
          {"delay_s", o.delay_s},
          {"disk_bytes", o.disk_bytes},
          {"ram_bytes", o.ram_bytes},
          {"samba_params", std::move(samba)},
          {"server_profile", o.server_profile},
          {"server_login", o.server_login},
          {"vsftpd_params", std::move(vsftpd)},
          {"ganesha_params", std::move(ganesha)}};
}

// Typed reads that name the file and the field on failure.
class Reader {
 public:
  Reader(const json::object& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  bool has(std::string_view name) const { return obj_.contains(name); }
  const json::value& at(std::string_view name) const {
    const json::value* v = obj_.if_contains(name);
    if (!v) fail(name, "is missing");
    return *v;
  }
  std::string str(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_string()) fail(name, "must be a string");
    return std::string(v.get_string());
  }
  uint64_t u64(std::string_view name) const {
    const json::value& v = at(name);
    if (v.is_uint64()) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0) return static_cast<uint64_t>(v.get_int64());
    fail(name, "must be a whole number >= 0");
  }
  int64_t i64(std::string_view name) const {
    const json::value& v = at(name);
    if (v.is_int64()) return v.get_int64();
    if (v.is_uint64() && v.get_uint64() <= INT64_MAX) return static_cast<int64_t>(v.get_uint64());
    fail(name, "must be a whole number");
  }
  double num(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_number()) fail(name, "must be a number");
    return v.to_number<double>();
  }
  bool boolean(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_bool()) fail(name, "must be true or false");
    return v.get_bool();
  }
  std::vector<Reader> objects(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_array()) fail(name, "must be an array");
    std::vector<Reader> out;
    for (const json::value& e : v.get_array()) {
      if (!e.is_object()) fail(name, "must hold objects");
      out.emplace_back(e.get_object(), where_ + "." + std::string(name) + "[]");
    }
    return out;
  }
  std::vector<std::string> strings(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_array()) fail(name, "must be an array");
    std::vector<std::string> out;
    for (const json::value& e : v.get_array()) {
      if (!e.is_string()) fail(name, "must hold strings");
      out.emplace_back(e.get_string());
    }
    return out;
  }
  Reader object(std::string_view name) const {
    const json::value& v = at(name);
    if (!v.is_object()) fail(name, "must be an object");
    return Reader(v.get_object(), where_ + "." + std::string(name));
  }

  [[noreturn]] void fail(std::string_view name, std::string_view what) const {
    throw Error(ErrorKind::kConfig, fmt::format("lab state {}: '{}' {}", where_, name, what),
                "the lab dir was edited or is from another version: run `chokepoint lab down`");
  }

 private:
  const json::object& obj_;
  std::string where_;
};

LabHost host_from_json(const Reader& r) {
  LabHost h;
  h.role = r.str("role");
  h.netns = r.str("netns");
  h.alias = r.str("alias");
  h.hostname = r.str("hostname");
  h.mgmt_address = r.str("mgmt_address");
  h.data_address = r.str("data_address");
  h.data_ifname = r.str("data_ifname");
  h.ram_dir = r.str("ram_dir");
  h.disk_dir = r.str("disk_dir");
  h.loop_device = r.str("loop_device");
  const int64_t pid = r.i64("sshd_pid");
  if (pid < 0 || pid > INT32_MAX) r.fail("sshd_pid", "is not a process id");
  h.sshd_pid = static_cast<int>(pid);
  // Absent in a lab.json from before the lab served FTP and SMB.
  if (r.has("shares")) {
    for (const Reader& sr : r.objects("shares")) {
      h.shares.push_back(
          LabShare{sr.str("protocol"), sr.str("medium"), sr.str("url"), sr.str("server_dir")});
    }
  }
  for (auto [name, field] :
       {std::pair{"ftpd_pid", &h.ftpd_pid}, std::pair{"smbd_pid", &h.smbd_pid},
        std::pair{"nfsd_pid", &h.nfsd_pid}, std::pair{"rpcbind_pid", &h.rpcbind_pid}}) {
    if (!r.has(name)) continue;
    const int64_t p = r.i64(name);
    if (p < 0 || p > INT32_MAX) r.fail(name, "is not a process id");
    *field = static_cast<int>(p);
  }
  return h;
}

}  // namespace

std::string state_to_json(const LabState& s) {
  json::object o = {
      {"version", kStateVersion},
      {"instance", s.instance},
      {"dir", s.dir},
      {"ssh_config", s.ssh_config},
      {"identity", s.identity},
      {"known_hosts", s.known_hosts},
      {"options", options_to_json(s.options)},
      {"server", host_to_json(s.server)},
      {"client", host_to_json(s.client)},
      {"switch",
       {{"netns", s.sw.netns},
        {"delay_mode", s.sw.delay_mode},
        {"delay_line_pid", s.sw.delay_line_pid}}},
      {"share_user", s.share_user},
      {"share_password_file", s.share_password_file},
      {"share_user_created", s.share_user_created},
  };
  o["throttle"] = throttle_to_json(s.throttle);
  return json::serialize(o) + "\n";
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
  const Reader r(v.get_object(), where);
  if (r.i64("version") != kStateVersion) r.fail("version", "is not one this chokepoint reads");
  LabState s;
  // Absent in a lab.json from before instances: the one lab was instance 0.
  if (r.has("instance")) {
    const int64_t n = r.i64("instance");
    if (n < 0 || n > kMaxInstance) r.fail("instance", "is out of range");
    s.instance = static_cast<int>(n);
  }
  s.dir = r.str("dir");
  s.ssh_config = r.str("ssh_config");
  s.identity = r.str("identity");
  s.known_hosts = r.str("known_hosts");
  const Reader o = r.object("options");
  s.options.rate_bits = o.u64("rate_bits");
  auto mtu_of = [&](std::string_view name, bool zero_ok) {
    const int64_t mtu = o.i64(name);
    if ((mtu != 0 || !zero_ok) && (mtu < kMinMtu || mtu > kMaxMtu)) o.fail(name, "is out of range");
    return static_cast<int>(mtu);
  };
  s.options.mtu = mtu_of("mtu", false);
  s.options.delay_s = o.num("delay_s");
  s.options.disk_bytes = o.u64("disk_bytes");
  s.options.ram_bytes = o.u64("ram_bytes");
  // Absent in a lab.json from before the switch.
  if (o.has("server_mtu")) s.options.server_mtu = mtu_of("server_mtu", true);
  if (o.has("client_mtu")) s.options.client_mtu = mtu_of("client_mtu", true);
  if (o.has("path_rate_bits")) s.options.path_rate_bits = o.u64("path_rate_bits");
  if (o.has("samba_params")) s.options.samba_params = o.strings("samba_params");
  if (o.has("vsftpd_params")) s.options.vsftpd_params = o.strings("vsftpd_params");
  if (o.has("ganesha_params")) s.options.ganesha_params = o.strings("ganesha_params");
  if (o.has("server_profile")) s.options.server_profile = o.str("server_profile");
  if (o.has("server_login")) s.options.server_login = o.str("server_login");
  if (r.has("switch")) {
    const Reader w = r.object("switch");
    s.sw.netns = w.str("netns");
    s.sw.delay_mode = w.str("delay_mode");
    const int64_t pid = w.i64("delay_line_pid");
    if (pid < 0 || pid > INT32_MAX) w.fail("delay_line_pid", "is not a process id");
    s.sw.delay_line_pid = static_cast<int>(pid);
  }
  s.server = host_from_json(r.object("server"));
  s.client = host_from_json(r.object("client"));
  if (s.server.role != "server") r.fail("server.role", "must be \"server\"");
  if (s.client.role != "client") r.fail("client.role", "must be \"client\"");
  if (r.has("share_user")) {
    s.share_user = r.str("share_user");
    s.share_password_file = r.str("share_password_file");
    s.share_user_created = r.boolean("share_user_created");
  }
  if (r.has("throttle")) {
    const Reader t = r.object("throttle");
    s.throttle.smbd_cpu = t.num("smbd_cpu");
    if (t.has("nfsd_cpu")) s.throttle.nfsd_cpu = t.num("nfsd_cpu");
    s.throttle.disk_read_bps = t.u64("disk_read_bps");
    s.throttle.disk_write_bps = t.u64("disk_write_bps");
    // Absent in a lab.json from before the client throttles.
    if (t.has("client_cpu")) s.throttle.client_cpu = t.num("client_cpu");
    if (t.has("client_disk_read_bps")) {
      s.throttle.client_disk_read_bps = t.u64("client_disk_read_bps");
    }
    if (t.has("client_disk_write_bps")) {
      s.throttle.client_disk_write_bps = t.u64("client_disk_write_bps");
    }
    s.throttle.cgroups = t.strings("cgroups");
  }
  return s;
}

}  // namespace cp::lab
