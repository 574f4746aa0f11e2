#include "core/cpu_message.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <limits>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include "core/error.h"

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

// A count or id as an int, clamped (a double out of int's range would be
// undefined behaviour to cast).
int to_int(double d) {
  if (!(d > 0)) return 0;
  return d >= double(std::numeric_limits<int>::max()) ? std::numeric_limits<int>::max()
                                                      : static_cast<int>(d);
}

// Checks the types of a peer's CPU summary before the lenient read: every field
// present has its type, the required ones are there, the arrays are bounded.
class PeerCheck {
 public:
  explicit PeerCheck(std::string_view what) : what_(what) {}
  [[noreturn]] void bad(std::string_view field, std::string_view problem) const {
    throw Error(ErrorKind::kPeer, fmt::format("message '{}': field '{}' {}", what_, field, problem),
                "the orchestrator and agent builds differ: redeploy the agent");
  }
  void number(const json::object& o, const char* key, bool required, std::string_view at) const {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) bad(fmt::format("{}{}", at, key), "missing");
      return;
    }
    if (!it->value().is_number()) bad(fmt::format("{}{}", at, key), "must be a number");
  }
  void string(const json::object& o, const char* key, std::string_view at) const {
    auto it = o.find(key);
    if (it != o.end() && !it->value().is_string())
      bad(fmt::format("{}{}", at, key), "must be a string");
    if (it != o.end() && it->value().as_string().size() > 256)
      bad(fmt::format("{}{}", at, key), "is over 256 bytes");
  }
  void boolean(const json::object& o, const char* key, std::string_view at) const {
    auto it = o.find(key);
    if (it != o.end() && !it->value().is_bool())
      bad(fmt::format("{}{}", at, key), "must be true or false");
  }
  const json::array* array(const json::object& o, const char* key, bool required,
                           size_t max) const {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) bad(key, "missing");
      return nullptr;
    }
    if (!it->value().is_array()) bad(key, "must be an array");
    const json::array& a = it->value().as_array();
    if (a.size() > max) bad(key, fmt::format("has {} entries, over the {} cap", a.size(), max));
    return &a;
  }

 private:
  std::string_view what_;
};

}  // namespace

CpuSummary cpu_summary_from_peer(const json::value& v, std::string_view what) {
  const PeerCheck c(what);
  if (!v.is_object()) c.bad("cpu", "must be an object");
  const json::object& o = v.as_object();
  for (const char* k : {"seconds", "total_busy_pct"}) c.number(o, k, true, "");
  for (const char* k : {"sys_pct", "softirq_pct", "agent_pct", "server_pct", "kernel_pct",
                        "other_pct", "own_wait_pct", "server_pid"}) {
    c.number(o, k, false, "");
  }
  for (const char* k : {"core_busy_pct", "core_busy_max_pct"}) {
    if (const json::array* a = c.array(o, k, false, kMaxCores)) {
      for (const auto& e : *a)
        if (!e.is_number()) c.bad(k, "must hold numbers");
    }
  }
  const json::array* top = c.array(o, "top", true, kMaxTop);
  for (size_t i = 0; i < top->size(); ++i) {
    const std::string at = fmt::format("top[{}].", i);
    if (!(*top)[i].is_object()) c.bad(fmt::format("top[{}]", i), "must be an object");
    const json::object& p = (*top)[i].as_object();
    c.number(p, "pid", true, at);
    for (const char* k :
         {"cpu_pct", "cpu_limit_pct", "top_thread_pct", "threads", "wait_pct", "throttled_pct"}) {
      c.number(p, k, false, at);
    }
    c.string(p, "comm", at);
    c.string(p, "role", at);
    c.boolean(p, "other_netns", at);
  }
  return cpu_summary_from_json(v);
}

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
  json::object o{{"seconds", r(s.seconds)},           {"core_busy_pct", cores},
                 {"core_busy_max_pct", cores_max},    {"total_busy_pct", r(s.total_busy_pct)},
                 {"sys_pct", r(s.sys_pct)},           {"softirq_pct", r(s.softirq_pct)},
                 {"agent_pct", r(s.agent_pct)},       {"server_pct", r(s.server_pct)},
                 {"kernel_pct", r(s.kernel_pct)},     {"other_pct", r(s.other_pct)},
                 {"own_wait_pct", r(s.own_wait_pct)}, {"top", top}};
  if (s.server_pid > 0) o["server_pid"] = s.server_pid;  // absent: unknown
  return o;
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
  s.server_pid = to_int(num(o, "server_pid"));
  if (auto it = o.find("top"); it != o.end() && it->value().is_array()) {
    for (const auto& e : it->value().as_array()) {
      if (!e.is_object()) continue;
      const json::object& p = e.as_object();
      ProcLoad l;
      l.pid = to_int(num(p, "pid"));
      l.comm = str(p, "comm");
      l.cpu_pct = num(p, "cpu_pct");
      l.cpu_limit_pct = num(p, "cpu_limit_pct");
      l.other_netns = flag(p, "other_netns");
      l.role = str(p, "role");
      l.top_thread_pct = num(p, "top_thread_pct", -1);
      l.threads = to_int(num(p, "threads"));
      l.wait_pct = num(p, "wait_pct");
      l.throttled_pct = num(p, "throttled_pct", -1);
      s.top.push_back(std::move(l));
    }
  }
  return s;
}

}  // namespace cp::msg
