// File-transfer drivers: one per protocol (ftp, smb, afp, nfs, path, null),
// each behind this small interface. Each driver declares itself as data, the
// way a fio ioengine does (its ioengine_ops: name, flags, options): a
// DriverSpec with its URL prefixes, capabilities and options, listed in one
// explicit table (registry.cc). The plan is checked against that data when it
// is read; `chokepoint drivers` prints it. The agent on the client opens a
// session to a share, then streams files through it with bounded buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace cp::transfer {

// A share as the plan declares it. The password never comes from argv, the
// database or logs: the orchestrator resolves it (env var, 0600 file, prompt)
// and passes it to the agent over the channel only.
struct Share {
  std::string name;      // the plan's name for it ("smb-ram")
  std::string url;       // "ftp://host/dir", "smb://host/share", "afp://host/vol", "/mnt/x"
  std::string user;      // empty: from the URL, else anonymous/guest
  std::string password;  // secret
  std::map<std::string, std::string> options;  // driver options ("depth" = "8", ...)
};

// What a driver can do. The plan refuses a share whose driver cannot read and
// write (the protocol stages get and put); the sweep's random cells need the
// random ones (File::pread/pwrite; without them the cell is skipped).
struct Capabilities {
  bool read = true;
  bool write = true;
  bool random_access = false;  // pread at offsets (the transfer-size sweep's random reads)
  bool random_write = false;   // pwrite at offsets (its random writes)
  // What it lacks to read or write (at random offsets when `random`) in
  // words ("random reads"); null when it can. The sweep's stage and the agent
  // both ask this before a cell.
  const char* lacks(bool write, bool random) const;
};

enum class Mode { kRead, kWrite };

// One open remote file. Sequential unless the driver has random_access.
class File {
 public:
  virtual ~File() = default;
  // Reads up to n bytes; 0 at end of file. Throws cp::Error on failure.
  virtual size_t read(char* buf, size_t n) = 0;
  // Reads at an offset (random_access drivers only).
  virtual size_t pread(char* buf, size_t n, uint64_t offset);
  // Writes at an offset (random_write drivers only).
  virtual void pwrite(const char* buf, size_t n, uint64_t offset);
  // Writes all n bytes (may buffer up to the driver's bounded window).
  virtual void write(const char* buf, size_t n) = 0;
  // Writing without a copy: a buffer for the file's next bytes (at most `max`,
  // at least 1), which the caller fills and hands over with commit_write(n),
  // n <= its size; nothing else may come between the two. A driver that
  // stages data in request buffers of its own gives the free part of one, so
  // the bytes are not copied again; the default is a buffer of this File
  // that commit_write passes to write().
  virtual std::span<char> write_buffer(size_t max);
  virtual void commit_write(size_t n);
  // Flushes, waits for every outstanding request, closes; throws on failure.
  virtual void close() = 0;

 private:
  std::vector<char> staged_;  // the default write_buffer's
};

// A logged-in connection to a share.
class Session {
 public:
  virtual ~Session() = default;
  // `path` is relative to the share's root ("run-1/a.dat").
  virtual std::unique_ptr<File> open(const std::string& path, Mode mode, uint64_t size_hint) = 0;
  virtual void remove(const std::string& path) = 0;
  // What was negotiated, stored with each sample because it changes the
  // throughput (SMB dialect, signing, encryption; AFP version and UAM; ...).
  virtual std::map<std::string, std::string> properties() const { return {}; }
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual std::string name() const = 0;
  // Connects and logs in. Errors say what failed and how to fix it (bad
  // login, unknown share, closed port, ...). `cancel` must outlive the
  // session: drivers may keep it to abandon waits (the agent passes its own).
  virtual std::unique_ptr<Session> connect(const Share& share, const CancelToken& cancel) = 0;
};

// --- What a driver declares -----------------------------------------------

// How an option's value is read. Units: kSize bytes ("4MiB"), kSeconds
// seconds ("30s", "500ms"), kRate bit/s ("1gbit").
enum class OptionType { kText, kCount, kSize, kSeconds, kRate, kFlag, kChoice };

struct OptionSpec {
  std::string_view name{};
  OptionType type = OptionType::kText;
  // The default as a user would write it; "" when there is none or the
  // driver chooses at run time (the help says how).
  std::string_view fallback{};
  // Inclusive bounds of a kCount, kSize, kSeconds or kRate value in its unit;
  // max 0: no upper bound.
  double min = 0, max = 0;
  // kChoice: the allowed values, '|'-separated. Other types: words taken
  // besides a value of the type ("auto").
  std::string_view words{};
  std::string_view help{};  // one line
};

struct DriverSpec {
  std::string_view name{};     // "smb": the plan's driver, the agent's
  std::string_view summary{};  // one line: what it speaks, through what
  // The share URLs it takes, by their start: "smb://"; the path driver's
  // "/" and "file://".
  std::span<const std::string_view> url_prefixes{};
  Capabilities caps{};
  std::span<const OptionSpec> options{};
  std::unique_ptr<Driver> (*make)() = nullptr;
};

// Every driver this build has, in one explicit table (registry.cc).
std::span<const DriverSpec* const> driver_specs();
const std::vector<std::string>& driver_names();
// The spec of a driver; throws Error(kConfig) naming the known ones.
const DriverSpec& driver_spec(std::string_view name);
// The driver whose URL prefix starts `url`; throws Error(kConfig) naming the
// URL forms every driver takes.
const DriverSpec& driver_for_url(std::string_view url);
// The option `name` the spec declares; null when it has none.
const OptionSpec* find_option(const DriverSpec& spec, std::string_view name);
// Checks share options against the spec: each one known, of its type, in its
// range or among its words. Throws Error(kConfig) naming the option, the
// driver and what it takes.
void check_options(const DriverSpec& spec, const std::map<std::string, std::string>& options);
// A declared option's value in `options`, else its declared default ("" when
// it has none). Naming an undeclared option is a bug (CHECK).
std::string option_value(const DriverSpec& spec, const std::map<std::string, std::string>& options,
                         std::string_view name);
// A declared numeric option (kCount, kSize, kSeconds, kRate) read in its unit
// (a count, bytes, seconds, bit/s): `options`' value, else its declared
// default; nullopt when neither gives a number (no default, or one of its
// words like "auto"). A value of the wrong type or out of range throws the
// same Error(kConfig) as check_options: the table is the one home of the
// ranges. Naming an undeclared or non-numeric option is a bug (CHECK).
std::optional<double> option_number(const DriverSpec& spec,
                                    const std::map<std::string, std::string>& options,
                                    std::string_view name);
// The table as text, for `chokepoint drivers` and the README: each driver's
// URL forms, capabilities and options with their defaults and help.
std::string describe_drivers();

// The driver for a name; throws Error(kConfig) naming the known ones. Its
// connect() checks the share's options against the spec first.
std::unique_ptr<Driver> make_driver(const std::string& name);

}  // namespace cp::transfer
