#include "tune_agent/knobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/text.h"
#include "core/units.h"

namespace cp::tune {
namespace {

// A share option of chokepoint's `driver` as a knob: the sweep sets it on
// the client's shares of that driver (no privilege needed).
Knob client_option(const std::string& driver, const std::string& option, ValueKind kind,
                   const char* summary) {
  return {"client." + driver + "_" + option,
          "client",
          Mechanism::kClientOption,
          option,
          kind,
          {{"protocol", "", driver, ""}},
          "none",
          summary};
}

// Disk knobs of one end: readahead and write cache matter where a protocol
// server reads or writes buffered (stage 4 on the server); the disk stage
// reads with O_DIRECT, which bypasses readahead, but the queue's scheduler
// and request size shape it.
void add_disk_knobs(std::vector<Knob>& t, const std::string& end) {
  const bool server = end == "server";
  std::vector<Affects> ra;
  if (server) {
    ra = {{"protocol", "disk", "", "read"}};
  } else {
    ra = {{"disk", "client", "", "read"}};
  }
  t.push_back({end + ".readahead", end, Mechanism::kReadahead, "", ValueKind::kBytes, ra, "root",
               "readahead of the disk under the " + end +
                   "'s disk_dir (blockdev --setra, as hdparm -a); bytes, e.g. 128K, 4M"});
  std::vector<Affects> queue = {{"disk", end, "", ""}};
  if (server) queue.push_back({"protocol", "disk", "", ""});
  t.push_back({end + ".scheduler", end, Mechanism::kQueueAttr, "scheduler", ValueKind::kText, queue,
               "root", "I/O scheduler of the disk under the " + end + "'s disk_dir"});
  t.push_back({end + ".max_sectors_kb", end, Mechanism::kQueueAttr, "max_sectors_kb",
               ValueKind::kKiB, queue, "root",
               "largest request the block layer sends that disk, KiB (max_sectors_kb)"});
  std::vector<Affects> wc = {{"disk", end, "", "write"}};
  if (server) wc.push_back({"protocol", "disk", "", "write"});
  t.push_back({end + ".write_cache", end, Mechanism::kWriteCache, "", ValueKind::kBool01, wc,
               "root",
               "the drive's write cache (hdparm -W 0|1); refused on loop and virtual disks"});
}

void add_tcp_knobs(std::vector<Knob>& t, const std::string& end) {
  const std::vector<Affects> all = {{"tcp", "", "", ""}, {"protocol", "", "", ""}};
  struct S {
    const char* short_name;
    const char* key;
    const char* what;
  };
  for (const S& s : {S{"tcp_rmem", "net.ipv4.tcp_rmem", "TCP receive buffer: 'min default max'"},
                     S{"tcp_wmem", "net.ipv4.tcp_wmem", "TCP send buffer: 'min default max'"},
                     S{"rmem_max", "net.core.rmem_max", "largest receive buffer a socket may set"},
                     S{"wmem_max", "net.core.wmem_max", "largest send buffer a socket may set"},
                     S{"tcp_congestion_control", "net.ipv4.tcp_congestion_control",
                       "TCP congestion control (cubic, bbr, ...)"}}) {
    t.push_back({end + "." + s.short_name, end, Mechanism::kSysctl, s.key, ValueKind::kText, all,
                 "root", std::string(s.what) + " on the " + end + " (sysctl " + s.key + ")"});
  }
}

std::vector<Knob> build_table() {
  std::vector<Knob> t;
  add_disk_knobs(t, "server");
  add_disk_knobs(t, "client");
  add_tcp_knobs(t, "server");
  add_tcp_knobs(t, "client");
  t.push_back({"link.mtu",
               "both",
               Mechanism::kMtu,
               "mtu",
               ValueKind::kInt,
               {{"tcp", "", "", ""}, {"protocol", "", "", ""}},
               "root",
               "MTU of the data interface, both ends together (the path between must carry it); "
               "refused on the interface SSH uses unless --i-have-console"});
  const std::vector<Affects> smb_read = {{"protocol", "", "smb", "read"}};
  const std::vector<Affects> smb_write = {{"protocol", "", "smb", "write"}};
  const std::vector<Affects> smb_all = {{"protocol", "", "smb", ""}};
  struct S {
    const char* knob;
    const char* param;
    ValueKind kind;
    const std::vector<Affects>* affects;
    const char* what;
  };
  for (const S& s : {
           S{"samba.smb2_max_read", "smb2 max read", ValueKind::kBytes, &smb_read,
             "largest SMB2/3 read the server grants, bytes"},
           S{"samba.smb2_max_write", "smb2 max write", ValueKind::kBytes, &smb_write,
             "largest SMB2/3 write the server grants, bytes"},
           S{"samba.aio_read_size", "aio read size", ValueKind::kBytes, &smb_read,
             "reads at least this large go asynchronous (0: never)"},
           S{"samba.aio_write_size", "aio write size", ValueKind::kBytes, &smb_write,
             "writes at least this large go asynchronous (0: never)"},
           S{"samba.use_sendfile", "use sendfile", ValueKind::kYesNo, &smb_read,
             "serve unsigned reads with sendfile(2)"},
           S{"samba.socket_options", "socket options", ValueKind::kText, &smb_all,
             "setsockopt options on smbd's connections, e.g. 'TCP_NODELAY SO_RCVBUF=131072'"},
           S{"samba.server_multi_channel_support", "server multi channel support",
             ValueKind::kYesNo, &smb_all, "SMB3 multichannel"},
       }) {
    t.push_back({s.knob, "server", Mechanism::kSamba, s.param, s.kind, *s.affects, "root",
                 std::string(s.what) + " (smb.conf '" + s.param + "')"});
  }
  // SMB1 (the protocol of the seeds' era): `max xmit` is the largest SMB1
  // message smbd accepts and announces (MaxBufferSize); SMB2/3 ignore it, so
  // the server speaks NT1 only for the whole sweep and the client offers NT1.
  Knob xmit{"samba.max_xmit",
            "server",
            Mechanism::kSamba,
            "max xmit",
            ValueKind::kBytes,
            smb_all,
            "root",
            "largest SMB1 message smbd accepts, bytes (smb.conf 'max xmit'); the sweep runs "
            "under 'server min/max protocol = NT1' and the client offers NT1 only"};
  xmit.with = {{"server min protocol", "NT1"}, {"server max protocol", "NT1"}};
  xmit.client_options = {{"min_protocol", "NT1"}, {"max_protocol", "NT1"}};
  t.push_back(xmit);
  t.push_back(client_option("smb", "io_size", ValueKind::kBytes,
                            "chokepoint's SMB request size: bytes per smbc_read/smbc_write call"));
  const std::vector<Affects> afp_all = {{"protocol", "", "afp", ""}};
  t.push_back(client_option("afp", "depth", ValueKind::kText,
                            "chokepoint's AFP requests in flight per file"));
  t.push_back(client_option("afp", "request_size", ValueKind::kBytes,
                            "chokepoint's AFP bytes per read/write request"));
  // netatalk 3 (no Debian 12 package): afp.conf edited in place, then the
  // restart command (afpd reads these at start only).
  t.push_back({"netatalk.server_quantum", "server", Mechanism::kAfpConf, "server quantum",
               ValueKind::kBytes, afp_all, "root",
               "largest DSI request afpd accepts and announces, bytes (afp.conf 'server "
               "quantum')"});
  t.push_back({"netatalk.dsireadbuf", "server", Mechanism::kAfpConf, "dsireadbuf", ValueKind::kInt,
               afp_all, "root",
               "afpd's DSI read buffer, in multiples of the server quantum (afp.conf "
               "'dsireadbuf')"});
  t.push_back(client_option("nfs", "depth", ValueKind::kText,
                            "chokepoint's NFS READs/WRITEs in flight on the connection"));
  t.push_back(
      client_option("nfs", "request_size", ValueKind::kBytes,
                    "chokepoint's NFS bytes per READ/WRITE (rsize/wsize, within the server's)"));
  t.push_back(client_option("nfs", "version", ValueKind::kText,
                            "the NFS version chokepoint speaks: 3 or 4"));
  return t;
}

}  // namespace

const std::vector<Knob>& knob_table() {
  static const std::vector<Knob> table = build_table();
  return table;
}

const Knob& find_knob(const std::string& name) {
  for (const auto& k : knob_table()) {
    if (k.name == name) return k;
  }
  std::string names;
  for (const auto& k : knob_table()) names += (names.empty() ? "" : ", ") + k.name;
  throw Error(ErrorKind::kUsage, fmt::format("unknown knob '{}'", name),
              fmt::format("`chokepoint tune --list` describes them: {}", names));
}

std::string normalize_value(const Knob& knob, const std::string& raw) {
  const std::string v(trim(raw));
  if (v.empty()) {
    throw Error(ErrorKind::kUsage, fmt::format("knob {}: an empty value", knob.name),
                "give values separated by commas, e.g. --knob server.readahead=128K,1M");
  }
  const std::string what = "knob " + knob.name + " value";
  switch (knob.kind) {
    case ValueKind::kBytes:
      try {
        return std::to_string(parse_size(v, what));
      } catch (const Error& e) {
        throw Error(ErrorKind::kUsage, e.what(), "write a size: 65536, 64K, 1M, 8MiB");
      }
    case ValueKind::kKiB: {
      uint64_t b = 0;
      try {
        b = parse_size(v, what);
      } catch (const Error& e) {
        throw Error(ErrorKind::kUsage, e.what(), "write a size: 512K, 1M");
      }
      // A bare number is KiB, as the sysfs file reads.
      if (std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(c); })) return v;
      if (b % 1024 != 0) {
        throw Error(ErrorKind::kUsage, fmt::format("{} '{}' is not a whole number of KiB", what, v),
                    "write 512K or 1M");
      }
      return std::to_string(b / 1024);
    }
    case ValueKind::kBool01:
    case ValueKind::kYesNo: {
      const std::string l = lower(v);
      bool on;
      if (l == "1" || l == "on" || l == "yes" || l == "true") {
        on = true;
      } else if (l == "0" || l == "off" || l == "no" || l == "false") {
        on = false;
      } else {
        throw Error(ErrorKind::kUsage, fmt::format("{} '{}' is not a boolean", what, v),
                    "write 0 or 1 (yes/no, on/off)");
      }
      if (knob.kind == ValueKind::kBool01) return on ? "1" : "0";
      return on ? "yes" : "no";
    }
    case ValueKind::kInt:
      if (v.size() > 9 ||
          !std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(c); })) {
        throw Error(ErrorKind::kUsage, fmt::format("{} '{}' is not a whole number", what, v),
                    "write e.g. 1500 or 9000");
      }
      return std::to_string(std::stoul(v));
    case ValueKind::kText:
      if (v.find('\n') != std::string::npos) {
        throw Error(ErrorKind::kUsage, fmt::format("{} contains a newline", what));
      }
      return v;
  }
  return v;
}

