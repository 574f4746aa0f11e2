#include "pipeline/plan.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/units.h"

namespace cp::pipeline {
namespace {

std::string trim(std::string s) {
  const char* ws = " \t\r";
  s.erase(0, s.find_first_not_of(ws));
  auto end = s.find_last_not_of(ws);
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
}

bool parse_bool(const std::string& v, const std::string& where) {
  if (v == "yes" || v == "true" || v == "on" || v == "1") return true;
  if (v == "no" || v == "false" || v == "off" || v == "0") return false;
  throw Error(ErrorKind::kConfig, fmt::format("{}: '{}' is not yes or no", where, v));
}

int parse_count(const std::string& v, const std::string& where, int lo, int hi) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < lo || n > hi) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{}: '{}' is not a whole number from {} to {}", where, v, lo, hi));
  }
  return n;
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

std::string dir_value(const std::string& v, const std::string& where) {
  if (v.empty() || v[0] != '/') {
    throw Error(ErrorKind::kConfig, fmt::format("{}: '{}' is not an absolute path", where, v));
  }
  return v;
}

using Setter = std::function<void(Plan&, const std::string& value, const std::string& where)>;

const std::map<std::string, std::map<std::string, Setter>>& keys() {
  static const std::map<std::string, std::map<std::string, Setter>> k = {
      {"server",
       {{"ram_dir", [](Plan& p, auto& v, auto& w) { p.server.ram_dir = dir_value(v, w); }},
        {"disk_dir", [](Plan& p, auto& v, auto& w) { p.server.disk_dir = dir_value(v, w); }}}},
      {"client",
       {{"ram_dir", [](Plan& p, auto& v, auto& w) { p.client.ram_dir = dir_value(v, w); }},
        {"disk_dir", [](Plan& p, auto& v, auto& w) { p.client.disk_dir = dir_value(v, w); }}}},
      {"disk",
       {{"enabled", [](Plan& p, auto& v, auto& w) { p.disk_enabled = parse_bool(v, w); }},
        {"sizes",
         [](Plan& p, auto& v, auto& w) {
           p.disk_sizes.clear();
           std::istringstream in(v);
           std::string item;
           while (std::getline(in, item, ',')) {
             uint64_t s = parse_size(trim(item), w);
             if (s == 0) throw Error(ErrorKind::kConfig, fmt::format("{}: a size of 0", w));
             p.disk_sizes.push_back(s);
           }
           if (p.disk_sizes.empty()) {
             throw Error(ErrorKind::kConfig, fmt::format("{}: no sizes given", w),
                         "list sizes like: sizes = 10MB, 100MB (or enabled = no)");
           }
         }},
        {"count", [](Plan& p, auto& v, auto& w) { p.disk_count = parse_count(v, w, 1, 1000); }},
        {"block", [](Plan& p, auto& v, auto& w) { p.disk_block = parse_block(v, w); }}}},
      {"tcp",
       {{"enabled", [](Plan& p, auto& v, auto& w) { p.tcp_enabled = parse_bool(v, w); }},
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
        {"data_address", [](Plan& p, auto& v, auto&) { p.data_address = v; }}}},
      {"link",
       {{"nominal", [](Plan& p, auto& v, auto& w) { p.link_bits = parse_rate_bits(v, w); }}}},
  };
  return k;
}

std::string known_list(const std::map<std::string, Setter>& m) {
  std::string s;
  for (const auto& [k, _] : m) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

Plan parse_plan(const std::string& text, const std::string& name, Plan base) {
  Plan plan = std::move(base);
  plan.source = name;
  std::istringstream in(text);
  std::string raw, section;
  int lineno = 0;
  std::set<std::string> seen;
  while (std::getline(in, raw)) {
    ++lineno;
    const std::string at = fmt::format("{}:{}", name, lineno);
    std::string line = raw;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        throw Error(ErrorKind::kConfig, fmt::format("{}: section header '{}' lacks ']'", at, line));
      }
      section = trim(line.substr(1, line.size() - 2));
      if (!keys().count(section)) {
        std::string known;
        for (const auto& [s, _] : keys()) known += (known.empty() ? "" : ", ") + s;
        throw Error(ErrorKind::kConfig, fmt::format("{}: unknown section [{}]", at, section),
                    "sections are: " + known);
      }
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: expected 'key = value', got '{}'", at, line));
    }
    const std::string key = trim(line.substr(0, eq));
    const std::string value = trim(line.substr(eq + 1));
    if (section.empty()) {
      throw Error(ErrorKind::kConfig, fmt::format("{}: key '{}' before any [section]", at, key),
                  "put it under its section, e.g. [disk]");
    }
    const auto& sec = keys().at(section);
    auto it = sec.find(key);
    if (it == sec.end()) {
      throw Error(ErrorKind::kConfig, fmt::format("{}: unknown key '{}' in [{}]", at, key, section),
                  fmt::format("[{}] takes: {}", section, known_list(sec)));
    }
    if (!seen.insert(section + "." + key).second) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("{}: '{}' is set twice in [{}]", at, key, section));
    }
    it->second(plan, value, fmt::format("{}: {}.{}", at, section, key));
  }
  return plan;
}

Plan load_plan(const std::string& path, Plan base) {
  std::ifstream in(path);
  if (!in) {
    throw Error(ErrorKind::kConfig, fmt::format("cannot read plan file '{}'", path),
                "check the path; examples/plan.ini is an annotated example");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_plan(ss.str(), path, std::move(base));
}

std::string plan_to_json(const Plan& p) {
  namespace json = boost::json;
  json::array sizes;
  for (auto s : p.disk_sizes) sizes.push_back(s);
  json::object o{
      {"source", p.source},
      {"server", {{"ram_dir", p.server.ram_dir}, {"disk_dir", p.server.disk_dir}}},
      {"client", {{"ram_dir", p.client.ram_dir}, {"disk_dir", p.client.disk_dir}}},
      {"disk",
       {{"enabled", p.disk_enabled},
        {"sizes", sizes},
        {"count", p.disk_count},
        {"block", p.disk_block}}},
      {"tcp",
       {{"enabled", p.tcp_enabled},
        {"seconds", p.tcp_seconds},
        {"count", p.tcp_count},
        {"buffer", p.tcp_buffer},
        {"data_address", p.data_address}}},
      {"link", {{"nominal_bits", p.link_bits}}},
  };
  return json::serialize(o);
}

}  // namespace cp::pipeline
