#include "store/cpu_pack.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <charconv>
#include <string_view>

#include "core/cpu_message.h"
#include "core/error.h"
#include "core/text.h"

namespace cp::store {
namespace json = boost::json;
namespace {

// The summary's numbers; records packed before server_pid have one less.
constexpr size_t kFields = 10;

// Shortest decimal that reads back as exactly `v`.
void put(std::string& out, double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  CP_CHECK(r.ec == std::errc());
  out.append(buf, r.ptr);
}

void put_list(std::string& out, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    put(out, v[i]);
  }
}

[[noreturn]] void damaged(std::string_view what) {
  throw Error(ErrorKind::kIo, fmt::format("a packed CPU record is damaged ({})", what),
              "the database was changed by another program: restore it from a copy");
}

double get(std::string_view s) {
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) damaged("a number");
  return v;
}

std::vector<double> get_list(std::string_view s) {
  std::vector<double> out;
  if (s.empty()) return out;
  for (std::string_view f : split(s, ',')) out.push_back(get(f));
  return out;
}

void pack_end(std::string& out, const msg::CpuSummary& c, ProcTable& procs) {
  for (double v : {c.seconds, c.total_busy_pct, c.sys_pct, c.softirq_pct, c.agent_pct, c.server_pct,
                   c.kernel_pct, c.other_pct, c.own_wait_pct, double(c.server_pid)}) {
    put(out, v);
    out += ',';
  }
  out.back() = '|';
  put_list(out, c.core_busy_pct);
  out += '|';
  put_list(out, c.core_busy_max_pct);
  out += '|';
  for (size_t i = 0; i < c.top.size(); ++i) {
    const msg::ProcLoad& p = c.top[i];
    if (i) out += '/';
    out += std::to_string(procs.intern({p.pid, p.comm, p.role, p.other_netns}));
    for (double v : {p.cpu_pct, p.cpu_limit_pct, p.top_thread_pct, double(p.threads), p.wait_pct,
                     p.throttled_pct}) {
      out += ',';
      put(out, v);
    }
  }
}

msg::CpuSummary unpack_end(std::string_view s, const ProcTable& procs) {
  const std::vector<std::string_view> part = split(s, '|');
  if (part.size() != 4) damaged("its sections");
  const std::vector<double> f = get_list(part[0]);
  if (f.size() != kFields && f.size() != kFields - 1) damaged("its fields");
  msg::CpuSummary c;
  c.seconds = f[0];
  c.total_busy_pct = f[1];
  c.sys_pct = f[2];
  c.softirq_pct = f[3];
  c.agent_pct = f[4];
  c.server_pct = f[5];
  c.kernel_pct = f[6];
  c.other_pct = f[7];
  c.own_wait_pct = f[8];
  if (f.size() == kFields) c.server_pid = static_cast<int>(f[9]);
  c.core_busy_pct = get_list(part[1]);
  c.core_busy_max_pct = get_list(part[2]);
  if (part[3].empty()) return c;
  for (std::string_view ps : split(part[3], '/')) {
    const std::vector<double> p = get_list(ps);
    if (p.size() != 7) damaged("a process");
    const ProcIdentity* who = procs.at(static_cast<int>(p[0]));
    if (!who || p[0] != static_cast<int>(p[0])) damaged("a process index");
    msg::ProcLoad l;
    l.pid = who->pid;
    l.comm = who->comm;
    l.role = who->role;
    l.other_netns = who->other_netns;
    l.cpu_pct = p[1];
    l.cpu_limit_pct = p[2];
    l.top_thread_pct = p[3];
    l.threads = static_cast<int>(p[4]);
    l.wait_pct = p[5];
    l.throttled_pct = p[6];
    c.top.push_back(std::move(l));
  }
  return c;
}

}  // namespace

int ProcTable::intern(const ProcIdentity& p) {
  auto [it, added] = idx_of_.try_emplace(p, static_cast<int>(by_idx_.size()));
  if (added) {
    by_idx_.push_back(p);
    fresh_.emplace_back(it->second, p);
  }
  return it->second;
}

void ProcTable::load(int idx, const ProcIdentity& p) {
  CP_CHECK(idx >= 0);
  if (static_cast<size_t>(idx) >= by_idx_.size()) by_idx_.resize(idx + 1);
  by_idx_[idx] = p;
  idx_of_[p] = idx;
}

const ProcIdentity* ProcTable::at(int idx) const {
  return idx >= 0 && static_cast<size_t>(idx) < by_idx_.size() ? &by_idx_[idx] : nullptr;
}

void ProcTable::forget_fresh(size_t keep) {
  while (fresh_.size() > keep) {
    idx_of_.erase(fresh_.back().second);
    by_idx_.pop_back();
    fresh_.pop_back();
  }
}

std::optional<std::string> pack_cpu(const std::string& cpu_json, ProcTable& procs) {
  json::error_code ec;
  const json::value v = json::parse(cpu_json, ec);
  if (ec || !v.is_object() || v.as_object().empty()) return std::nullopt;
  const size_t fresh_before = procs.fresh().size();
  std::string out;
  for (const auto& [end, summary] : v.as_object()) {
    if (end != "server" && end != "client") return std::nullopt;
    if (!out.empty()) out += ';';
    out += end == "server" ? 'S' : 'C';
    pack_end(out, msg::cpu_summary_from_json(summary), procs);
  }
  // Exact or not at all: a field this codec does not know, an integer where
  // it writes a double, another key order all show here.
  if (unpack_cpu(out, procs) != cpu_json) {
    procs.forget_fresh(fresh_before);
    return std::nullopt;
  }
  return out;
}

std::string unpack_cpu(const std::string& packed, const ProcTable& procs) {
  if (packed.empty()) return {};
  json::object cpu;
  for (std::string_view end : split(packed, ';')) {
    if (end.empty() || (end[0] != 'S' && end[0] != 'C')) damaged("an end");
    cpu[end[0] == 'S' ? "server" : "client"] = msg::to_json(unpack_end(end.substr(1), procs));
  }
  return json::serialize(cpu);
}

std::optional<SplitDetails> split_props(const std::string& details) {
  if (details.empty() || details.back() != '}') return std::nullopt;
  json::error_code ec;
  json::value v = json::parse(details, ec);
  if (ec || !v.is_object()) return std::nullopt;
  json::object& o = v.as_object();
  if (o.empty() || (o.end() - 1)->key() != "properties" || !(o.end() - 1)->value().is_object()) {
    return std::nullopt;
  }
  SplitDetails out;
  out.props = json::serialize((o.end() - 1)->value());
  o.erase(o.end() - 1);
  out.rest = json::serialize(o);
  if (join_props(out.rest, out.props) != details) return std::nullopt;
  return out;
}

std::string join_props(const std::string& rest, const std::string& props) {
  if (rest.size() < 2 || rest.back() != '}') damaged("a sample's details");
  return rest.substr(0, rest.size() - 1) + (rest == "{}" ? "" : ",") + "\"properties\":" + props +
         "}";
}

}  // namespace cp::store
