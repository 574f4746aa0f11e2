#include "core/json_util.h"

#include <boost/json/parse.hpp>

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

}  // namespace cp
