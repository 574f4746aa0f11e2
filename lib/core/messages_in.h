// Inside lib/core: the reader the message codecs share (messages.cc,
// messages_tcp.cc). Not for other libraries: they call messages_json.h.
#pragma once

#include <fmt/format.h>
#include <boost/json.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/messages_json.h"

namespace cp::msg::codec {
namespace json = boost::json;

// Reads the fields of one object. From the peer, a required field that is
// missing or any field of the wrong type throws Error(kPeer) naming the
// message and field; from storage, such fields keep their defaults. A null
// counts as absent.
class In {
 public:
  In(const json::value& v, Source src, std::string_view what) : src_(src), what_(what) {
    if (v.is_object()) {
      o_ = &v.as_object();
    } else if (src_ == Source::kPeer) {
      throw Error(ErrorKind::kPeer, fmt::format("message '{}' is not a JSON object", what_),
                  "the orchestrator and agent builds differ: redeploy the agent");
    }
  }

  template <class T>
  In& need(const char* key, T& out) {
    if (const json::value* v = find(key, true)) read(key, *v, out);
    return *this;
  }
  template <class T>
  In& opt(const char* key, T& out) {
    if (const json::value* v = find(key, false)) read(key, *v, out);
    return *this;
  }

 private:
  const json::value* find(const char* key, bool required) {
    if (!o_) return nullptr;
    auto it = o_->find(key);
    if (it == o_->end() || it->value().is_null()) {
      if (required) bad(key, "missing");
      return nullptr;
    }
    return &it->value();
  }
  void bad(const char* key, std::string_view problem) {
    if (src_ == Source::kStored) return;
    throw Error(ErrorKind::kPeer, fmt::format("message '{}': field '{}' {}", what_, key, problem),
                "the orchestrator and agent builds differ: redeploy the agent");
  }

  void read(const char* key, const json::value& v, std::string& out) {
    if (v.is_string())
      out = text(key, v);
    else
      bad(key, "must be a string");
  }
  // A peer's string, refused over kMaxPeerString bytes (frames are 1 MiB:
  // one field must not fill a stored sample or a terminal).
  std::string text(const char* key, const json::value& v) {
    const json::string& t = v.as_string();
    if (src_ == Source::kPeer && t.size() > kMaxPeerString) {
      bad(key, fmt::format("is {} bytes, over the {} byte cap", t.size(), kMaxPeerString));
    }
    return std::string(t);
  }
  void read(const char* key, const json::value& v, bool& out) {
    if (v.is_bool())
      out = v.as_bool();
    else
      bad(key, "must be true or false");
  }
  void read(const char* key, const json::value& v, uint64_t& out) {
    if (v.is_uint64())
      out = v.as_uint64();
    else if (v.is_int64() && v.as_int64() >= 0)
      out = static_cast<uint64_t>(v.as_int64());
    else if (src_ == Source::kStored && v.is_double() && v.as_double() >= 0)
      out = static_cast<uint64_t>(v.as_double());
    else
      bad(key, "must be a non-negative integer");
  }
  void read(const char* key, const json::value& v, int64_t& out) {
    if (v.is_int64())
      out = v.as_int64();
    else if (v.is_uint64() && v.as_uint64() <= uint64_t(INT64_MAX))
      out = static_cast<int64_t>(v.as_uint64());
    else if (src_ == Source::kStored && v.is_double())
      out = static_cast<int64_t>(v.as_double());
    else
      bad(key, "must be an integer");
  }
  void read(const char* key, const json::value& v, double& out) {
    if (v.is_double())
      out = v.as_double();
    else if (v.is_int64())
      out = static_cast<double>(v.as_int64());
    else if (v.is_uint64())
      out = static_cast<double>(v.as_uint64());
    else
      bad(key, "must be a number");
  }
  // {name: text}; entries that are null (not known) are left out.
  void read(const char* key, const json::value& v, std::map<std::string, std::string>& out) {
    if (!v.is_object()) return bad(key, "must be an object");
    for (const auto& [k, e] : v.as_object()) {
      if (e.is_string())
        out[text(key, json::value(k))] = text(key, e);
      else if (!e.is_null())
        bad(key, "must hold strings");
    }
  }
  void read(const char* key, const json::value& v, std::vector<std::string>& out) {
    if (!v.is_array()) return bad(key, "must be an array");
    for (const auto& e : v.as_array()) {
      if (e.is_string())
        out.push_back(text(key, e));
      else
        bad(key, "must hold strings");
    }
  }
  // An array of nested messages.
  template <class T>
  void read(const char* key, const json::value& v, std::vector<T>& out) {
    if (!v.is_array()) return bad(key, "must be an array");
    const auto& a = v.as_array();
    for (size_t i = 0; i < a.size(); ++i) {
      T e;
      from_json(a[i], e, src_, fmt::format("{}.{}[{}]", what_, key, i));
      out.push_back(std::move(e));
    }
  }
  void read(const char* key, const json::value& v, CpuSummary& out) {
    if (!v.is_object()) return bad(key, "must be an object");
    out = src_ == Source::kPeer ? cpu_summary_from_peer(v, fmt::format("{}.{}", what_, key))
                                : cpu_summary_from_json(v);
  }
  // A nested message.
  template <class T>
  void read(const char* key, const json::value& v, T& out) {
    from_json(v, out, src_, fmt::format("{}.{}", what_, key));
  }

  const json::object* o_ = nullptr;
  Source src_;
  std::string what_;
};

inline json::object strings(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

inline json::array strings(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& e : v) a.emplace_back(e);
  return a;
}

template <class T>
json::array array_of(const std::vector<T>& v) {
  json::array a;
  for (const auto& e : v) a.emplace_back(to_json(e));
  return a;
}

}  // namespace cp::msg::codec
