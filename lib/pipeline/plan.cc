#include "pipeline/plan.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <cctype>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "core/error.h"
#include "core/ini.h"
#include "core/text.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/share_url.h"

namespace cp::pipeline {
namespace {

// A comma-separated list's items, untrimmed; a trailing comma adds none.
std::vector<std::string_view> items(std::string_view v) {
  std::vector<std::string_view> out = split(v, ',');
  if (out.back().empty()) out.pop_back();
  return out;
}

bool parse_bool(const std::string& v, const std::string& where) {
  if (const std::optional<bool> b = parse_yes_no(v)) return *b;
  throw Error(ErrorKind::kConfig, fmt::format("{}: '{}' is not yes or no", where, v));
}

int parse_count(const std::string& v, const std::string& where, int lo, int hi) {
  const std::optional<int> n = parse_int(v);
  if (!n || *n < lo || *n > hi) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: '{}' is not a whole number from {} to {}", where, v, lo, hi));
  }
  return *n;
}

uint32_t parse_block(const std::string& v, const std::string& where) {
  uint64_t b = parse_size(v, where);
  if (b < 4096 || b > (16u << 20) || b % 4096) {
    throw Error(
        ErrorKind::kConfig,
        fmt::format("{}: {} is not a multiple of 4 KiB between 4 KiB and 16 MiB", where, v));
  }
  return static_cast<uint32_t>(b);
}

// An absolute path without "." or ".." components: what it names is what
// the agent works in (a /tmp/../../etc is refused rather than resolved, since
// the directory it lands in on the remote host cannot be checked here).
std::string dir_value(const std::string& v, const std::string& where) {
  if (v.empty() || v[0] != '/') {
    throw Error(ErrorKind::kConfig, fmt::format("{}: '{}' is not an absolute path", where, v),
                "write the whole path from /, like /dev/shm");
  }
  for (std::string_view part : split(v, '/')) {
    if (part == "." || part == "..") {
      throw Error(ErrorKind::kConfig, fmt::format("{}: '{}' has a '{}' component", where, v, part),
                  "write the directory itself, without . or .. (like /srv/share)");
    }
  }
  return v;
}

std::vector<uint64_t> parse_sizes(const std::string& v, const std::string& where) {
  std::vector<uint64_t> sizes;
  const std::vector<std::string_view> list = items(v);
  if (list.size() > static_cast<size_t>(kMaxSizes)) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: {} sizes, more than the {} a list may hold", where, list.size(),
                            kMaxSizes),
                fmt::format("list at most {} sizes (a few, spread by factors of 10, show the "
                            "trend: 1MB, 10MB, 100MB)",
                            kMaxSizes));
  }
  for (std::string_view item : list) {
    uint64_t s = parse_size(trim(item), where);
    if (s == 0) throw Error(ErrorKind::kConfig, fmt::format("{}: a size of 0", where));
    sizes.push_back(s);
  }
  if (sizes.empty()) {
    throw Error(ErrorKind::kConfig, fmt::format("{}: no sizes given", where),
                "list sizes like: sizes = 10MB, 100MB (or enabled = no)");
  }
  return sizes;
}

}  // namespace

std::string streams_value(int streams) {
  return streams == kAutoTcpStreams ? "auto" : std::to_string(streams);
}

