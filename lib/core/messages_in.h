// Inside lib/core: what the message codecs share (messages.cc,
// messages_files.cc, messages_files_share.cc, messages_tcp.cc). Not for
// other libraries: they call messages_json.h.
//
// Each message lists its fields once, in CP_MESSAGE_FIELDS(T) { ... }: a
// visitor `v` walks them with `m` the message, Out (core/json_fields.h says
// what need, opt, omit_empty, ... write) writing to_json and In reading
// from_json. Read: need: the peer must send it; need_if(c, ...): when c holds
// (c reads fields listed before it); every other: may be absent.
#pragma once

#include <fmt/format.h>
#include <boost/json.hpp>

#include <concepts>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/json_util.h"
#include "core/messages_json.h"

namespace cp::msg::codec {
namespace json = boost::json;

// Reads the fields of one object. From the peer, a required field that is
// missing or any field of the wrong type throws Error(kPeer) naming the
// message and field; from storage, such fields keep their defaults. A null
// counts as absent.
class In {
 public:
  static constexpr bool kReads = true;

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
  template <class T>
  In& omit_empty(const char* key, T& out) {
    return opt(key, out);
  }
  template <class T>
  In& omit_default(const char* key, T& out, const T&) {
    return opt(key, out);
  }
  template <class T>
  In& opt_if(bool, const char* key, T& out) {
    return opt(key, out);
  }
  template <class T>
  In& need_if(bool needed, const char* key, T& out) {
    return needed ? need(key, out) : opt(key, out);
  }
  template <class T>
  In& null_empty(const char* key, T& out) {
    return opt(key, out);
  }

  bool peer() const { return src_ == Source::kPeer; }
  const std::string& what() const { return what_; }

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
  // Integers; a stored double (another writer's) is truncated, a peer's refused.
  template <JsonInteger T>
  void read(const char* key, const json::value& v, T& out) {
    if (const std::optional<T> n = json_integer<T>(v, src_ == Source::kStored))
      out = *n;
    else
      bad(key, kNotJsonInteger<T>);
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
  void read(const char* key, const json::value& v, files::Phase& out) {
    if (!v.is_string()) return bad(key, "must be a string");
    const std::string name = text(key, v);
    if (const auto p = files::parse_phase(name))
      out = *p;
    else
      bad(key, fmt::format("must be create, stat, read or delete, not '{}'", name.substr(0, 40)));
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

// Writes the fields of one object, in the order they are listed.
class Out : public FieldWriter<Out> {
 public:
  template <class T>
  static json::value value(const T& x) {
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>)
      return json::value(x);
    else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>)
      return strings(x);
    else
      return json::value(to_json(x));  // a nested message, CpuSummary
  }
  template <class T>
  static json::value value(const std::vector<T>& x) {
    return array_of(x);
  }
  static json::value value(const std::vector<std::string>& x) { return strings(x); }
  static json::value value(files::Phase p) { return json::value(files::phase_name(p)); }
};

}  // namespace cp::msg::codec

// Declares the field list of message T (a visitor `v`, the message `m`, both
// as above) and defines T's to_json and from_json through it. Write the list
// in braces after it. Inside namespace cp::msg.
#define CP_MESSAGE_FIELDS(T)                                                             \
  CP_FIELDS_OF(T);                                                                       \
  boost::json::object to_json(const T& m) {                                              \
    ::cp::msg::codec::Out out;                                                           \
    fields(out, m);                                                                      \
    return out.take();                                                                   \
  }                                                                                      \
  void from_json(const boost::json::value& j, T& m, Source src, std::string_view what) { \
    ::cp::msg::codec::In in(j, src, what);                                               \
    fields(in, m);                                                                       \
  }                                                                                      \
  CP_FIELDS_OF(T)
