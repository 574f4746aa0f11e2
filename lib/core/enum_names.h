// An enum's names as one table read both ways: value -> name for output,
// name -> value for input, so the two cannot drift apart.
//
//   constexpr EnumName<Phase> kPhaseNames[] = {{Phase::create, "create"}, ...};
//   name_in(kPhaseNames, p, "?");  value_in(kPhaseNames, "stat");
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace cp {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `e`; `fallback` when the table lacks it (a value cast from a number).
template <class E, size_t N>
constexpr const char* name_in(const EnumName<E> (&table)[N], E e, const char* fallback = nullptr) {
  for (const EnumName<E>& n : table) {
    if (n.value == e) return n.name;
  }
  return fallback;
}

// The value named `name`; nullopt when none is.
template <class E, size_t N>
constexpr std::optional<E> value_in(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& n : table) {
    if (name == n.name) return n.value;
  }
  return std::nullopt;
}

}  // namespace cp