namespace {

using Setter = std::function<void(Plan&, const std::string& value, const std::string& where)>;
using Section = std::map<std::string, Setter>;

// [server] and [client]: the directories each end works in.
Section server_keys() {
  return {{"ram_dir", [](Plan& p, auto& v, auto& w) { p.server.ram_dir = dir_value(v, w); }},
          {"disk_dir",
           [](Plan& p, auto& v, auto& w) {
             p.server.disk_dir = dir_value(v, w);
             p.server.disk_dir_set = true;
           }},
          {"samba_conf", [](Plan& p, auto& v, auto& w) { p.server.samba_conf = dir_value(v, w); }}};
}

Section client_keys() {
  return {{"ram_dir", [](Plan& p, auto& v, auto& w) { p.client.ram_dir = dir_value(v, w); }},
          {"disk_dir", [](Plan& p, auto& v, auto& w) {
             p.client.disk_dir = dir_value(v, w);
             p.client.disk_dir_set = true;
           }}};
}

Section disk_keys() {
  return {{"enabled", [](Plan& p, auto& v, auto& w) { p.disk_enabled = parse_bool(v, w); }},
          {"sizes", [](Plan& p, auto& v, auto& w) { p.disk_sizes = parse_sizes(v, w); }},
          {"count", [](Plan& p, auto& v, auto& w) { p.disk_count = parse_count(v, w, 1, 1000); }},
          {"block", [](Plan& p, auto& v, auto& w) { p.disk_block = parse_block(v, w); }},
          {"settle", [](Plan& p, auto& v, auto& w) {
             p.disk_settle = parse_duration(v, w);
             if (p.disk_settle > 600) {
               throw Error(ErrorKind::kConfig, fmt::format("{}: {} is over 10 minutes", w, v));
             }
           }}};
}

Section files_keys() {
  return {
      {"enabled", [](Plan& p, auto& v, auto& w) { p.files_enabled = parse_bool(v, w); }},
      {"shares", [](Plan& p, auto& v, auto& w) { p.files_shares = parse_bool(v, w); }},
      {"count", [](Plan& p, auto& v, auto& w) { p.files_count = parse_count(v, w, 10, 1000000); }},
      {"size",
       [](Plan& p, auto& v, auto& w) {
         p.files_size = parse_size(v, w);
         if (p.files_size > (1u << 20)) {
           throw Error(ErrorKind::kConfig, fmt::format("{}: {} is over 1 MiB", w, v),
                       "the small-file stage is for small files: [disk] sizes measures big ones");
         }
       }},
      {"dirs", [](Plan& p, auto& v, auto& w) { p.files_dirs = parse_count(v, w, 1, 10000); }},
      {"order",
       [](Plan& p, auto& v, auto& w) {
         if (v != "sequential" && v != "random" && v != "both") {
           throw Error(ErrorKind::kConfig,
                       fmt::format("{}: '{}' is not sequential, random or both", w, v));
         }
         p.files_order = v;
       }},
      {"budget", [](Plan& p, auto& v, auto& w) { p.files_budget = parse_duration(v, w); }},
      {"in_flight", [](Plan& p, auto& v, auto& w) {
         p.files_in_flight = v == "auto" ? 0 : parse_count(v, w, 1, 64);
       }}};
}

Section tcp_keys() {
  return {{"enabled", [](Plan& p, auto& v, auto& w) { p.tcp_enabled = parse_bool(v, w); }},
          {"seconds",
           [](Plan& p, auto& v, auto& w) {
             p.tcp_seconds = parse_duration(v, w);
             if (p.tcp_seconds < 0.1 || p.tcp_seconds > 3600) {
               throw Error(ErrorKind::kConfig, fmt::format("{}: {} is outside 0.1 s .. 1 h", w, v));
             }
           }},
          {"count", [](Plan& p, auto& v, auto& w) { p.tcp_count = parse_count(v, w, 1, 1000); }},
          {"buffer",
           [](Plan& p, auto& v, auto& w) {
             uint64_t b = parse_size(v, w);
             if (b < 1024 || b > (16u << 20)) {
               throw Error(ErrorKind::kConfig,
                           fmt::format("{}: {} is outside 1 KiB .. 16 MiB", w, v));
             }
             p.tcp_buffer = static_cast<uint32_t>(b);
           }},
          {"streams",
           [](Plan& p, auto& v, auto& w) {
             p.tcp_streams = v == "auto" ? kAutoTcpStreams : parse_count(v, w, 1, kMaxTcpStreams);
           }},
          {"data_address", [](Plan& p, auto& v, auto&) { p.data_address = v; }}};
}

Section timeout_keys() {
  return {{"silence",
           [](Plan& p, auto& v, auto& w) {
             p.silence_timeout = parse_duration(v, w);
             if (p.silence_timeout < 2 || p.silence_timeout > 3600) {
               throw Error(ErrorKind::kConfig, fmt::format("{}: {} is outside 2 s .. 1 h", w, v),
                           "agents send a heartbeat every second: a few seconds is enough on a "
                           "sound host");
             }
           }},
          {"stall", [](Plan& p, auto& v, auto& w) {
             p.stall_after = parse_duration(v, w);
             if (p.stall_after < 2 || p.stall_after > 3600) {
               throw Error(ErrorKind::kConfig, fmt::format("{}: {} is outside 2 s .. 1 h", w, v));
             }
           }}};
}

Section protocol_keys() {
  return {{"enabled", [](Plan& p, auto& v, auto& w) { p.proto_enabled = parse_bool(v, w); }},
          {"sizes",
           [](Plan& p, auto& v, auto& w) {
             p.proto_sizes = parse_sizes(v, w);
             p.proto_sizes_set = true;
           }},
          {"count",
           [](Plan& p, auto& v, auto& w) {
             p.proto_count = parse_count(v, w, 1, 1000);
             p.proto_count_set = true;
           }},
          {"budget",
           [](Plan& p, auto& v, auto& w) {
             p.proto_budget = parse_duration(v, w);
             p.proto_budget_set = true;
           }},
          {"block", [](Plan& p, auto& v, auto& w) { p.proto_block = parse_block(v, w); }},
          {"size_scan", [](Plan& p, auto& v, auto& w) { p.size_scan = parse_bool(v, w); }},
          {"scan_sizes",
           [](Plan& p, auto& v, auto& w) {
             p.scan_sizes = parse_sizes(v, w);
             for (auto s : p.scan_sizes) {
               if (s > (16u << 20)) {
                 throw Error(ErrorKind::kConfig, fmt::format("{}: {} is over 16 MiB", w, s));
               }
             }
           }},
          {"scan_bytes", [](Plan& p, auto& v, auto& w) { p.scan_bytes = parse_size(v, w); }},
          {"scan_file", [](Plan& p, auto& v, auto& w) { p.scan_file = parse_size(v, w); }}};
}

// [share NAME]: the setters act on the share being declared.
Section share_keys() {
  return {{"url",
           [](Plan& p, auto& v, auto& w) {
             p.shares.back().driver = driver_for_url(v, w);
             p.shares.back().url = v;
           }},
          {"server_dir",
           [](Plan& p, auto& v, auto& w) { p.shares.back().server_dir = dir_value(v, w); }},
          {"medium",
           [](Plan& p, auto& v, auto& w) {
             if (v != "ram" && v != "disk") {
               throw Error(
                   ErrorKind::kConfig, fmt::format("{}: '{}' is not ram or disk", w, v),
                   "medium = ram for a tmpfs share (stage 3), disk for one on disk (stage 4)");
             }
             p.shares.back().medium = v;
           }},
          {"user", [](Plan& p, auto& v, auto&) { p.shares.back().user = v; }},
          {"password_env", [](Plan& p, auto& v, auto&) { p.shares.back().password_env = v; }},
          {"password_file",
           [](Plan& p, auto& v, auto& w) { p.shares.back().password_file = dir_value(v, w); }},
          {"password_prompt",
           [](Plan& p, auto& v, auto& w) { p.shares.back().password_prompt = parse_bool(v, w); }},
          {"password",
           [](Plan&, auto&, auto& w) {
             throw Error(ErrorKind::kConfig, fmt::format("{}: passwords do not go in the plan", w),
                         "use password_env = VAR, password_file = /path/to/0600-file, or "
                         "password_prompt = yes");
           }},
          {"options", [](Plan& p, auto& v, auto& w) {
             for (std::string_view raw : items(v)) {
               const std::string_view item = trim(raw);
               const size_t eq = item.find('=');
               if (eq == std::string_view::npos || eq == 0) {
                 throw Error(ErrorKind::kConfig, fmt::format("{}: '{}' is not key=value", w, item),
                             "write options = depth=8, request_size=1MiB");
               }
               p.shares.back().options[std::string(trim(item.substr(0, eq)))] =
                   std::string(trim(item.substr(eq + 1)));
             }
           }}};
}

// Keys still read under an older name: the transfer-size scan was once called
// the "sweep" (a word tune keeps for itself), and plans written then still
// load. Not listed by plan_keys(); docs/plan.md names them.
const std::map<std::string, std::string>& protocol_key_aliases() {
  static const std::map<std::string, std::string> k = {{"sweep", "size_scan"},
                                                       {"sweep_sizes", "scan_sizes"},
                                                       {"sweep_bytes", "scan_bytes"},
                                                       {"sweep_file", "scan_file"}};
  return k;
}

// Every section's keys ("share" for every [share NAME]).
const std::map<std::string, Section>& keys() {
  static const std::map<std::string, Section> k = {
      {"server", server_keys()},
      {"client", client_keys()},
      {"disk", disk_keys()},
      {"files", files_keys()},
      {"tcp", tcp_keys()},
      {"timeouts", timeout_keys()},
      {"link",
       {{"nominal", [](Plan& p, auto& v, auto& w) { p.link_bits = parse_rate_bits(v, w); }}}},
      {"protocol", protocol_keys()},
      {"share", share_keys()},
  };
  return k;
}

void check_driver(const SharePlan& s) { check_share_driver(s, transfer::driver_spec(s.driver)); }

}  // namespace

