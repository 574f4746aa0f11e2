#include "core/cpu_message.h"

#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace cp::msg {
namespace json = boost::json;
namespace {

double num(const json::object& o, const char* key, double fallback = 0) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  const json::value& v = it->value();
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return fallback;
}

std::string str(const json::object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().as_string()) : "";
}

bool flag(const json::object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_bool() && it->value().as_bool();
}

std::vector<double> numbers(const json::object& o, const char* key) {
  std::vector<double> out;
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_array()) return out;
  for (const auto& v : it->value().as_array()) {
    if (v.is_double())
      out.push_back(v.as_double());
    else if (v.is_int64())
      out.push_back(static_cast<double>(v.as_int64()));
    else if (v.is_uint64())
      out.push_back(static_cast<double>(v.as_uint64()));
  }
  return out;
}

}  // namespace

double round_sig(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, kCpuDigits);
  double out = v;
  std::from_chars(buf, r.ptr, out);
  return out;
}

json::value to_json(const CpuSummary& s) {
  // Every figure at kCpuDigits significant digits (see the header).
  auto r = round_sig;
  json::array cores, cores_max, top;
  for (double v : s.core_busy_pct) cores.push_back(r(v));
  for (double v : s.core_busy_max_pct) cores_max.push_back(r(v));
  for (const auto& p : s.top) {
    top.push_back(json::object{{"pid", p.pid},
                               {"comm", p.comm},
                               {"cpu_pct", r(p.cpu_pct)},
                               {"cpu_limit_pct", r(p.cpu_limit_pct)},
                               {"other_netns", p.other_netns},
                               {"role", p.role},
                               {"top_thread_pct", r(p.top_thread_pct)},
                               {"threads", p.threads},
                               {"wait_pct", r(p.wait_pct)},
                               {"throttled_pct", r(p.throttled_pct)}});
  }
  return json::object{{"seconds", r(s.seconds)},           {"core_busy_pct", cores},
                      {"core_busy_max_pct", cores_max},    {"total_busy_pct", r(s.total_busy_pct)},
                      {"sys_pct", r(s.sys_pct)},           {"softirq_pct", r(s.softirq_pct)},
                      {"agent_pct", r(s.agent_pct)},       {"server_pct", r(s.server_pct)},
                      {"kernel_pct", r(s.kernel_pct)},     {"other_pct", r(s.other_pct)},
                      {"own_wait_pct", r(s.own_wait_pct)}, {"top", top}};
}

CpuSummary cpu_summary_from_json(const json::value& v) {
  CpuSummary s;
  if (!v.is_object()) return s;
  const json::object& o = v.as_object();
  s.seconds = num(o, "seconds");
  s.core_busy_pct = numbers(o, "core_busy_pct");
  s.core_busy_max_pct = numbers(o, "core_busy_max_pct");
  s.total_busy_pct = num(o, "total_busy_pct");
  s.sys_pct = num(o, "sys_pct");
  s.softirq_pct = num(o, "softirq_pct");
  s.agent_pct = num(o, "agent_pct");
  s.server_pct = num(o, "server_pct");
  s.kernel_pct = num(o, "kernel_pct");
  s.other_pct = num(o, "other_pct");
  s.own_wait_pct = num(o, "own_wait_pct");
  if (auto it = o.find("top"); it != o.end() && it->value().is_array()) {
    for (const auto& e : it->value().as_array()) {
      if (!e.is_object()) continue;
      const json::object& p = e.as_object();
      ProcLoad l;
      l.pid = static_cast<int>(num(p, "pid"));
      l.comm = str(p, "comm");
      l.cpu_pct = num(p, "cpu_pct");
      l.cpu_limit_pct = num(p, "cpu_limit_pct");
      l.other_netns = flag(p, "other_netns");
      l.role = str(p, "role");
      l.top_thread_pct = num(p, "top_thread_pct", -1);
      l.threads = static_cast<int>(num(p, "threads"));
      l.wait_pct = num(p, "wait_pct");
      l.throttled_pct = num(p, "throttled_pct", -1);
      s.top.push_back(std::move(l));
    }
  }
  return s;
}

}  // namespace cp::msg
