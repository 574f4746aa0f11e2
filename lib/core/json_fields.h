// The writing half of a field list written once. A codec lists an object's
// fields in one function, `template <class V, class M> void fields(V& v, M& m)`,
// calling v.need("key", m.x), v.opt(...), ...; a reader walks the list to read
// (messages_in.h's In, the facts' and lab.json's Get) and a FieldWriter to
// write, so the two directions cannot drift apart. Only .cc files include
// this (Boost.JSON).
//
// Written in the order listed:
//   need(key, x), opt(key, x)   always
//   omit_empty(key, x)          unless empty: "", [], {}, nullopt, false, a
//                               number not above 0
//   omit_default(key, x, d)     unless x == d
//   opt_if(c, key, x), need_if  when c holds
//   null_empty(key, x)          always; null when empty
// FieldWriter::value writes a number, a string, an optional (nullopt as
// null), a container (an array) and a part (an object of its fields(), found
// beside `Derived`); `Derived` may add `value` overloads for its own types
// (with `using FieldWriter::value;`).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <concepts>
#include <string>
#include <type_traits>
#include <utility>

// Declares the field list of T, `fields(v, m)` for m a T or a const T (to
// write): write the list in braces after it.
#define CP_FIELDS_OF(T)                            \
  template <class V, class M>                      \
  requires std::same_as<std::remove_const_t<M>, T> \
  void fields(V& v, M& m)

namespace cp {

template <class T>
bool is_empty_field(const T& x) {
  if constexpr (std::is_arithmetic_v<T>)
    return !(x > 0);
  else if constexpr (requires { x.has_value(); })
    return !x.has_value();
  else
    return x.empty();
}

template <class Derived>
class FieldWriter {
 public:
  static constexpr bool kReads = false;
  bool has(const char*) const { return true; }

  template <class T>
  Derived& need(const char* key, const T& x) {
    o_[key] = Derived::value(x);
    return self();
  }
  template <class T>
  Derived& opt(const char* key, const T& x) {
    return need(key, x);
  }
  template <class T>
  Derived& omit_empty(const char* key, const T& x) {
    return is_empty_field(x) ? self() : need(key, x);
  }
  template <class T>
  Derived& omit_default(const char* key, const T& x, const T& d) {
    return x == d ? self() : need(key, x);
  }
  template <class T>
  Derived& opt_if(bool write, const char* key, const T& x) {
    return write ? need(key, x) : self();
  }
  template <class T>
  Derived& need_if(bool write, const char* key, const T& x) {
    return opt_if(write, key, x);
  }
  template <class T>
  Derived& null_empty(const char* key, const T& x) {
    if (!is_empty_field(x)) return need(key, x);
    o_[key] = nullptr;
    return self();
  }

  boost::json::object take() { return std::move(o_); }

  template <class T>
  static boost::json::value value(const T& x) {
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
      return boost::json::value(x);
    } else if constexpr (requires { x.has_value(); }) {
      return x ? Derived::value(*x) : boost::json::value(nullptr);
    } else if constexpr (requires { x.begin(); }) {
      boost::json::array a;
      for (const auto& e : x) a.push_back(Derived::value(e));
      return a;
    } else {
      Derived part;
      fields(part, x);
      return part.take();
    }
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  boost::json::object o_;
};

}  // namespace cp