void check_share_driver(const SharePlan& s, const transfer::DriverSpec& spec) {
  const std::string at = fmt::format("{}: share '{}'", s.declared_at, s.name);
  try {
    transfer::check_options(spec, s.options);
  } catch (const Error& e) {
    throw Error(ErrorKind::kConfig, fmt::format("{}: {}", at, e.what()), e.hint());
  }
  if (!spec.caps.read || !spec.caps.write) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: the {} driver cannot {}", at, spec.name,
                            spec.caps.read ? "write" : "read"),
                "the protocol stages read and write files through each share; measure this "
                "protocol another way (a mounted path)");
  }
}

namespace {

std::string known_list(const std::map<std::string, Setter>& m) {
  std::string s;
  for (const auto& [k, _] : m) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

Plan parse_plan(const std::string& text, const std::string& name, Plan base) {
  Plan plan = std::move(base);
  plan.source = name;
  std::string section;  // as written, "share NAME" for a share
  std::set<std::string> seen;
  for (const IniLine& l : read_ini(text, {.comment_chars = "#", .inline_comments = true})) {
    const std::string at = fmt::format("{}:{}", name, l.line);
    if (l.text.front() == '[') {
      if (l.kind != IniLine::Kind::kSection || l.text.back() != ']') {
        throw Error(ErrorKind::kConfig,
                    fmt::format("{}: section header '{}' lacks ']'", at, l.text));
      }
      section = std::string(trim(std::string_view(l.text).substr(1, l.text.size() - 2)));
      if (section.starts_with("share") && section.size() > 5 &&
          std::isspace(static_cast<unsigned char>(section[5]))) {
        const std::string share(trim(std::string_view(section).substr(5)));
        if (share.empty() ||
            share.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789._-") != std::string::npos) {
          throw Error(ErrorKind::kConfig,
                      fmt::format("{}: share name '{}' is not a plain name", at, share),
                      "use letters, digits, '.', '_' and '-': [share smb-ram]");
        }
        for (const auto& s : plan.shares) {
          if (s.name == share) {
            throw Error(ErrorKind::kConfig,
                        fmt::format("{}: share '{}' is declared twice (first at {})", at, share,
                                    s.declared_at));
          }
        }
        plan.shares.push_back({});
        plan.shares.back().name = share;
        plan.shares.back().declared_at = at;
        section = "share " + share;
        continue;
      }
      if (section == "share") {
        throw Error(ErrorKind::kConfig, fmt::format("{}: [share] needs a name", at),
                    "write [share smb-ram]");
      }
      if (!keys().count(section)) {
        std::string known;
        for (const auto& [s, _] : keys()) known += (known.empty() ? "" : ", ") + s;
        throw Error(ErrorKind::kConfig, fmt::format("{}: unknown section [{}]", at, section),
                    "sections are: " + known);
      }
      continue;
    }
    if (l.kind != IniLine::Kind::kEntry) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: expected 'key = value', got '{}'", at, l.text));
    }
    std::string key = l.key;
    if (section.empty()) {
      throw Error(ErrorKind::kConfig, fmt::format("{}: key '{}' before any [section]", at, key),
                  "put it under its section, e.g. [disk]");
    }
    const std::string kind = section.starts_with("share ") ? "share" : section;
    if (kind == "protocol" && protocol_key_aliases().count(key)) {
      key = protocol_key_aliases().at(key);
    }
    const auto& sec = keys().at(kind);
    auto it = sec.find(key);
    if (it == sec.end()) {
      throw Error(ErrorKind::kConfig, fmt::format("{}: unknown key '{}' in [{}]", at, key, section),
                  fmt::format("[{}] takes: {}", section, known_list(sec)));
    }
    if (!seen.insert(section + "." + key).second) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: '{}' is set twice in [{}]", at, key, section));
    }
    // Every error a key's value causes names that key (Error::key).
    try {
      it->second(plan, l.value, fmt::format("{}: {}.{}", at, section, key));
    } catch (const Error& e) {
      if (!e.key().empty()) throw;
      throw Error(e.kind(), e.what(), e.hint(), section + "." + key);
    }
  }
  for (const SharePlan& s : plan.shares) {
    if (!s.driver.empty()) check_driver(s);
  }
  return plan;
}

