// File-transfer drivers: one per protocol (ftp, smb, afp, nfs, path, null),
// each behind this small interface. Each driver declares itself as data, the
// way a fio ioengine does (its ioengine_ops: name, flags, options): a
// DriverSpec with its URL prefixes, capabilities, options and what the plan,
// the stages, the verdict and reports need to know of its protocol (display
// name, hints, negotiated-status request), listed in registry.cc's table or
// registered at run time (register_driver). The plan is checked against that data when it
// is read; `chokepoint drivers` prints it. The agent on the client opens a
// session to a share, then streams files through it with bounded buffers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
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
// write (the protocol stages get and put); the size scan's random cells need the
// random ones (File::pread/pwrite; without them the cell is skipped). A
// driver's spec names only what differs from these defaults.
struct Capabilities {
  bool read = true;
  bool write = true;
  bool random_access = false;  // pread at offsets (the transfer-size scan's random reads)
  bool random_write = false;   // pwrite at offsets (its random writes)
  // The small-file pass over a share (docs/small-files.md): Session::stat
  // (a file's size and mtime by its path) and Session::mkdir/rmdir.
  bool stat = false;
  bool mkdir = false;
  // Operations the pass may keep in flight at once (its `in_flight`, capped
  // here); 1: strictly one at a time (one control connection, FTP; AFP as
  // chokepoint speaks it). How they are kept is the driver's (small-files.md).
  unsigned max_in_flight = 1;
  // Whether one session keeps them in flight itself (Session::run_file_ops:
  // several operations on its one connection, as libnfs's async calls do);
  // false: the pass opens a session per operation in flight.
  bool file_ops_in_flight = false;
  // Whether its sessions may run in threads side by side; false: the pass
  // runs each extra one in a helper process (transfer/forked_session.h).
  bool threads = true;
  // Whether a file reads back the bytes written to it; false: its reads give
  // the size alone (null keeps nothing), so the small-file pass checks only
  // the size.
  bool keeps_data = true;
  // The fewest network round trips one small-file operation costs through
  // this driver, per phase (create, stat, read, delete; files::kPhases
  // order); 0: not over the network, or unknown. The verdict's
  // files.round_trips holds a phase's operations/s against
  // in flight / (round trips x RTT) with these (docs/small-files.md).
  std::array<unsigned char, 4> file_round_trips{};
  // What it lacks to read or write (at random offsets when `random`) in
  // words ("random reads"); null when it can. The size scan's stage and the agent
  // both ask this before a cell.
  const char* lacks(bool write, bool random) const;
};

enum class Mode { kRead, kWrite };

// What Session::stat tells of a file.
struct FileInfo {
  uint64_t size = 0;  // bytes
  int64_t mtime = 0;  // seconds since 1970-01-01 UTC; 0 when the protocol gives none
  bool is_dir = false;
};

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

// One phase of the small-file pass for a session that keeps several of its
// operations in flight itself (Capabilities::file_ops_in_flight). Each
// operation is the same chain as the pass's one-at-a-time calls: kCreate
// opens a new file, writes `data` and closes; kStat stats it by path; kRead
// opens it, reads it to its end (up to data.size() + 1 bytes: a longer file
// shows) and closes; kRemove removes it.
enum class FileOp { kCreate, kStat, kRead, kRemove };
struct FileOps {
  FileOp op = FileOp::kStat;
  unsigned depth = 1;          // operations in flight at most
  std::span<const char> data;  // kCreate: each file's bytes; kRead: what each holds
  // The next operation to start: its id and path; false when there is none
  // or the phase stops (its budget, cancel, an error).
  std::function<bool(uint64_t& id, std::string& path)> next;
  // An operation's chain ended: `error` null when it went well (kRead:
  // `got` holds the bytes read).
  std::function<void(uint64_t id, std::span<const char> got, std::exception_ptr error)> ended;
};

// A logged-in connection to a share.
// The network round trips one small-file operation costs through a session,
// in one phase: `total` the calls it waits on one after another, `serial`
// those of them that operations in flight cannot overlap, because they take
// turns on the connection (NFSv4.0's OPEN and CLOSE: one open-owner's
// sequence). 0 total: unknown.
struct RoundTrips {
  unsigned total = 0;
  unsigned serial = 0;
};

