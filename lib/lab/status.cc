#include "lab/status.h"

#include "lab/ganesha.h"

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "core/error.h"
#include "core/json_util.h"
#include "core/process.h"
#include "core/text.h"
#include "core/units.h"
#include "lab/layout.h"
#include "lab/servers.h"
#include "lab/sys.h"
#include "lab/throttle.h"
#include "lab/throttle_json.h"

namespace cp::lab {
namespace json = boost::json;

namespace {

std::string no_lab_message(int instance) {
  return instance == 0 ? std::string("no lab is up; start one with `chokepoint lab up`")
                       : fmt::format(
                             "no lab is up (instance {}); start one with "
                             "`chokepoint lab up --instance {}`",
                             instance, instance);
}

uint64_t as_u64(const json::value* v) {
  if (!v) return 0;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<uint64_t>(v->get_int64());
  if (v->is_double() && v->get_double() >= 0) return static_cast<uint64_t>(v->get_double());
  return 0;
}

// Runs a look-up; its output, or "" with the failure noted in `problems`.
std::string look(const std::vector<std::string>& argv, std::vector<std::string>* problems) {
  try {
    RunResult r = run_command(argv, {}, 30);
    if (r.exit_code == 0) return r.out;
    problems->push_back(fmt::format("'{}' failed: {}", shell_join(argv), trim(r.err)));
  } catch (const Error& e) {
    problems->push_back(e.what());
  }
  return {};
}

HostStatus gather_host(const LabState& s, const LabHost& h) {
  HostStatus st;
  st.host = h;
  st.netns_present = sys::netns_exists(h.netns);
  st.sshd_alive = h.sshd_pid > 0 && sys::process_alive(h.sshd_pid) &&
                  sys::process_comm(h.sshd_pid) == "sshd" &&
                  sys::process_in_netns(h.sshd_pid, h.netns);
  if (st.netns_present) {
    st.addresses = parse_addresses(look({"ip", "-n", h.netns, "-j", "addr", "show"}, &st.problems));
    st.mtu = parse_mtu(
        look({"ip", "-n", h.netns, "-j", "link", "show", "dev", h.data_ifname}, &st.problems));
    parse_qdiscs(
        look({"tc", "-n", h.netns, "-j", "qdisc", "show", "dev", h.data_ifname}, &st.problems),
        &st);
  } else {
    st.problems.push_back(fmt::format("network namespace {} does not exist", h.netns));
  }
  if (st.sshd_alive) {
    const std::string pid = std::to_string(h.sshd_pid);
    st.hostname_inside =
        trim(look({"nsenter", "-t", pid, "-u", "cat", "/proc/sys/kernel/hostname"}, &st.problems));
    // findmnt exits 1 for "not a mount point": that is an answer, not a problem.
    for (auto [dir, view] : {std::pair{&h.ram_dir, &st.ram}, std::pair{&h.disk_dir, &st.disk}}) {
      RunResult r = run_command({"nsenter", "-t", pid, "-m", "findmnt", "-n", "-r", "-b", "-o",
                                 "FSTYPE,SIZE,SOURCE", "-M", *dir},
                                {}, 30);
      *view = parse_findmnt(r.out);
    }
  } else {
    st.problems.push_back(
        fmt::format("sshd of {} (pid {}) is not running in {}", h.hostname, h.sshd_pid, h.netns));
  }
  if (!h.loop_device.empty()) {
    const std::string name = h.loop_device.substr(h.loop_device.rfind('/') + 1);
    const std::string backing = sys::loop_backing_file(h.loop_device);
    const std::string image = host_files(s, h).disk_image;
    if (backing.rfind(image, 0) != 0) {
      st.problems.push_back(fmt::format("{} is not attached to {} (backing file: '{}')",
                                        h.loop_device, image, backing));
    }
    try {
      if (auto ra = sys::read_file("/sys/block/" + name + "/queue/read_ahead_kb"))
        st.readahead_kib = std::stoi(*ra);
      if (auto dio = sys::read_file("/sys/block/" + name + "/loop/dio"))
        st.loop_direct_io = trim(*dio) == "1";
    } catch (const std::exception& e) {
      st.problems.push_back(fmt::format("cannot read {}'s queue settings: {}", name, e.what()));
    }
  }
  return st;
}

std::string mount_text(const std::string& dir, const MountView& m) {
  if (!m.mounted) return dir + ": not mounted (or not visible)";
  return fmt::format("{}: {}, {}", dir, m.fstype, format_size(m.size_bytes));
}

std::string shaping_text(const HostStatus& h) {
  std::string out = h.host.data_ifname + ": ";
  if (h.rate_bits > 0) {
    out += fmt::format("{} ({}, burst {} B)", format_rate_bits(static_cast<double>(h.rate_bits)),
                       h.qdisc, h.burst_bytes);
  } else {
    out += fmt::format("unshaped ({})", h.qdisc.empty() ? "?" : h.qdisc);
  }
  if (h.delay_s > 0) out += fmt::format(", delay {:g} ms", h.delay_s * 1e3);
  out += h.mtu > 0 ? fmt::format(", MTU {}", h.mtu) : ", MTU ?";
  return out;
}

std::string host_text(const HostStatus& h) {
  std::string out = fmt::format("{} (network namespace {}: {})\n", h.host.hostname, h.host.netns,
                                h.netns_present ? "present" : "MISSING");
  out += fmt::format("  hostname   {}\n", h.hostname_inside.empty() ? "?" : h.hostname_inside);
  out += fmt::format("  sshd       pid {} ({}), ssh at {}:22\n", h.host.sshd_pid,
                     h.sshd_alive ? "alive" : "NOT RUNNING", h.host.mgmt_address);
  std::string addrs;
  for (const auto& a : h.addresses) addrs += (addrs.empty() ? "" : ", ") + a;
  out += fmt::format("  addresses  {}\n", addrs.empty() ? "?" : addrs);
  out += fmt::format("  ram        {}\n", mount_text(h.host.ram_dir, h.ram));
  out += fmt::format("  disk       {}\n", mount_text(h.host.disk_dir, h.disk));
  out += fmt::format("  loop       {}{}, readahead {}\n",
                     h.host.loop_device.empty() ? "(none)" : h.host.loop_device,
                     h.loop_direct_io ? " (direct I/O)" : "",
                     h.readahead_kib >= 0 ? fmt::format("{} KiB", h.readahead_kib) : "?");
  out += fmt::format("  data link  {}, {}\n", h.host.data_address, shaping_text(h));
  for (const auto& p : h.problems) out += "  problem    " + p + "\n";
  return out;
}

}  // namespace

std::string shares_text(const LabState& s) {
  if (s.server.shares.empty()) return {};
  std::string out;
  for (const LabShare& sh : s.server.shares) {
    out += fmt::format("  share      {:<26} -> {}\n", sh.url, sh.server_dir);
  }
  out += fmt::format("  login      user {}{}, password in {}\n", s.share_user,
                     s.share_user_created ? " (made by the lab)" : "", s.share_password_file);
  out += fmt::format("  ftps       ftps://{}/ram (or /disk): options = ca_file={}\n",
                     s.server.data_address, server_files(s).ftps_cert);
  return out;
}

namespace {

std::string servers_text(const LabStatus& st) {
  const LabState& s = st.state;
  if (s.server.shares.empty())
    return "  servers    none (a lab from before FTP/SMB: `lab up` starts them)\n";
  std::string out;
  out += fmt::format("  vsftpd     pid {} ({}), {}:{}\n", s.server.ftpd_pid,
                     st.ftpd_alive ? "alive" : "NOT RUNNING", s.server.data_address, kFtpPort);
  out += fmt::format("  smbd       pid {} ({}), {}:{}\n", s.server.smbd_pid,
                     st.smbd_alive ? "alive" : "NOT RUNNING", s.server.data_address, kSmbPort);
  if (ganesha::serves_nfs(s)) {
    out +=
        fmt::format("  ganesha    pid {} ({}), {}:{} (NFSv4{}){}\n", s.server.nfsd_pid,
                    st.nfsd_alive ? "alive" : "NOT RUNNING", s.server.data_address,
                    ganesha::kNfsPort, s.server.rpcbind_pid > 0 ? ", NFSv3" : "",
                    s.server.rpcbind_pid > 0 ? fmt::format("; rpcbind pid {}", s.server.rpcbind_pid)
                                             : std::string());
  }
  out += shares_text(s);
  out += fmt::format("  throttle   {}\n", throttle_text(s.throttle));
  return out;
}

std::string switch_text(const LabStatus& st) {
  const LabState& s = st.state;
  if (s.sw.netns.empty()) return "switch: none (a lab from before the switch)\n";
  std::string out = fmt::format("{} (the switch; network namespace: {})\n", s.sw.netns,
                                st.switch_present ? "present" : "MISSING");
  for (const PortStatus& p : st.ports) {
    out += fmt::format("  port       {} -> {}: ", p.ifname, p.toward);
    if (p.rate_bits > 0) {
      out += fmt::format("{} ({})", format_rate_bits(static_cast<double>(p.rate_bits)), p.qdisc);
    } else {
      out += fmt::format("unshaped ({})", p.qdisc.empty() ? "?" : p.qdisc);
    }
    if (p.delay_s > 0) out += fmt::format(", netem delay {:g} ms", p.delay_s * 1e3);
    out += fmt::format(", MTU {}{}\n", p.mtu, p.bridged ? ", bridged" : "");
  }
  if (s.sw.delay_mode == kDelayLine) {
    out += fmt::format("  delay line pid {} ({}), {:g} ms each way\n", s.sw.delay_line_pid,
                       st.delay_line_alive ? "alive" : "NOT RUNNING", s.options.delay_s * 1e3);
    for (const DelayLineStats& d : st.delay_line) {
      out += fmt::format("    {} -> {}: {} frames, {} bytes, {} dropped, {} send errors\n", d.from,
                         d.to, d.frames, d.bytes, d.dropped, d.send_errors);
    }
  }
  for (const auto& p : st.switch_problems) out += "  problem    " + p + "\n";
  return out;
}

json::object mount_json(const std::string& dir, const MountView& m) {
  return {{"dir", dir},
          {"mounted", m.mounted},
          {"fstype", m.fstype},
          {"source", m.source},
          {"size_bytes", m.size_bytes}};
}

json::object host_json(const HostStatus& h) {
  json::array addrs, problems;
  for (const auto& a : h.addresses) addrs.emplace_back(a);
  for (const auto& p : h.problems) problems.emplace_back(p);
  return {{"role", h.host.role},
          {"netns", h.host.netns},
          {"netns_present", h.netns_present},
          {"alias", h.host.alias},
          {"hostname", h.host.hostname},
          {"hostname_inside", h.hostname_inside},
          {"mgmt_address", h.host.mgmt_address},
          {"data_address", h.host.data_address},
          {"data_ifname", h.host.data_ifname},
          {"addresses", std::move(addrs)},
          {"sshd_pid", h.host.sshd_pid},
          {"sshd_alive", h.sshd_alive},
          {"ram", mount_json(h.host.ram_dir, h.ram)},
          {"disk", mount_json(h.host.disk_dir, h.disk)},
          {"loop_device", h.host.loop_device},
          {"loop_direct_io", h.loop_direct_io},
          {"readahead_kib", h.readahead_kib},
          {"qdisc", h.qdisc},
          {"rate_bits", h.rate_bits},
          {"burst_bytes", h.burst_bytes},
          {"delay_s", h.delay_s},
          {"mtu", h.mtu},
          {"problems", std::move(problems)}};
}

json::object path_json(const LabStatus& st) {
  const LabState& s = st.state;
  const LabOptions& o = s.options;
  json::array ports, dirs;
  for (const PortStatus& p : st.ports) {
    ports.push_back(json::object{{"ifname", p.ifname},
                                 {"toward", p.toward},
                                 {"qdisc", p.qdisc},
                                 {"rate_bits", p.rate_bits},
                                 {"burst_bytes", p.burst_bytes},
                                 {"delay_s", p.delay_s},
                                 {"mtu", p.mtu},
                                 {"bridged", p.bridged}});
  }
  for (const DelayLineStats& d : st.delay_line) {
    dirs.push_back(json::object{{"from", d.from},
                                {"to", d.to},
                                {"frames", d.frames},
                                {"bytes", d.bytes},
                                {"dropped", d.dropped},
                                {"send_errors", d.send_errors},
                                {"max_queued_bytes", d.max_queued_bytes}});
  }
  json::array problems;
  for (const auto& p : st.switch_problems) problems.emplace_back(p);
  return {{"switch_netns", s.sw.netns},
          {"switch_present", st.switch_present},
          {"rate_bits", o.path_rate_bits},
          {"delay_s", o.delay_s},
          {"delay_mode", s.sw.delay_mode.empty() ? "none" : s.sw.delay_mode},
          {"server_mtu", host_mtu(o, "server")},
          {"client_mtu", host_mtu(o, "client")},
          {"switch_mtu", switch_mtu(o)},
          {"ports", std::move(ports)},
          {"delay_line",
           {{"pid", s.sw.delay_line_pid},
            {"alive", st.delay_line_alive},
            {"directions", std::move(dirs)}}},
          {"problems", std::move(problems)}};
}

}  // namespace

LabStatus gather_status(const LabState& state) {
  LabStatus st;
  st.state = state;
  const LabHealth health = check_health(state);
  st.healthy = health.healthy;
  st.why = health.why;
  st.down = health.down;
  st.server = gather_host(state, state.server);
  st.client = gather_host(state, state.client);
  st.ftpd_alive = servers::ftpd_alive(state);
  st.smbd_alive = servers::smbd_alive(state);
  st.nfsd_alive = ganesha::alive(state);
  const std::string& sw = state.sw.netns;
  if (!sw.empty()) {
    st.switch_present = sys::netns_exists(sw);
    if (st.switch_present) {
      for (auto [port, toward] :
           {std::pair{kSwitchServerPort, "server"}, std::pair{kSwitchClientPort, "client"}}) {
        PortStatus p;
        p.ifname = port;
        p.toward = toward;
        HostStatus tmp;
        parse_qdiscs(
            look({"tc", "-n", sw, "-j", "qdisc", "show", "dev", port}, &st.switch_problems), &tmp);
        p.qdisc = tmp.qdisc;
        p.rate_bits = tmp.rate_bits;
        p.burst_bytes = tmp.burst_bytes;
        p.delay_s = tmp.delay_s;
        const std::string link =
            look({"ip", "-n", sw, "-j", "link", "show", "dev", port}, &st.switch_problems);
        p.mtu = parse_mtu(link);
        p.bridged = parse_master(link) == kSwitchBridge;
        st.ports.push_back(p);
      }
    } else {
      st.switch_problems.push_back(fmt::format("network namespace {} does not exist", sw));
    }
    st.delay_line_alive = delay_line_alive(state.sw.delay_line_pid);
    if (state.sw.delay_mode == kDelayLine) {
      st.delay_line =
          parse_delay_line_stats(sys::read_file(switch_files(state).delay_line_stats).value_or(""));
    }
  }
  return st;
}

std::string status_text(const LabStatus& st) {
  const LabOptions& o = st.state.options;
  std::string out = fmt::format("lab instance {} in {}: {}\n", st.state.instance, st.state.dir,
                                st.healthy ? "up" : "UNHEALTHY (" + st.why + ")");
  out += fmt::format(
      "asked for: hosts {}, MTU {}/{} (server/client); path {}, {}; disk {}, ram {} per host\n",
      o.rate_bits ? format_rate_bits(static_cast<double>(o.rate_bits)) : "unshaped",
      host_mtu(o, "server"), host_mtu(o, "client"),
      o.path_rate_bits ? format_rate_bits(static_cast<double>(o.path_rate_bits)) : "unshaped",
      o.delay_s > 0 ? fmt::format("delay {:g} ms each way", o.delay_s * 1e3) : "no delay",
      format_size(o.disk_bytes), format_size(o.ram_bytes));
  out += fmt::format("ssh:       ssh -F {} {}   (or {})\n\n", st.state.ssh_config,
                     st.state.server.alias, st.state.client.alias);
  out += host_text(st.server);
  out += servers_text(st);
  out += "\n" + switch_text(st);
  out += "\n" + host_text(st.client);
  if (!st.healthy) {
    out += fmt::format("\nfix: `{}` restarts what is down (or `lab down`, then `lab up`)\n",
                       st.state.instance == 0
                           ? std::string("chokepoint lab up")
                           : fmt::format("chokepoint lab up --instance {}", st.state.instance));
  }
  return out;
}

std::string status_json(const LabStatus& st) {
  const LabOptions& o = st.state.options;
  json::array down, samba;
  for (const std::string& d : st.down) down.emplace_back(d);
  for (const std::string& p : o.samba_params) samba.emplace_back(p);
  json::array vsftpd, ganesha;
  for (const std::string& p : o.vsftpd_params) vsftpd.emplace_back(p);
  for (const std::string& p : o.ganesha_params) ganesha.emplace_back(p);
  json::object obj = {
      {"up", true},
      {"instance", st.state.instance},
      {"healthy", st.healthy},
      {"why", st.why},
      {"down", down},
      {"dir", st.state.dir},
      {"ssh_config", st.state.ssh_config},
      {"identity", st.state.identity},
      {"known_hosts", st.state.known_hosts},
      {"options",
       {{"rate_bits", o.rate_bits},
        {"mtu", o.mtu},
        {"server_mtu", host_mtu(o, "server")},
        {"client_mtu", host_mtu(o, "client")},
        {"path_rate_bits", o.path_rate_bits},
        {"delay_s", o.delay_s},
        {"disk_bytes", o.disk_bytes},
        {"ram_bytes", o.ram_bytes},
        {"samba_params", samba},
        {"vsftpd_params", vsftpd},
        {"ganesha_params", ganesha}}},
      {"server", host_json(st.server)},
      {"client", host_json(st.client)},
      {"path", path_json(st)},
  };
  const LabState& s = st.state;
  json::array shares;
  for (const LabShare& sh : s.server.shares) {
    shares.push_back(json::object{{"protocol", sh.protocol},
                                  {"medium", sh.medium},
                                  {"url", sh.url},
                                  {"server_dir", sh.server_dir}});
  }
  obj["servers"] = json::object{{"ftpd_pid", s.server.ftpd_pid},
                                {"ftpd_alive", st.ftpd_alive},
                                {"smbd_pid", s.server.smbd_pid},
                                {"smbd_alive", st.smbd_alive},
                                {"nfsd_pid", s.server.nfsd_pid},
                                {"nfsd_alive", st.nfsd_alive},
                                {"rpcbind_pid", s.server.rpcbind_pid},
                                {"shares", std::move(shares)},
                                {"share_user", s.share_user},
                                {"share_user_created", s.share_user_created},
                                {"share_password_file", s.share_password_file},
                                {"ftps_cert", server_files(s).ftps_cert},
                                {"samba_params", samba},
                                {"throttle", throttle_to_json(s.throttle)}};
  return json::serialize(obj) + "\n";
}

std::string no_lab_text(int instance) { return no_lab_message(instance) + "\n"; }

std::string no_lab_json(int instance) {
  return json::serialize(json::object{
             {"up", false}, {"instance", instance}, {"message", no_lab_message(instance)}}) +
         "\n";
}

void parse_qdiscs(std::string_view tc_json, HostStatus* out) {
  const json::value v = parse_json_or_null(tc_json);
  if (!v.is_array()) return;
  std::string root, child;
  for (const json::value& q : v.get_array()) {
    if (!q.is_object()) continue;
    const json::object& o = q.get_object();
    const json::value* kind = o.if_contains("kind");
    if (!kind || !kind->is_string()) continue;
    const std::string k(kind->get_string());
    const json::value* is_root = o.if_contains("root");
    const bool at_root = is_root && is_root->is_bool() && is_root->get_bool();
    (at_root ? root : child) = k;
    const json::value* opts = o.if_contains("options");
    if (!opts || !opts->is_object()) continue;
    const json::object& op = opts->get_object();
    if (k == "tbf") {
      // tc -j reports tbf's rate in bytes/s.
      out->rate_bits = as_u64(op.if_contains("rate")) * 8;
      out->burst_bytes = as_u64(op.if_contains("burst"));
    } else if (k == "netem") {
      const json::value* d = op.if_contains("delay");
      if (d && d->is_object()) {
        const json::value* dd = d->get_object().if_contains("delay");
        if (dd && dd->is_number()) out->delay_s = dd->to_number<double>();
      }
    }
  }
  out->qdisc = child.empty() ? root : (root.empty() ? child : root + "+" + child);
}

std::vector<std::string> parse_addresses(std::string_view ip_json) {
  std::vector<std::string> out;
  const json::value v = parse_json_or_null(ip_json);
  if (!v.is_array()) return out;
  for (const json::value& link : v.get_array()) {
    if (!link.is_object()) continue;
    const json::value* name = link.get_object().if_contains("ifname");
    const json::value* infos = link.get_object().if_contains("addr_info");
    if (!name || !name->is_string() || !infos || !infos->is_array()) continue;
    for (const json::value& a : infos->get_array()) {
      if (!a.is_object()) continue;
      const json::object& ao = a.get_object();
      const json::value* fam = ao.if_contains("family");
      const json::value* local = ao.if_contains("local");
      const json::value* prefix = ao.if_contains("prefixlen");
      if (!fam || !fam->is_string() || fam->get_string() != "inet" || !local ||
          !local->is_string() || !prefix) {
        continue;
      }
      out.push_back(fmt::format("{} {}/{}", std::string_view(name->get_string()),
                                std::string_view(local->get_string()), as_u64(prefix)));
    }
  }
  return out;
}

std::string parse_master(std::string_view ip_json) {
  const json::value v = parse_json_or_null(ip_json);
  if (!v.is_array() || v.get_array().empty() || !v.get_array()[0].is_object()) return {};
  const json::value* m = v.get_array()[0].get_object().if_contains("master");
  return m && m->is_string() ? std::string(m->get_string()) : std::string();
}

int parse_mtu(std::string_view ip_json) {
  const json::value v = parse_json_or_null(ip_json);
  if (!v.is_array() || v.get_array().empty() || !v.get_array()[0].is_object()) return 0;
  return static_cast<int>(as_u64(v.get_array()[0].get_object().if_contains("mtu")));
}

MountView parse_findmnt(std::string_view out) {
  MountView m;
  const size_t eol = out.find('\n');
  const std::string_view line = out.substr(0, eol);
  const size_t a = line.find(' ');
  if (a == std::string_view::npos) return m;
  const size_t b = line.find(' ', a + 1);
  if (b == std::string_view::npos) return m;
  m.fstype = std::string(line.substr(0, a));
  try {
    m.size_bytes = std::stoull(std::string(line.substr(a + 1, b - a - 1)));
  } catch (const std::exception&) {
    return MountView{};
  }
  m.source = std::string(line.substr(b + 1));
  m.mounted = !m.fstype.empty();
  return m;
}

}  // namespace cp::lab