std::map<std::string, std::vector<std::string>> plan_keys() {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [section, setters] : keys()) {
    for (const auto& [key, _] : setters) {
      if (key != "password") out[section].push_back(key);
    }
  }
  return out;
}

std::string driver_for_url(const std::string& url, const std::string& where) {
  try {
    std::string driver(transfer::driver_for_url(url).name);
    transfer::check_share_url(url);  // its syntax, and no password in it
    return driver;
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("{}: {}", where, e.what()), e.hint());
  }
}

void add_share_flag(Plan& plan, const std::string& flag) {
  auto eq = flag.find('=');
  if (eq == std::string::npos) {
    throw Error(ErrorKind::kUsage, fmt::format("--share '{}' has no URL", flag),
                "write --share NAME=URL,server_dir=/srv/share,medium=ram");
  }
  std::string text = "[share " + flag.substr(0, eq) + "]\n";
  std::string rest = flag.substr(eq + 1);
  // The URL runs to the first comma that starts a key=value.
  size_t comma = rest.find(',');
  text += "url = " + rest.substr(0, comma) + "\n";
  while (comma != std::string::npos) {
    size_t next = rest.find(',', comma + 1);
    std::string item = rest.substr(comma + 1, next == std::string::npos ? next : next - comma - 1);
    if (item.rfind("options=", 0) == 0) {  // options keep their own commas: the rest
      text += "options = " + rest.substr(comma + 1 + 8) + "\n";
      break;
    }
    text += item + "\n";
    comma = next;
  }
  Plan parsed = parse_plan(text, "--share " + flag.substr(0, eq), {});
  for (const auto& s : plan.shares) {
    if (s.name == parsed.shares.back().name) {
      throw Error(ErrorKind::kUsage, fmt::format("share '{}' is declared twice", s.name));
    }
  }
  plan.shares.push_back(parsed.shares.back());
}

