// Reading JSON text this program stored (facts, details, plans): a damaged or
// empty column must not stop a report, so these return null / {} instead of
// throwing. Only .cc files include this header (Boost.JSON).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string_view>

namespace cp {

// The parsed value, or null for empty or invalid text.
boost::json::value parse_json_or_null(std::string_view text);
// The parsed object, or an empty one when the text is not a JSON object.
boost::json::object parse_json_object(std::string_view text);
// Sanitizes every string of `v`, object keys too (core/text.h
// sanitize_field, for the terminal); whether any changed. In text.cc.
bool sanitize_json(boost::json::value& v);

}  // namespace cp
