// The table of drivers, and what is done with their declared data:
// scheme -> driver, option checks, the text `chokepoint drivers` prints.
#include "transfer/registry.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <iterator>

#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/protocols.h"

namespace cp::transfer {
namespace {

// The drivers built in, each declared in its own file; others (a test's)
// register at run time. fio's engines register themselves from their files;
// an explicit list keeps a static library's driver files linked.
const DriverSpec* const kBuiltIn[] = {&kNullDriver, &kFtpDriver, &kSmbDriver,
                                      &kPathDriver, &kAfpDriver, &kNfsDriver};

// The table: the built-in drivers, then the registered ones. Built on first
// use, so a static initializer in another file may register into it.
struct Table {
  std::vector<const DriverSpec*> specs{std::begin(kBuiltIn), std::end(kBuiltIn)};
  std::vector<std::string> names;
  Table() {
    for (const DriverSpec* d : specs) names.emplace_back(d->name);
  }
};

Table& table() {
  static Table t;
  return t;
}

std::string option_names(const DriverSpec& spec) {
  std::vector<std::string> names;
  for (const auto& o : spec.options) names.emplace_back(o.name);
  return join(names);
}

bool is_word(const OptionSpec& o, std::string_view value) {
  for (std::string_view w : split(o.words, '|')) {
    if (!w.empty() && w == value) return true;
  }
  return false;
}

std::string format_bound(const OptionSpec& o, double v) {
  switch (o.type) {
    case OptionType::kSize:
      return format_size(static_cast<uint64_t>(v));
    case OptionType::kSeconds:
      return fmt::format("{:g} s", v);
    case OptionType::kRate:
      return format_rate_bits(v);
    default:
      return fmt::format("{:.0f}", v);
  }
}

// What the option takes, in words: "a whole number from 1 to 16, or auto".
std::string takes(const OptionSpec& o) {
  std::string range;
  if (o.type == OptionType::kSeconds && o.min > 0 && o.min < 1 && o.max <= 0) {
    range = " over 0";  // any positive duration
  } else if (o.max > 0) {
    range = fmt::format(" from {} to {}", format_bound(o, o.min), format_bound(o, o.max));
  } else if (o.min > 0) {
    range = fmt::format(" of at least {}", format_bound(o, o.min));
  }
  std::string what;
  switch (o.type) {
    case OptionType::kText:
      what = "any text";
      break;
    case OptionType::kCount:
      what = "a whole number" + range;
      break;
    case OptionType::kSize:
      what = "a size" + range + " (like 4MiB)";
      break;
    case OptionType::kSeconds:
      what = "a duration" + range + " (like 30s or 500ms)";
      break;
    case OptionType::kRate:
      what = "a rate" + range + " (like 1gbit)";
      break;
    case OptionType::kFlag:
      what = "yes or no";
      break;
    case OptionType::kChoice: {
      std::vector<std::string> words;
      for (std::string_view w : split(o.words, '|')) words.emplace_back(w);
      return "one of " + join(words);
    }
  }
  for (std::string_view w : split(o.words, '|')) {
    if (!w.empty()) what += fmt::format(", or {}", w);
  }
  return what;
}

// The value in the option's unit, or nullopt when it is not of its type.
std::optional<double> value_of(const OptionSpec& o, const std::string& value) {
  try {
    switch (o.type) {
      case OptionType::kCount: {
        if (value.empty() || value.size() > 15 ||
            value.find_first_not_of("0123456789") != std::string::npos) {
          return std::nullopt;
        }
        return static_cast<double>(std::stoull(value));
      }
      case OptionType::kSize:
        return static_cast<double>(parse_size(value, o.name));
      case OptionType::kSeconds:
        return parse_duration(value, o.name);
      case OptionType::kRate:
        return static_cast<double>(parse_rate_bits(value, o.name));
      case OptionType::kFlag:
        return parse_yes_no(value) ? std::optional<double>(0) : std::nullopt;
      case OptionType::kText:
        return 0;
      case OptionType::kChoice:
        return std::nullopt;  // only its words
    }
  } catch (const Error&) {
  }
  return std::nullopt;
}

bool in_range(const OptionSpec& o, double v) {
  if (o.type == OptionType::kText || o.type == OptionType::kFlag) return true;
  if (std::isnan(v) || v < o.min) return false;
  return o.max <= 0 || v <= o.max;
}

// The driver as make_driver() hands it out: its options are checked against
// the spec before it connects, whoever built the Share (the plan checked
// them already; bench tools and tests did not).
class CheckedDriver : public Driver {
 public:
  CheckedDriver(const DriverSpec& spec, std::unique_ptr<Driver> inner)
      : spec_(spec), inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::unique_ptr<Session> connect(const Share& share, const CancelToken& cancel) override {
    check_options(spec_, share.options);
    return inner_->connect(share, cancel);
  }