std::vector<uint64_t> budgeted_proto_sizes(const Plan& plan, double tcp_rate,
                                           std::vector<uint64_t>* dropped) {
  if (plan.proto_budget <= 0 || (plan.proto_sizes_set && !plan.proto_budget_set) || tcp_rate <= 0 ||
      plan.proto_sizes.empty()) {
    return plan.proto_sizes;
  }
  const uint64_t smallest = *std::min_element(plan.proto_sizes.begin(), plan.proto_sizes.end());
  std::vector<uint64_t> kept;
  for (uint64_t size : plan.proto_sizes) {
    if (size == smallest || double(size) / tcp_rate * kMinProtoSamples <= plan.proto_budget) {
      kept.push_back(size);
    } else if (dropped) {
      dropped->push_back(size);
    }
  }
  return kept;
}

bool proto_series_done(const Plan& plan, int done, double elapsed) {
  if (plan.proto_budget <= 0 || (plan.proto_count_set && !plan.proto_budget_set)) return false;
  return done >= kMinProtoSamples && elapsed >= plan.proto_budget;
}

std::string settle_server_disk_dir(Plan& plan) {
  if (plan.server.disk_dir_set) return {};
  for (const SharePlan& s : plan.shares) {
    if (s.medium != "disk" || s.server_dir.empty()) continue;
    plan.server.disk_dir = s.server_dir;
    plan.server.disk_dir_set = true;
    return fmt::format(
        "the server's disk stage measures {} (share '{}'), the disk behind the "
        "disk share; set [server] disk_dir to measure another",
        s.server_dir, s.name);
  }
  return {};
}

