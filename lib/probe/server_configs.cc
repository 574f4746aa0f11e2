#include "probe/server_configs.h"

#include <fmt/format.h>

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
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

msg::NamedValues parse_proftpd_conf(std::string_view text) {
  msg::NamedValues out;
  std::map<std::string, double> least;  // "transferrate retr" -> KB/s
  std::map<std::string, std::string> as_written;
  std::string joined;  // a line continued with '\\'
  for (std::string_view raw : split(text, '\n')) {
    std::string_view line = trim(raw);
    if (!line.empty() && line.back() == '\\') {
      joined += std::string(line.substr(0, line.size() - 1)) + " ";
      continue;
    }
    const std::string full = joined + std::string(line);
    joined.clear();
    const std::vector<std::string_view> w = split_ws(full);
    if (w.empty() || w[0].front() == '#') continue;
    const std::string directive = lower(std::string(w[0]));
    if (directive == "usesendfile" && w.size() > 1) {
      set_value(out, "usesendfile", lower(std::string(w[1])));
    } else if (directive == "pidfile" && w.size() > 1) {
      set_value(out, "pidfile", std::string(w[1]));
    } else if (directive == "transferrate" && w.size() > 2) {
      // "RETR,STOR KB/s[:free-bytes] [user|group|class EXPR]": the tightest
      // rate any context sets for each command.
      const std::string_view rate = w[2].substr(0, w[2].find(':'));
      double kb = 0;
      auto [p, ec] = std::from_chars(rate.data(), rate.data() + rate.size(), kb);
      if (ec != std::errc() || p != rate.data() + rate.size() || kb <= 0) continue;
      for (std::string_view cmd : split(w[1], ',')) {
        const std::string key = "transferrate " + lower(std::string(trim(cmd)));
        if (key != "transferrate retr" && key != "transferrate stor") continue;
        if (auto it = least.find(key); it == least.end() || kb < it->second) {
          least[key] = kb;
          as_written[key] = std::string(rate);
        }
      }
    }
  }
  for (const auto& [key, value] : as_written) out.push_back({key, value});
  return out;
}

namespace {

// The files an `Include` argument names: a file, a directory's files, or a
// glob; relative to `dir`. Sorted, as proftpd reads them.
std::vector<std::string> included_files(std::string arg, const std::string& dir) {
  if (arg.size() > 1 && arg.front() == '"' && arg.back() == '"')
    arg = arg.substr(1, arg.size() - 2);
  if (!arg.empty() && arg.front() != '/') arg = dir + "/" + arg;
  std::vector<std::string> out;
  std::error_code ec;
  if (std::filesystem::is_directory(arg, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(arg, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.empty() && name.front() != '.' && name.back() != '~' && e.is_regular_file(ec)) {
        out.push_back(e.path().string());
      }
    }
  } else if (arg.find_first_of("*?[") == std::string::npos) {
    out.push_back(arg);  // a plain file: one that is not there fails the read, as in proftpd
  } else {
    glob_t g{};
    if (::glob(arg.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool expand_proftpd(const std::string& path, int depth, std::string* text, std::string* error) {
  std::string own;
  if (!read_file(path, &own)) {
    *error = fmt::format("cannot read {}: {}", path, errno_text(errno));
    return false;
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  for (std::string_view line : split(own, '\n')) {
    const std::vector<std::string_view> w = split_ws(line);
    if (w.size() == 2 && lower(std::string(w[0])) == "include") {
      if (depth >= 8) {
        *error = fmt::format("{}: Include nested over 8 deep", path);
        return false;
      }
      for (const std::string& f : included_files(std::string(w[1]), dir)) {
        if (!expand_proftpd(f, depth + 1, text, error)) return false;
      }
      continue;
    }
    *text += line;
    *text += '\n';
  }
  return true;
}

}  // namespace

bool read_proftpd_conf(const std::string& path, std::string* text, std::string* error) {
  text->clear();
  return expand_proftpd(path, 0, text, error);
}

std::string proftpd_config_from_cmdline(std::string_view cmdline) {
  const std::vector<std::string_view> args = cmdline_args(cmdline);
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if ((a == "-c" || a == "--config") && i + 1 < args.size()) return std::string(args[i + 1]);
    if (a.rfind("--config=", 0) == 0) return std::string(a.substr(9));
    if (a.size() > 2 && a.rfind("-c", 0) == 0) return std::string(a.substr(2));
  }
  return {};
}

namespace {

// proftpd `p`'s settings: its command line's config (proftpd rewrites its
// command line to "proftpd: (accepting connections)", so that is mostly
// gone) else Debian's default, whose PidFile must then name `p` (a config
// that names another pid is not this instance's).
msg::ServerConfigFacts proftpd_facts(const os::NamedProcess& p) {
  msg::ServerConfigFacts f;
  f.server = "proftpd";
  f.pid = p.pid;
  f.found_by = fmt::format("running proftpd (pid {})", p.pid);
  f.config_path = proftpd_config_from_cmdline(p.cmdline);
  const bool from_cmdline = !f.config_path.empty();
  if (!from_cmdline) f.config_path = "/etc/proftpd/proftpd.conf";
  std::string text;
  if (!read_proftpd_conf(f.config_path, &text, &f.error)) return f;
  f.settings = parse_proftpd_conf(text);
  if (from_cmdline) return f;
  const std::string* pidfile = msg::find_value(f.settings, "pidfile");
  std::string pid_text;
  if (read_file(pidfile ? *pidfile : "/run/proftpd.pid", &pid_text) &&
      trim(pid_text) != std::to_string(p.pid)) {
    f.error = fmt::format(
        "proftpd (pid {}) does not name its config on its command line, and the default's "
        "PidFile names pid {}: start it with -c FILE where its config is elsewhere",
        p.pid, trim(pid_text));
    f.settings.clear();
  }
  return f;
}

}  // namespace

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
  for (const os::NamedProcess& p : instances(proc_root, "proftpd")) {
    out.push_back(proftpd_facts(p));
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
