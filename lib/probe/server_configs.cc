#include "probe/server_configs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/text.h"
#include "probe/platform.h"

namespace cp::probe {
namespace {

// What the verdict reads of vsftpd's settings (costly_settings.cc).
constexpr std::string_view kVsftpdSettings[] = {
    "local_max_rate",       "anon_max_rate", "use_sendfile",   "ssl_enable",
    "force_local_data_ssl", "isolate",       "isolate_network"};

bool vsftpd_setting(std::string_view key) {
  return std::find(std::begin(kVsftpdSettings), std::end(kVsftpdSettings), key) !=
         std::end(kVsftpdSettings);
}

void set_value(msg::NamedValues& out, const std::string& name, const std::string& value) {
  auto same = [&](const msg::NamedValue& v) { return v.name == name; };
  if (auto it = std::find_if(out.begin(), out.end(), same); it != out.end()) {
    it->value = value;
  } else {
    out.push_back({name, value});
  }
}

// Every running instance of the server named `comm`: the roots of its process
// trees (a process whose parent is not `comm` too: vsftpd's listener, not its
// sessions), those in this network namespace first, then the others (a
// container's), each in pid order. The first is the one a run without the
// sample's connection reads.
std::vector<os::NamedProcess> instances(const std::string& proc_root, std::string_view comm) {
  const std::map<int, os::ProcessTimes> procs = os::read_processes(proc_root);
  std::vector<os::NamedProcess> out;
  for (const os::NamedProcess& p : os::processes_named(proc_root, comm)) {
    auto self = procs.find(p.pid);
    auto parent = self == procs.end() ? procs.end() : procs.find(self->second.ppid);
    if (parent != procs.end() && parent->second.comm == comm) continue;
    out.push_back(p);
  }
  std::stable_partition(out.begin(), out.end(),
                        [](const os::NamedProcess& p) { return p.local_netns; });
  return out;
}

// Reads `path` into `f` (its error when it cannot), settings by `parse`.
template <class Parse>
void read_config(msg::ServerConfigFacts& f, const std::string& path, Parse parse) {
  f.config_path = path;
  std::string text;
  if (!read_file(path, &text)) {
    f.error = fmt::format("cannot read {}: {}", path, errno_text(errno));
    return;
  }
  f.settings = parse(text);
}

}  // namespace

std::vector<std::string_view> cmdline_args(std::string_view cmdline) {
  std::vector<std::string_view> args;
  size_t start = 0;
  while (start < cmdline.size()) {
    size_t end = cmdline.find('\0', start);
    if (end == std::string_view::npos) end = cmdline.size();
    args.push_back(cmdline.substr(start, end - start));
    start = end + 1;
  }
  return args;
}

msg::NamedValues parse_vsftpd_conf(std::string_view text) {
  msg::NamedValues out;
  for (std::string_view line : split(text, '\n')) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string key = lower(std::string(line.substr(0, eq)));
    if (vsftpd_setting(key)) set_value(out, key, std::string(line.substr(eq + 1)));
  }
  return out;
}

std::string vsftpd_config_from_cmdline(std::string_view cmdline, msg::NamedValues* overrides) {
  std::string conf;
  const std::vector<std::string_view> args = cmdline_args(cmdline);
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a.rfind("-o", 0) == 0) {
      for (const msg::NamedValue& v : parse_vsftpd_conf(a.substr(2))) {
        if (overrides && v.value) set_value(*overrides, v.name, *v.value);
      }
    } else if (!a.empty() && a.front() != '-' && conf.empty()) {
      conf = std::string(a);
    }
  }
  return conf;
}

msg::NamedValues parse_ganesha_conf(std::string_view text) {
  // Comments out, and a block's braces as separators (a parameter after an
  // inner block's '}' is its export's), then every `name = value;` whatever
  // block holds it.
  std::string plain;
  for (std::string_view line : split(text, '\n')) {
    plain += line.substr(0, line.find('#'));
    plain += '\n';
  }
  std::replace(plain.begin(), plain.end(), '}', '{');
  msg::NamedValues out;
  for (const char* key : {"maxread", "maxwrite"}) {
    std::optional<uint64_t> least;
    for (std::string_view part : split(plain, ';')) {
      for (std::string_view piece : split(part, '{')) {
        const size_t eq = piece.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string name = lower(std::string(trim(piece.substr(0, eq))));
        if (name != key) continue;
        const std::string_view text = trim(piece.substr(eq + 1));
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || p != text.data() + text.size()) continue;
        if (v > 0 && (!least || v < *least)) least = v;
      }
    }
    if (least) out.push_back({key, std::to_string(*least)});
  }
  return out;
}

std::string ganesha_config_from_cmdline(std::string_view cmdline) {
  const std::vector<std::string_view> args = cmdline_args(cmdline);
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] == "-f") return std::string(args[i + 1]);
  }
  return {};
}

msg::NamedValues parse_nfs_exports(std::string_view text) {
  msg::NamedValues out;
  int sync = 0, async = 0;
  for (std::string_view line : split(text, '\n')) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> f = split_ws(line);
    if (f.size() < 2) continue;
    // "CLIENT(opt,opt,...)": the first client's options stand for the export.
    const size_t open = f[1].find('('), close = f[1].rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      continue;
    }
    const std::string options(f[1].substr(open + 1, close - open - 1));
    bool is_async = false;
    for (std::string_view o : split(options, ',')) is_async = is_async || o == "async";
    ++(is_async ? async : sync);
    out.push_back({"export:" + std::string(f[0]), options});
  }
  if (sync + async > 0) {
    out.insert(out.begin(), {"sync", std::string(async == 0  ? "sync"
                                                 : sync == 0 ? "async"
                                                             : "mixed")});
  }
  return out;
}

std::vector<msg::ServerConfigFacts> server_config_facts(const std::string& proc_root) {
  std::vector<msg::ServerConfigFacts> out;
  for (const os::NamedProcess& p : instances(proc_root, "vsftpd")) {
    msg::ServerConfigFacts f;
    f.server = "vsftpd";
    f.pid = p.pid;
    f.found_by = fmt::format("running vsftpd (pid {})", p.pid);
    msg::NamedValues overrides;
    std::string conf = vsftpd_config_from_cmdline(p.cmdline, &overrides);
    if (conf.empty()) conf = "/etc/vsftpd.conf";
    read_config(f, conf, parse_vsftpd_conf);
    for (const msg::NamedValue& v : overrides) set_value(f.settings, v.name, v.value.value_or(""));
    out.push_back(std::move(f));
  }
  for (const os::NamedProcess& p : instances(proc_root, "ganesha.nfsd")) {
    msg::ServerConfigFacts f;
    f.server = "nfs-ganesha";
    f.pid = p.pid;
    f.found_by = fmt::format("running ganesha.nfsd (pid {})", p.pid);
    std::string conf = ganesha_config_from_cmdline(p.cmdline);
    if (conf.empty()) conf = "/etc/ganesha/ganesha.conf";
    read_config(f, conf, parse_ganesha_conf);
    out.push_back(std::move(f));
  }
  if (const std::optional<std::string> exports = os::nfs_exports(proc_root)) {
    msg::ServerConfigFacts f;
    f.server = "knfsd";
    f.found_by = "kernel";
    f.config_path = proc_root + "/fs/nfs/exports";
    f.settings = parse_nfs_exports(*exports);
    if (!f.settings.empty()) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace cp::probe