namespace {

// The share URLs the drivers take, for a hint: "ftp://... or smb://... or ...".
std::string url_forms() {
  std::vector<std::string> forms;
  for (const transfer::DriverSpec* d : transfer::driver_specs()) {
    if (!d->url_prefixes.empty()) forms.push_back(std::string(d->url_prefixes.front()) + "...");
  }
  return join(forms, " or ");
}

// A plan may ask for at most kMaxPlanSamples samples (plan_outline's count);
// past it, the error names the key behind the most of them.
void check_sample_count(const Plan& plan) {
  std::map<std::string, int64_t> by_key;
  int64_t total = 0;
  for (const StageOutline& o : plan_outline(plan)) {
    const std::string key = o.stage.starts_with("disk ")        ? "disk.count"
                            : o.stage.starts_with("tcp ")       ? "tcp.count"
                            : o.stage.starts_with("size-scan ") ? "protocol.scan_sizes"
                            : o.stage.starts_with("files ")     ? "files.order"
                                                                : "protocol.count";
    by_key[key] += o.samples;
    total += o.samples;
  }
  if (total <= kMaxPlanSamples) return;
  const auto most = std::max_element(by_key.begin(), by_key.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
  throw Error(ErrorKind::kConfig,
              fmt::format("the plan asks for {} samples, more than the {} a run may take ({} of "
                          "them from {})",
                          total, kMaxPlanSamples, most->second, most->first),
              fmt::format("lower {} or the sizes beside it (each size takes count samples per "
                          "operation and end)",
                          most->first),
              most->first);
}

}  // namespace

void validate(const Plan& plan) {
  check_sample_count(plan);
  if (plan.files_enabled && plan.files_dirs > plan.files_count) {
    throw Error(
        ErrorKind::kConfig,
        fmt::format("[files] dirs ({}) is more than count ({})", plan.files_dirs, plan.files_count),
        "lower dirs or raise count: each directory holds count / dirs files");
  }
  for (auto s : plan.scan_sizes) {
    if (plan.size_scan && s > plan.scan_file) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("[protocol] scan_sizes has {} bytes, more than scan_file ({})", s,
                              plan.scan_file),
                  "raise scan_file or lower the sizes");
    }
  }
  for (size_t i = 0; i < plan.shares.size(); ++i) {
    const SharePlan& s = plan.shares[i];
    const std::string at = fmt::format("share '{}' ({})", s.name, s.declared_at);
    if (s.url.empty()) {
      throw Error(ErrorKind::kConfig, at + " has no url",
                  "add url = " + url_forms() + " (`chokepoint drivers` lists them)");
    }
    // A driver whose shares have no server side (null) needs no server_dir.
    if (s.server_dir.empty() && !s.driver.empty() && transfer::driver_spec(s.driver).server_files) {
      throw Error(ErrorKind::kConfig, at + " has no server_dir",
                  "add server_dir = the directory on the server behind the share, so the server "
                  "agent can lay out and remove its files");
    }
    if (s.medium.empty()) {
      throw Error(ErrorKind::kConfig, at + " has no medium", "add medium = ram or medium = disk");
    }
    // Driver options are checked now, not when the stage runs.
    if (!s.driver.empty()) check_driver(s);
    int sources = !s.password_env.empty() + !s.password_file.empty() + s.password_prompt;
    if (sources > 1) {
      throw Error(ErrorKind::kConfig, at + " names more than one password source",
                  "keep one of password_env, password_file, password_prompt");
    }
    for (size_t j = 0; j < i; ++j) {
      const SharePlan& o = plan.shares[j];
      if (o.driver == s.driver && o.medium == s.medium) {
        throw Error(ErrorKind::kConfig,
                    fmt::format("shares '{}' and '{}' are both {} over {}", o.name, s.name,
                                s.driver, s.medium),
                    "measure one share per protocol and medium in a run");
      }
    }
  }
}

