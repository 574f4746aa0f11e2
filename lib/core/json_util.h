// Reading JSON text this program stored (facts, details, plans): a damaged or
// empty column must not stop a report, so these return null / {} instead of
// throwing. Only .cc files include this header (Boost.JSON).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace cp {

// The parsed value, or null for empty or invalid text.
boost::json::value parse_json_or_null(std::string_view text);
// The parsed object, or an empty one when the text is not a JSON object.
boost::json::object parse_json_object(std::string_view text);
// The integer types the codecs (messages, facts, lab.json, wire frames) read.
template <class T>
concept JsonInteger = std::same_as<T, int64_t> || std::same_as<T, uint64_t>;
// A JSON number as an integer of T: an integer in T's range; with `truncate`,
// a double in it too, cut toward zero (a number another writer stored).
// nullopt for anything else.
template <JsonInteger T>
std::optional<T> json_integer(const boost::json::value& v, bool truncate = false);
// What json_integer<T> refuses, as a codec's error says it.
template <JsonInteger T>
inline constexpr const char* kNotJsonInteger =
    std::is_signed_v<T> ? "must be an integer" : "must be a non-negative integer";
// Sanitizes every string of `v`, object keys too (core/text.h
// sanitize_field, for the terminal); whether any changed. In text.cc.
bool sanitize_json(boost::json::value& v);

}  // namespace cp
