#include "lab/lab_cli.h"

#include <fmt/format.h>

#include <boost/program_options.hpp>

#include <iostream>
#include <ostream>

#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "lab/layout.h"
#include "lab/status.h"
#include "lab/throttle.h"

namespace cp::lab {
namespace po = boost::program_options;

namespace {

constexpr const char* kSeeHelp = "see `chokepoint lab --help`";

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

// Parses `args` against `desc`; command-line mistakes become Error(kUsage).
po::variables_map parse(const std::string& sub, const po::options_description& desc,
                        const std::vector<std::string>& args) {
  // Positional words are collected only to name the first one in the error.
  po::options_description all;
  all.add(desc).add_options()("positional-words", po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("positional-words", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(ErrorKind::kUsage, fmt::format("lab {}: {}", sub, e.what()), kSeeHelp);
  }
  if (vm.count("positional-words")) {
    throw Error(ErrorKind::kUsage,
                fmt::format("lab {}: unexpected argument '{}'", sub,
                            vm["positional-words"].as<std::vector<std::string>>().front()),
                kSeeHelp);
  }
  return vm;
}

// Value parsers report kConfig; on the command line that is a usage error.
template <typename F>
auto as_usage(F f) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kConfig) throw;
    throw Error(ErrorKind::kUsage, e.what(), e.hint());
  }
}

// --instance N, else $CHOKEPOINT_LAB_INSTANCE, else 0.
int instance_of(const po::variables_map& vm) {
  if (vm.count("instance")) {
    return as_usage([&] { return parse_instance(vm["instance"].as<std::string>(), "--instance"); });
  }
  return default_instance();
}

void add_instance_option(po::options_description& desc) {
  desc.add_options()("instance", po::value<std::string>(), "lab instance");
}

// "chokepoint lab down" or "chokepoint lab down --instance 9".
std::string lab_cmd(const std::string& sub, int instance) {
  return instance == 0 ? "chokepoint lab " + sub
                       : fmt::format("chokepoint lab {} --instance {}", sub, instance);
}

std::string options_text(const LabOptions& o) {
  const int smtu = host_mtu(o, "server"), cmtu = host_mtu(o, "client");
  return fmt::format(
      "hosts {}, MTU {}; path {}, {}",
      o.rate_bits ? format_rate_bits(static_cast<double>(o.rate_bits)) : "unshaped",
      smtu == cmtu ? std::to_string(smtu) : fmt::format("{} (server) / {} (client)", smtu, cmtu),
      o.path_rate_bits ? format_rate_bits(static_cast<double>(o.path_rate_bits)) : "unshaped",
      o.delay_s > 0 ? fmt::format("delay {:g} ms each way", o.delay_s * 1e3) : "no delay");
}

int cmd_up(const std::vector<std::string>& args, std::ostream& out) {
  const UpArgs a = parse_up_args(args);
  const int instance = a.instance ? *a.instance : default_instance();
  bool was_up = false;  // only for the wording; up() itself decides
  try {
    if (std::optional<LabState> cur = load(default_dir(instance))) {
      was_up = healthy(*cur, nullptr);
    }
  } catch (const Error&) {
  }
  const LabState s = up(a.options, instance);
  if (was_up) {
    out << fmt::format("lab in {} was up: retuned in place ({}); hosts kept running\n", s.dir,
                       options_text(s.options));
    if ((a.disk_size_given && a.options.disk_bytes != s.options.disk_bytes) ||
        (a.ram_size_given && a.options.ram_bytes != s.options.ram_bytes)) {
      out << fmt::format(
          "note: sizes apply when the lab is created; it keeps disk {} and ram {} per host "
          "(`chokepoint lab down` first to change them)\n",
          format_size(s.options.disk_bytes), format_size(s.options.ram_bytes));
    }
  } else {
    out << fmt::format("lab up in {}\n", s.dir);
  }
  out << fmt::format("  data link  {} <-> {}: {}\n", s.server.data_address, s.client.data_address,
                     options_text(s.options));
  if (!s.sw.netns.empty()) {
    out << fmt::format("  switch     {}{}\n", s.sw.netns,
                       s.sw.delay_mode == kDelayLine
                           ? fmt::format(" (delay line pid {}: no netem here)", s.sw.delay_line_pid)
                       : s.sw.delay_mode == kDelayNetem ? std::string(" (netem)")
                                                        : "");
  }
  for (const std::string& p : s.options.samba_params) out << "  samba      " << p << "\n";
  for (const std::string& p : s.options.vsftpd_params) out << "  vsftpd     " << p << "\n";
  for (const std::string& p : s.options.ganesha_params) out << "  ganesha    " << p << "\n";
  for (const LabHost* h : {&s.server, &s.client}) {
    out << fmt::format("  {}  ssh {}, ram {} ({} tmpfs), disk {} ({} ext4 on {})\n", h->alias,
                       h->mgmt_address, h->ram_dir, format_size(s.options.ram_bytes), h->disk_dir,
                       format_size(s.options.disk_bytes), h->loop_device);
  }
  out << shares_text(s);
  out << fmt::format("ssh into a host:  ssh -F {} {}\n", s.ssh_config, s.server.alias)
      << (instance == 0 ? std::string("diagnose it:      chokepoint diagnose --lab\n")
                        : fmt::format("diagnose it:      {}={} chokepoint diagnose --lab\n",
                                      kInstanceEnv, instance))
      << fmt::format("take it down:     {}\n", lab_cmd("down", instance));
  return 0;
}