Plan load_plan(const std::string& path, Plan base) {
  const std::optional<std::string> text = read_file(path);
  if (!text) {
    throw Error(ErrorKind::kConfig, fmt::format("cannot read plan file '{}'", path),
                "check the path; examples/plan.ini is an annotated example");
  }
  return parse_plan(*text, path, std::move(base));
}

std::string plan_to_json(const Plan& p) {
  namespace json = boost::json;
  json::array sizes;
  for (auto s : p.disk_sizes) sizes.push_back(s);
  json::array proto_sizes;
  for (auto s : p.proto_sizes) proto_sizes.push_back(s);
  json::array scan_sizes;
  for (auto s : p.scan_sizes) scan_sizes.push_back(s);
  json::array shares;
  for (const auto& s : p.shares) {
    json::object opts;
    for (const auto& [k, v] : s.options) opts[k] = v;
    // Where the password comes from, never the password.
    shares.push_back({{"name", s.name},
                      {"url", s.url},
                      {"driver", s.driver},
                      {"server_dir", s.server_dir},
                      {"medium", s.medium},
                      {"user", s.user},
                      {"password_env", s.password_env},
                      {"password_file", s.password_file},
                      {"password_prompt", s.password_prompt},
                      {"options", opts}});
  }
  json::object o{
      {"source", p.source},
      {"server",
       {{"ram_dir", p.server.ram_dir},
        {"disk_dir", p.server.disk_dir},
        {"samba_conf", p.server.samba_conf}}},
      {"client", {{"ram_dir", p.client.ram_dir}, {"disk_dir", p.client.disk_dir}}},
      {"disk",
       {{"enabled", p.disk_enabled},
        {"sizes", sizes},
        {"count", p.disk_count},
        {"block", p.disk_block},
        {"settle", p.disk_settle}}},
      {"files",
       {{"enabled", p.files_enabled},
        {"shares", p.files_shares},
        {"count", p.files_count},
        {"size", p.files_size},
        {"dirs", p.files_dirs},
        {"order", p.files_order},
        {"budget", p.files_budget},
        {"in_flight", p.files_in_flight ? std::to_string(p.files_in_flight) : "auto"}}},
      {"tcp",
       {{"enabled", p.tcp_enabled},
        {"seconds", p.tcp_seconds},
        {"count", p.tcp_count},
        {"buffer", p.tcp_buffer},
        {"streams", streams_value(p.tcp_streams)},
        {"data_address", p.data_address}}},
      {"link", {{"nominal_bits", p.link_bits}}},
      {"timeouts", {{"silence", p.silence_timeout}, {"stall", p.stall_after}}},
      {"protocol",
       {{"enabled", p.proto_enabled},
        {"sizes", proto_sizes},
        {"count", p.proto_count},
        {"budget", p.proto_budget},
        {"block", p.proto_block},
        {"size_scan", p.size_scan},
        {"scan_sizes", scan_sizes},
        {"scan_bytes", p.scan_bytes},
        {"scan_file", p.scan_file}}},
      {"shares", shares},
  };
  if (p.lab_throttle) {
    o["lab_throttle"] = {{"smbd_cpu", p.lab_throttle->smbd_cpu},
                         {"disk_read_bps", p.lab_throttle->disk_read_bps},
                         {"disk_write_bps", p.lab_throttle->disk_write_bps}};
  }
  return json::serialize(o);
}

}  // namespace cp::pipeline