KnobRequest parse_knob_arg(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
    throw Error(ErrorKind::kUsage, fmt::format("--knob '{}' is not NAME=VALUE[,VALUE...]", arg),
                "e.g. --knob server.readahead=128K,1M,4M (`tune --list` names the knobs)");
  }
  KnobRequest r;
  r.knob = &find_knob(std::string(trim(arg.substr(0, eq))));
  std::string rest = arg.substr(eq + 1);
  size_t start = 0;
  for (;;) {
    const size_t comma = rest.find(',', start);
    std::string one = normalize_value(*r.knob, rest.substr(start, comma - start));
    if (std::find(r.values.begin(), r.values.end(), one) == r.values.end()) r.values.push_back(one);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return r;
}

std::string describe_mechanism(const Knob& k) {
  switch (k.mechanism) {
    case Mechanism::kReadahead:
      return "read: blockdev --getra DISK; apply: blockdev --setra SECTORS DISK; "
             "DISK: the disk under disk_dir";
    case Mechanism::kQueueAttr:
      return fmt::format("read/apply: /sys/block/DISK/queue/{}; DISK: the disk under disk_dir",
                         k.param);
    case Mechanism::kWriteCache:
      return "read: hdparm -W DISK; apply: hdparm -W 0|1 DISK";
    case Mechanism::kSysctl:
      return fmt::format("read/apply: sysctl {}", k.param);
    case Mechanism::kSamba: {
      std::string with;
      for (const auto& [p, v] : k.with) with += fmt::format(", with '{} = {}'", p, v);
      return fmt::format(
          "read: testparm -s --parameter-name='{}'; apply: the drop-in "
          "chokepoint-tune.conf{}, included at the end of [global]; reload: smbcontrol smbd "
          "reload-config",
          k.param, with);
    }
    case Mechanism::kClientOption:
      return fmt::format("the client share option {}=VALUE; no host changes", k.param);
    case Mechanism::kMtu:
      return "read: ip -o link show dev IF; apply: ip link set dev IF mtu N on the server, then "
             "the client; IF: the interface of the data address";
    case Mechanism::kAfpConf:
      return fmt::format(
          "read/apply: '{}' in [Global] of afp.conf (--afp-conf, else /etc/netatalk/afp.conf or "
          "/usr/local/etc/afp.conf); restart: --afp-restart, else systemctl restart netatalk",
          k.param);
  }
  return {};
}

std::string describe_affects(const Knob& k) {
  std::string out;
  for (const auto& a : k.affects) {
    std::string s;
    if (a.layer == "disk") {
      s = "disk " + a.where;
    } else if (a.layer == "tcp") {
      s = "tcp";
    } else {
      s = (a.driver.empty() ? std::string("every protocol") : a.driver) +
          (a.where.empty() ? "" : " from " + a.where);
    }
    if (!a.op.empty()) s += " " + a.op;
    out += (out.empty() ? "" : "; ") + s;
  }
  return out;
}

bool affects_sample(const Knob& knob, const std::string& layer, const std::string& where,
                    const std::string& op) {
  for (const auto& a : knob.affects) {
    if (!a.op.empty() && a.op != op) continue;
    if (a.layer == "disk" || a.layer == "tcp") {
      if (layer != a.layer) continue;
      if (!a.where.empty() && a.where != where) continue;
      return true;
    }
    // Protocol stages carry the driver as their layer and the medium as where.
    if (layer == "disk" || layer == "tcp") continue;
    if (!a.driver.empty() && a.driver != layer) continue;
    if (!a.where.empty() && a.where != where) continue;
    return true;
  }
  return false;
}

}  // namespace cp::tune