int cmd_status(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("chokepoint lab status options");
  desc.add_options()("json", "print JSON");
  add_instance_option(desc);
  const po::variables_map vm = parse("status", desc, args);
  const bool as_json = vm.count("json") > 0;
  const int instance = instance_of(vm);
  std::optional<LabState> s = load(default_dir(instance));
  if (!s) {
    out << (as_json ? no_lab_json(instance) : no_lab_text(instance));
    return kExitNoLab;
  }
  const LabStatus st = gather_status(*s);
  out << (as_json ? status_json(st) : status_text(st));
  return st.healthy ? 0 : kExitUnhealthy;
}

int cmd_throttle(const std::vector<std::string>& args, std::ostream& out) {
  const ThrottleRequest req = parse_throttle_args(args);
  const int instance = req.instance ? *req.instance : default_instance();
  const bool change = req.clear || req.smbd_cpu || req.nfsd_cpu || req.disk_read_bps ||
                      req.disk_write_bps || req.client_cpu || req.client_disk_read_bps ||
                      req.client_disk_write_bps;
  if (!change) {
    std::optional<LabState> s = load(default_dir(instance));
    if (!s) {
      out << no_lab_text(instance);
      return 0;
    }
    out << fmt::format("throttles on the lab in {}: {}\n", s->dir, throttle_text(s->throttle));
    return 0;
  }
  const LabState s = throttle(req, instance);
  out << fmt::format("throttles on the lab in {}: {}\n", s.dir, throttle_text(s.throttle));
  for (const std::string& c : s.throttle.cgroups) out << "  cgroup " << c << "\n";
  if ((s.throttle.disk_write_bps > 0 || s.throttle.client_disk_write_bps > 0) &&
      !cgroup_layout().blkio_v1.empty()) {
    out << "note: cgroup v1 charges only direct and synced writes to the limit; buffered writes "
           "reach the disk at full speed when the kernel flushes them\n";
  }
  return 0;
}

int cmd_down(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("chokepoint lab down options");
  add_instance_option(desc);
  const po::variables_map vm = parse("down", desc, args);
  const int instance = instance_of(vm);
  const std::string dir = default_dir(instance);
  bool was_there = true;  // a damaged lab.json still means a lab to take down
  try {
    was_there = load(dir).has_value();
  } catch (const Error&) {
  }
  down(instance, dir);
  out << (was_there ? fmt::format("lab in {} is down\n", dir)
                    : fmt::format("no lab in {}; nothing to take down\n", dir));
  return 0;
}

}  // namespace

