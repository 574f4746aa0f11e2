#include "core/json_util.h"

#include <boost/json/parse.hpp>

#include <type_traits>
#include <utility>

namespace cp {

boost::json::value parse_json_or_null(std::string_view text) {
  if (text.empty()) return nullptr;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  return ec ? boost::json::value(nullptr) : v;
}

boost::json::object parse_json_object(std::string_view text) {
  boost::json::value v = parse_json_or_null(text);
  return v.is_object() ? std::move(v.as_object()) : boost::json::object();
}

template <JsonInteger T>
std::optional<T> json_integer(const boost::json::value& v, bool truncate) {
  if (v.is_int64() && std::in_range<T>(v.as_int64())) return static_cast<T>(v.as_int64());
  if (v.is_uint64() && std::in_range<T>(v.as_uint64())) return static_cast<T>(v.as_uint64());
  // T's range as doubles, both ends exact: [-2^63, 2^63) or [0, 2^64).
  constexpr double lo = std::is_signed_v<T> ? -0x1p63 : 0.0;
  constexpr double hi = std::is_signed_v<T> ? 0x1p63 : 0x1p64;
  if (truncate && v.is_double() && v.as_double() >= lo && v.as_double() < hi) {
    return static_cast<T>(v.as_double());
  }
  return std::nullopt;
}
template std::optional<int64_t> json_integer<int64_t>(const boost::json::value&, bool);
template std::optional<uint64_t> json_integer<uint64_t>(const boost::json::value&, bool);

}  // namespace cp
