// Builders of a driver's option table (DriverSpec::options), one per kind
// of value, so each option is a line or two of its driver's table and the
// conventions (what "any positive duration" or an "auto" count is) live
// here; registry.cc reads the table and says them in words.
#pragma once

#include <string_view>

#include "transfer/driver.h"

namespace cp::transfer::option {

constexpr OptionSpec text(std::string_view name, std::string_view help) {
  return {.name = name, .type = OptionType::kText, .help = help};
}
constexpr OptionSpec flag(std::string_view name, std::string_view fallback, std::string_view help) {
  return {.name = name, .type = OptionType::kFlag, .fallback = fallback, .help = help};
}
// One of `words` ('|'-separated).
constexpr OptionSpec choice(std::string_view name, std::string_view fallback,
                            std::string_view words, std::string_view help) {
  return {.name = name,
          .type = OptionType::kChoice,
          .fallback = fallback,
          .words = words,
          .help = help};
}
// A value of a ranged type (kCount, kSize, kSeconds, kRate) from min to max
// in its unit (max 0: no bound).
constexpr OptionSpec ranged(OptionType type, std::string_view name, std::string_view fallback,
                            double min, double max, std::string_view help) {
  return {.name = name, .type = type, .fallback = fallback, .min = min, .max = max, .help = help};
}
// A whole number from min to max.
constexpr OptionSpec count(std::string_view name, std::string_view fallback, double min, double max,
                           std::string_view help) {
  return ranged(OptionType::kCount, name, fallback, min, max, help);
}
// A count from 1 to max, or the word "auto" (the default): the driver sizes
// it to the path (option_number gives nullopt).
constexpr OptionSpec count_or_auto(std::string_view name, double max, std::string_view help) {
  OptionSpec o = count(name, "auto", 1, max, help);
  o.words = "auto";
  return o;
}
// Bytes from min to max.
constexpr OptionSpec size(std::string_view name, std::string_view fallback, double min, double max,
                          std::string_view help) {
  return ranged(OptionType::kSize, name, fallback, min, max, help);
}
// A duration of at least `min` seconds; kAnyPositive: any over 0.
inline constexpr double kAnyPositive = 0.001;
constexpr OptionSpec seconds(std::string_view name, std::string_view fallback,
                             std::string_view help, double min = kAnyPositive) {
  return ranged(OptionType::kSeconds, name, fallback, min, 0, help);
}
// The path's rate in bit/s, no default: what an "auto" count is sized to.
constexpr OptionSpec path_rate(std::string_view help) {
  return {.name = "path_rate", .type = OptionType::kRate, .help = help};
}
}  // namespace cp::transfer::option