namespace {

// One entry per lab subcommand: its usage line, its help and its handler;
// `lab --help`, `lab <sub> --help`, the dispatch and the unknown-subcommand
// error all come from here.
struct LabSubcommand {
  const char* name;
  const char* usage;  // after "chokepoint lab "
  const char* help;   // what it does and its options
  int (*run)(const std::vector<std::string>& args, std::ostream& out);
};

const std::vector<LabSubcommand>& lab_subcommands() {
  static const std::vector<LabSubcommand> table = {
      {"up",
       "up [--rate R] [--path-rate R] [--delay D] [--mtu M] [--server-mtu M]\n"
       "                         [--client-mtu M] [--samba 'name = value']...\n"
       "                         [--vsftpd 'name=value']... [--ganesha 'Name = value']...\n"
       "                         [--disk-size S] [--ram-size S] [--server-profile nas]\n"
       "                         [--server-login user]",
       "up options:\n"
       "  --rate R        the hosts' own data interfaces, like 1gbit; 0 = unshaped (default)\n"
       "  --path-rate R   on the path: tbf on the switch's ports (both directions), the\n"
       "                  hosts' interfaces staying unshaped; 0 = none (default)\n"
       "  --delay D       one-way delay each way on the path, like 5ms (RTT 2xD): netem on\n"
       "                  the switch's ports, or the lab's delay line where there is no netem\n"
       "  --mtu M         both hosts' data MTU in bytes (default 1500)\n"
       "  --server-mtu M, --client-mtu M   one host's own (the switch takes the largest)\n"
       "  --samba 'name = value'   an smb.conf [global] parameter (repeatable); smbd restarts;\n"
       "                  '[disk] name = value' sets it in one share's section (ram, disk, ro)\n"
       "  --vsftpd 'name=value'    a vsftpd.conf line (repeatable, appended: it wins over the\n"
       "                  lab's); vsftpd restarts\n"
       "  --ganesha 'Name = value' a parameter of each of Ganesha's EXPORT blocks (repeatable,\n"
       "                  like 'MaxWrite = 65536'); ganesha.nfsd restarts\n"
       "  --disk-size S   each host's ext4 disk (default 3GiB)\n"
       "  --ram-size S    each host's tmpfs (default 2GiB)\n"
       "  --server-profile nas   the server's SSH sessions run in a root filesystem holding\n"
       "                  only BusyBox (a NAS without Debian's libraries); changing it\n"
       "                  rebuilds the lab\n"
       "  --server-login user   the server's SSH sessions log in as the share user, who owns\n"
       "                  the shares but has no root (a NAS admin account); `diagnose --lab`\n"
       "                  then works in the shares; root is the default; changing it\n"
       "                  rebuilds the lab\n"
       "`up` on a running lab re-applies all but the sizes in place (what is not given\n"
       "returns to its default), and restarts whatever daemon is down.\n",
       cmd_up},
      {"status", "status [--json]",
       "status exits 0 when the lab is up and healthy, 3 when no lab is up, 4 when a\n"
       "part of it is down (sshd, vsftpd, smbd, ganesha, the delay line: `lab up` restarts it).\n"
       "  --json          the same as one JSON document (names, addresses, shares, shaping)\n",
       cmd_status},
      {"throttle",
       "throttle [--smbd-cpu P] [--nfsd-cpu P] [--server-disk-read R] "
       "[--server-disk-write R] [--client-cpu P] [--client-disk-read R] [--client-disk-write R] "
       "[--clear]",
       "throttle options (cgroups; `throttle` alone shows them; `down` clears them):\n"
       "  --smbd-cpu P           CPU quota for smbd, like 20% of one core; off removes it\n"
       "  --nfsd-cpu P           CPU quota for the NFS server (ganesha.nfsd), likewise\n"
       "  --server-disk-read R   read limit on the server's disk, like 50MB/s; off removes it\n"
       "  --server-disk-write R  write limit on it (cgroup v1: direct and synced writes only)\n"
       "  --client-cpu P         CPU quota for everything the client's sshd starts (the\n"
       "                         client agent), like 20% of one core; off removes it\n"
       "  --client-disk-read R   read limit on the client's disk, like 50MB/s; off removes it\n"
       "  --client-disk-write R  write limit on it (cgroup v1: direct and synced writes only)\n"
       "  --clear                remove every throttle\n",
       cmd_throttle},
      {"down", "down",
       "down removes everything the lab made (daemons stopped by PID, namespaces, loop\n"
       "disks, cgroups, the share user it created) and its dir; with no lab it does nothing.\n",
       cmd_down},
  };
  return table;
}

std::string instance_text() {
  return fmt::format(
      "Every subcommand takes --instance N (default ${} or 0): labs 1..{} run beside\n"
      "the default lab 0 with their own names (cp-server-N), addresses, dir and user.\n",
      kInstanceEnv, kMaxInstance);
}

std::string where_text() {
  return fmt::format(
      "The lab lives in {} (instance N: {}-N; or ${}); `chokepoint diagnose --lab`\n"
      "tests it (instance ${}).\n",
      kDefaultDir, kDefaultDir, kDirEnv, kInstanceEnv);
}

constexpr const char* kLabAbout =
    "A two-host lab on this machine (root only): network namespaces cp-server and\n"
    "cp-client whose data interfaces are joined by a third namespace, the switch\n"
    "cp-switch (where --path-rate and --delay act), each host with its own sshd\n"
    "(reachable over a separate management link), tmpfs and ext4-on-loop disk. The server\n"
    "also runs vsftpd, smbd and NFS-Ganesha on its data address, each exporting shares\n"
    "ram (tmpfs) and disk (ext4) to the user cplab (instance N: cplab-N; password in\n"
    "<lab dir>/share_password); vsftpd also offers explicit TLS (ftps://) with a\n"
    "self-signed certificate.\n";

const LabSubcommand* find_subcommand(const std::string& name) {
  for (const LabSubcommand& c : lab_subcommands())
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

std::string lab_usage() {
  std::string out;
  for (const LabSubcommand& c : lab_subcommands()) {
    out += fmt::format("{}chokepoint lab {}\n", out.empty() ? "usage: " : "       ", c.usage);
  }
  out += instance_text() + "\n" + kLabAbout;
  for (const LabSubcommand& c : lab_subcommands()) out += std::string("\n") + c.help;
  return out + "\n" + where_text();
}

std::string lab_usage(const std::string& sub) {
  const LabSubcommand* c = find_subcommand(sub);
  if (!c) return lab_usage();
  std::string out = fmt::format("usage: chokepoint lab {}\n", c->usage);
  if (sub == "up") out += std::string("\n") + kLabAbout;
  return out + "\n" + c->help + "\n" + instance_text() + where_text();
}

UpArgs parse_up_args(const std::vector<std::string>& args) {
  po::options_description desc("chokepoint lab up options");
  desc.add_options()("rate", po::value<std::string>(), "hosts' data link rate")(
      "path-rate", po::value<std::string>(), "rate on the switch's ports")(
      "mtu", po::value<int>(), "data link MTU")("server-mtu", po::value<int>(), "server MTU")(
      "client-mtu", po::value<int>(), "client MTU")("delay", po::value<std::string>(),
                                                    "one-way delay")(
      "disk-size", po::value<std::string>(), "disk size")("ram-size", po::value<std::string>(),
                                                          "ram size")(
      "samba", po::value<std::vector<std::string>>(),
      "smb.conf [global] (or '[share] ...') parameter")(
      "vsftpd", po::value<std::vector<std::string>>(), "vsftpd.conf line")(
      "ganesha", po::value<std::vector<std::string>>(), "ganesha.conf EXPORT parameter")(
      "server-profile", po::value<std::string>(), "the server host's kind")(
      "server-login", po::value<std::string>(), "whom the server's SSH sessions log in as");
  add_instance_option(desc);
  const po::variables_map vm = parse("up", desc, args);
  UpArgs a;
  if (vm.count("instance")) a.instance = instance_of(vm);
  if (vm.count("rate")) {
    const std::string r = vm["rate"].as<std::string>();
    a.options.rate_bits = (r == "0" || r == "off" || r == "none")
                              ? 0
                              : as_usage([&] { return parse_rate_bits(r, "--rate"); });
  }
  if (vm.count("path-rate")) {
    const std::string r = vm["path-rate"].as<std::string>();
    a.options.path_rate_bits = (r == "0" || r == "off" || r == "none")
                                   ? 0
                                   : as_usage([&] { return parse_rate_bits(r, "--path-rate"); });
  }
  if (vm.count("mtu")) a.options.mtu = vm["mtu"].as<int>();
  if (vm.count("server-mtu")) a.options.server_mtu = vm["server-mtu"].as<int>();
  if (vm.count("client-mtu")) a.options.client_mtu = vm["client-mtu"].as<int>();
  if (vm.count("samba")) a.options.samba_params = vm["samba"].as<std::vector<std::string>>();
  if (vm.count("vsftpd")) a.options.vsftpd_params = vm["vsftpd"].as<std::vector<std::string>>();
  if (vm.count("ganesha")) {
    a.options.ganesha_params = vm["ganesha"].as<std::vector<std::string>>();
  }
  if (vm.count("server-profile")) a.options.server_profile = vm["server-profile"].as<std::string>();
  if (vm.count("server-login")) a.options.server_login = vm["server-login"].as<std::string>();
  if (vm.count("delay")) {
    a.options.delay_s =
        as_usage([&] { return parse_duration(vm["delay"].as<std::string>(), "--delay"); });
  }
  if (vm.count("disk-size")) {
    a.options.disk_bytes =
        as_usage([&] { return parse_size(vm["disk-size"].as<std::string>(), "--disk-size"); });
    a.disk_size_given = true;
  }
  if (vm.count("ram-size")) {
    a.options.ram_bytes =
        as_usage([&] { return parse_size(vm["ram-size"].as<std::string>(), "--ram-size"); });
    a.ram_size_given = true;
  }
  as_usage([&] {
    validate(a.options);
    return 0;
  });
  return a;
}

double parse_cpu_share(const std::string& text, const std::string& what) {
  if (text == "off" || text == "0" || text == "0%") return 0;
  std::string num = text;
  if (!num.empty() && num.back() == '%') num.pop_back();
  const std::optional<double> pct = parse_double(num);
  if (!pct || text.back() != '%' || !(*pct > 0) || *pct > 6400) {
    throw Error(ErrorKind::kUsage, fmt::format("{} '{}' is not a CPU share", what, text),
                "give a percentage of one core, like 20%, or off");
  }
  return *pct / 100;
}

uint64_t parse_bytes_rate(const std::string& text, const std::string& what) {
  if (text == "off" || text == "0") return 0;
  std::string size = text;
  if (size.size() > 2 && size.substr(size.size() - 2) == "/s") size.resize(size.size() - 2);
  const uint64_t v = as_usage([&] { return parse_size(size, what); });
  if (v < 4096) {
    throw Error(ErrorKind::kUsage, fmt::format("{} '{}' is below 4 KB/s", what, text),
                "give a rate like 50MB/s, or off");
  }
  return v;
}

namespace {
// `lab throttle`'s limits, in its help's order: a CPU share
// (parse_cpu_share) or a disk rate (parse_bytes_rate) into its field.
struct Limit {
  const char* option;
  const char* help;
  std::optional<double> ThrottleRequest::*cpu = nullptr;
  std::optional<uint64_t> ThrottleRequest::*disk = nullptr;
};
constexpr Limit kLimits[] = {
    {"smbd-cpu", "smbd CPU quota", &ThrottleRequest::smbd_cpu},
    {"nfsd-cpu", "ganesha.nfsd CPU quota", &ThrottleRequest::nfsd_cpu},
    {"server-disk-read", "server disk read limit", nullptr, &ThrottleRequest::disk_read_bps},
    {"server-disk-write", "server disk write limit", nullptr, &ThrottleRequest::disk_write_bps},
    {"client-cpu", "client host CPU quota", &ThrottleRequest::client_cpu},
    {"client-disk-read", "client disk read limit", nullptr, &ThrottleRequest::client_disk_read_bps},
    {"client-disk-write", "client disk write limit", nullptr,
     &ThrottleRequest::client_disk_write_bps}};
}  // namespace

ThrottleRequest parse_throttle_args(const std::vector<std::string>& args) {
  po::options_description desc("chokepoint lab throttle options");
  for (const Limit& l : kLimits) desc.add_options()(l.option, po::value<std::string>(), l.help);
  desc.add_options()("clear", "remove every throttle");
  add_instance_option(desc);
  const po::variables_map vm = parse("throttle", desc, args);
  ThrottleRequest r;
  if (vm.count("instance")) r.instance = instance_of(vm);
  r.clear = vm.count("clear") > 0;
  for (const Limit& l : kLimits) {
    if (!vm.count(l.option)) continue;
    const std::string text = vm[l.option].as<std::string>();
    const std::string what = fmt::format("--{}", l.option);
    if (l.cpu) {
      r.*l.cpu = parse_cpu_share(text, what);
    } else {
      r.*l.disk = parse_bytes_rate(text, what);
    }
  }
  return r;
}

int run_lab_command(const std::vector<std::string>& args) {
  return run_lab_command(args, std::cout, std::cerr);
}

int run_lab_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.empty()) {
      throw Error(ErrorKind::kUsage, "lab: say what to do: up, status, throttle or down", kSeeHelp);
    }
    const std::string& sub = args.front();
    if (wants_help(args)) {
      out << lab_usage(sub);
      return 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (const LabSubcommand* c = find_subcommand(sub)) return c->run(rest, out);
    std::string names;
    for (const LabSubcommand& c : lab_subcommands())
      names += std::string(names.empty() ? "" : ", ") + c.name;
    throw Error(ErrorKind::kUsage, fmt::format("lab: unknown subcommand '{}'", sub),
                "use one of " + names);
  } catch (const Error& e) {
    err << "chokepoint lab: " << describe(e) << "\n";
    return e.kind() == ErrorKind::kUsage ? 2 : 1;
  }
}

}  // namespace cp::lab