class Session {
 public:
  virtual ~Session() = default;
  // `path` is relative to the share's root ("run-1/a.dat").
  virtual std::unique_ptr<File> open(const std::string& path, Mode mode, uint64_t size_hint) = 0;
  virtual void remove(const std::string& path) = 0;
  // The small-file pass's calls (Capabilities::stat, ::mkdir). A driver or
  // server that cannot: Error(kUnsupported) naming what and why (the
  // defaults), which the pass turns into a skipped phase with that reason.
  // stat: a file's size and mtime by its path; mkdir: one directory whose
  // parent exists (an existing one is an error); rmdir: an empty directory.
  virtual FileInfo stat(const std::string& path);
  virtual void mkdir(const std::string& path);
  virtual void rmdir(const std::string& path);
  // Runs one phase's operations with up to ops.depth in flight on this
  // session until ops.next() has no more and each started one has ended
  // (Capabilities::file_ops_in_flight drivers only; the default is a bug
  // to call). Throws when the session cannot go on (the connection failed or
  // went silent, cancelled): operations started then may not have ended.
  virtual void run_file_ops(FileOps& ops);
  // The round trips of one small-file operation as this session makes them,
  // per phase (create, stat, read, delete): what the negotiated version
  // costs. All 0 (the default): the driver table's
  // Capabilities::file_round_trips, none serial.
  virtual std::array<RoundTrips, 4> file_round_trips() const { return {}; }
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

// The driver of a session type S whose constructor S(share, cancel) connects
// and logs in (ftp, smb, nfs, afp).
template <class S>
class SessionDriver : public Driver {
 public:
  explicit SessionDriver(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<Session> connect(const Share& share, const CancelToken& cancel) override {
    return std::make_unique<S>(share, cancel);
  }

 private:
  std::string name_;
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

// A server setting that caps how much one request moves (the verdict's hint
// when the server's config sets it below the server's own default).
struct ServerLimit {
  std::string_view key{};       // as the server's config names it: "smb2 max read"
  std::string_view op{};        // "read" | "write" | "": both
  uint64_t server_default = 0;  // bytes, the server's default
};

// What the verdict knows of a protocol beyond the generic rules
// (analysis/protocol_rules.cc): the hints its findings may give.
struct ProtocolHints {
  // Settings in the server's config that cap one request. Read from the
  // server's host facts, which hold Samba's [global] section (the only
  // server config chokepoint collects; another server's needs its probe).
  std::span<const ServerLimit> server_limits{};
  // Its sessions report what the server lets one request move
  // (`max_read_size`, `max_write_size` properties): a hint when under 1 MiB
  // and no server setting explains it.
  bool negotiated_request_size = false;
  // A Samba configuration can change its figures (smb; path, which may be an
  // SMB mount): `compare` ties a change of the server's Samba config to its rows.
  bool samba_config = false;
  // Its client caches file data (a mounted filesystem's page cache): a read
  // over RAM faster than TCP is that cache, not an anomaly.
  bool client_cache = false;
};

// What the server says a client negotiated, for a protocol whose client
// library does not tell (smb: smbd's view through `smbstatus`). The protocol
// stage asks the server agent once per share and adds the answer to every
// sample's properties.
struct NegotiatedQuery {
  std::string_view request{};  // the server agent's request type ("smb_status"); "": none
  // The request's body (JSON text), given the plan's server config file
  // ([server] samba_conf; "" = the running server's).
  std::string (*body)(const std::string& server_conf) = nullptr;
  // The properties the reply (JSON text) gives the client at
  // `client_address` ("" = any). When it cannot say, one "<name>_negotiated"
  // = "unknown: why" entry; otherwise the stage drops the session's own
  // "negotiated" note.
  std::map<std::string, std::string> (*read)(const std::string& reply,
                                             const std::string& client_address) = nullptr;
};

struct DriverSpec {
  std::string_view name{};     // "smb": the plan's driver, the agent's, a stage's layer
  std::string_view summary{};  // one line: what it speaks, through what
  // The share URLs it takes, by their start: "smb://"; the path driver's
  // "/" and "file://".
  std::span<const std::string_view> url_prefixes{};
  Capabilities caps{};
  std::span<const OptionSpec> options{};
  std::unique_ptr<Driver> (*make)() = nullptr;
  // How reports, the verdict and `compare` name it: "SMB", "mounted path".
  std::string_view display{};
  // Whether its share is a directory on the server (the plan's server_dir)
  // whose files the server agent lays out, checks and removes; false for a
  // driver with no server (null).
  bool server_files = true;
  ProtocolHints hints{};
  NegotiatedQuery negotiated{};
  // The TCP port its URLs default to (0: none, or not over TCP): the server
  // agent tells the file server by the connection it holds on that port.
  int default_port = 0;
};

// Every driver this build has: the built-in table (registry.cc), then those
// registered at run time, in registration order.
std::span<const DriverSpec* const> driver_specs();
const std::vector<std::string>& driver_names();
// Adds a driver to the table (a test's, or a plug-in's), before the table is
// first read; a second driver of one name is a bug (CHECK). DriverRegistration
// does it from a file's static initializer, the way a fio engine registers.
void register_driver(const DriverSpec& spec);
struct DriverRegistration {
  explicit DriverRegistration(const DriverSpec& spec) { register_driver(spec); }
};
// The spec of a driver; throws Error(kConfig) naming the known ones.
const DriverSpec& driver_spec(std::string_view name);
// The spec of a driver; null when this build has none of that name (a stored
// run measured by another build).
const DriverSpec* find_driver_spec(std::string_view name);
// How reports name a protocol layer: its driver's display name, else the
// layer in capitals (a driver this build lacks).
std::string protocol_display(std::string_view name);
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