 private:
  const DriverSpec& spec_;
  std::unique_ptr<Driver> inner_;
};

}  // namespace

const char* Capabilities::lacks(bool write, bool random) const {
  if (write) {
    if (!this->write) return "writes";
    return random && !random_write ? "random writes" : nullptr;
  }
  if (!read) return "reads";
  return random && !random_access ? "random reads" : nullptr;
}

size_t File::pread(char*, size_t, uint64_t) {
  throw Error(ErrorKind::kUnsupported, "this protocol driver reads sequentially only");
}

void File::pwrite(const char*, size_t, uint64_t) {
  throw Error(ErrorKind::kUnsupported, "this protocol driver writes sequentially only");
}

FileInfo Session::stat(const std::string& path) {
  throw Error(ErrorKind::kUnsupported,
              fmt::format("this protocol driver cannot stat a file ({})", path),
              "the small-file pass skips its stat phase");
}

void Session::mkdir(const std::string& path) {
  throw Error(ErrorKind::kUnsupported,
              fmt::format("this protocol driver cannot create a directory ({})", path),
              "lay the tree out on the server instead");
}

void Session::rmdir(const std::string& path) {
  throw Error(ErrorKind::kUnsupported,
              fmt::format("this protocol driver cannot remove a directory ({})", path),
              "remove the tree on the server instead");
}

void Session::run_file_ops(FileOps&) {
  ::cp::check_failed("run_file_ops on a driver without file_ops_in_flight", __FILE__, __LINE__);
}

std::span<char> File::write_buffer(size_t max) {
  CP_CHECK(max > 0);
  staged_.resize(max);
  return {staged_.data(), max};
}

void File::commit_write(size_t n) {
  CP_CHECK(n <= staged_.size());
  write(staged_.data(), n);
}

std::span<const DriverSpec* const> driver_specs() { return table().specs; }

const std::vector<std::string>& driver_names() { return table().names; }

void register_driver(const DriverSpec& spec) {
  CP_CHECK(!spec.name.empty() && spec.make != nullptr && !spec.url_prefixes.empty());
  CP_CHECK(find_driver_spec(spec.name) == nullptr);  // one driver per name
  table().specs.push_back(&spec);
  table().names.emplace_back(spec.name);
}

const DriverSpec* find_driver_spec(std::string_view name) {
  for (const DriverSpec* d : driver_specs()) {
    if (d->name == name) return d;
  }
  return nullptr;
}

const DriverSpec& driver_spec(std::string_view name) {
  if (const DriverSpec* d = find_driver_spec(name)) return *d;
  throw Error(ErrorKind::kConfig, fmt::format("no transfer driver '{}'", name),
              "this build has: " + join(driver_names()));
}

std::string protocol_display(std::string_view name) {
  const DriverSpec* d = find_driver_spec(name);
  if (d && !d->display.empty()) return std::string(d->display);
  std::string up(name);
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up;
}

const DriverSpec& driver_for_url(std::string_view url) {
  std::vector<std::string> forms;
  for (const DriverSpec* d : driver_specs()) {
    std::vector<std::string> prefixes;
    for (std::string_view p : d->url_prefixes) {
      if (url.starts_with(p)) return *d;
      prefixes.emplace_back(p);
    }
    forms.push_back(fmt::format("{} ({})", join(prefixes, " or "), d->name));
  }
  throw Error(ErrorKind::kConfig, fmt::format("'{}' is not a share URL chokepoint knows", url),
              "share URLs start with: " + join(forms, "; ") +
                  " (`chokepoint drivers` lists each one's options)");
}

const OptionSpec* find_option(const DriverSpec& spec, std::string_view name) {
  for (const auto& candidate : spec.options) {
    if (candidate.name == name) return &candidate;
  }
  return nullptr;
}

namespace {

// `value` of option `o` in its unit; nullopt for one of its words. Throws
// the one error every driver gives for a value of the wrong type or range.
std::optional<double> checked_value(const DriverSpec& spec, const OptionSpec& o,
                                    const std::string& value) {
  if (is_word(o, value)) return std::nullopt;
  const std::optional<double> v = value_of(o, value);
  if (!v || !in_range(o, *v)) {
    throw Error(ErrorKind::kConfig,
                fmt::format("{} share option '{}' is '{}'", spec.name, o.name, value),
                fmt::format("give {} ({})", takes(o), o.help));
  }
  return v;
}

}  // namespace

void check_options(const DriverSpec& spec, const std::map<std::string, std::string>& options) {
  for (const auto& [key, value] : options) {
    const OptionSpec* o = find_option(spec, key);
    if (!o) {
      throw Error(ErrorKind::kConfig, fmt::format("unknown {} share option '{}'", spec.name, key),
                  spec.options.empty()
                      ? fmt::format("the {} driver takes no options", spec.name)
                      : fmt::format("{} shares take: {}", spec.name, option_names(spec)));
    }
    checked_value(spec, *o, value);
  }
}

std::string option_value(const DriverSpec& spec, const std::map<std::string, std::string>& options,
                         std::string_view name) {
  const OptionSpec* o = find_option(spec, name);
  CP_CHECK(o != nullptr);
  const auto it = options.find(std::string(name));
  return it != options.end() ? it->second : std::string(o->fallback);
}

std::optional<double> option_number(const DriverSpec& spec,
                                    const std::map<std::string, std::string>& options,
                                    std::string_view name) {
  const OptionSpec* o = find_option(spec, name);
  CP_CHECK(o != nullptr);
  CP_CHECK(o->type == OptionType::kCount || o->type == OptionType::kSize ||
           o->type == OptionType::kSeconds || o->type == OptionType::kRate);
  const std::string value = option_value(spec, options, name);
  if (value.empty()) return std::nullopt;
  return checked_value(spec, *o, value);
}

std::string describe_drivers() {
  std::string out;
  for (const DriverSpec* d : driver_specs()) {
    std::vector<std::string> prefixes, can;
    for (std::string_view p : d->url_prefixes) prefixes.emplace_back(p);
    if (d->caps.read) can.emplace_back("read");
    if (d->caps.write) can.emplace_back("write");
    if (d->caps.random_access) can.emplace_back("random reads");
    if (d->caps.random_write) can.emplace_back("random writes");
    if (d->caps.stat) can.emplace_back("stat");
    if (d->caps.mkdir) can.emplace_back("directories");
    // The small-file pass's operations in flight (docs/small-files.md).
    if (d->caps.stat || d->caps.mkdir) {
      can.emplace_back(d->caps.max_in_flight <= 1
                           ? std::string("small files one at a time")
                           : fmt::format("small files {} in flight{}", d->caps.max_in_flight,
                                         d->caps.file_ops_in_flight ? " on one connection"
                                         : d->caps.threads          ? ""
                                                                    : " (helper processes)"));
    }
    out += fmt::format("{}: {}\n  URLs:    {}\n  does:    {}\n", d->name, d->summary,
                       join(prefixes, ", "), join(can));
    if (d->options.empty()) {
      out += "  options: none\n";
    }
    for (const OptionSpec& o : d->options) {
      out += fmt::format("  {}  {}{}\n", o.name, takes(o),
                         o.fallback.empty() ? "" : fmt::format("; default {}", o.fallback));
      out += fmt::format("      {}\n", o.help);
    }
    out += "\n";
  }
  out += "Give options in a share's section: options = key=value, key=value\n";
  return out;
}

void add_flight(std::map<std::string, std::string>& p, const std::string& op, uint64_t request_size,
                uint64_t depth, uint64_t in_flight_bytes) {
  if (op.empty()) return;
  p["flight_op"] = op;
  p["request_size"] = std::to_string(request_size);
  p["depth"] = std::to_string(depth);
  p["in_flight_bytes"] = std::to_string(in_flight_bytes);
}

std::unique_ptr<Driver> make_driver(const std::string& name) {
  const DriverSpec& spec = driver_spec(name);
  return std::make_unique<CheckedDriver>(spec, spec.make());
}

const char* step_words(Step step, bool writing, const char* connect, const char* close_write) {
  switch (step) {
    case Step::kConnect:
      return connect;
    case Step::kRemove:
      return "removing";
    case Step::kOpenRead:
      return "opening for reading";
    case Step::kOpenWrite:
      return "opening for writing";
    case Step::kClose:
      return close_write;
    case Step::kCloseRead:
      return "closing after reading";
    case Step::kRead:
    case Step::kWrite:
      break;
  }
  return writing ? "writing" : "reading";
}

Error laid_out_file_missing(std::string message, std::string_view dir) {
  return Error(ErrorKind::kIo, std::move(message),
               fmt::format("check that the server agent laid the file out in {}", dir));
}

}  // namespace cp::transfer
