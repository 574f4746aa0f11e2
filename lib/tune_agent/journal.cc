#include "tune_agent/journal.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/text.h"
#include "tune_agent/detail.h"

namespace cp::tune {
namespace json = boost::json;

namespace detail {
std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}
}  // namespace detail

namespace {

using detail::dir_of;

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

json::value action_json(const Action& a) {
  json::object o;
  o["kind"] = a.kind;
  if (a.kind == "run") {
    json::array argv;
    for (const auto& w : a.argv) argv.push_back(json::value(w));
    o["argv"] = std::move(argv);
  } else {
    o["path"] = a.path;
    if (a.kind == "write") o["content"] = a.content;
  }
  if (a.sudo) o["sudo"] = true;
  return o;
}

// Throws (Boost.JSON's or std::out_of_range) on a wrong or missing field:
// the caller refuses the file as malformed.
Action action_from(const json::value& v) {
  const auto& o = v.as_object();
  Action a;
  a.kind = std::string(o.at("kind").as_string());
  if (a.kind == "run") {
    for (const auto& w : o.at("argv").as_array()) a.argv.emplace_back(w.as_string());
  } else {
    a.path = std::string(o.at("path").as_string());
    if (a.kind == "write") a.content = std::string(o.at("content").as_string());
  }
  a.sudo = o.contains("sudo") && o.at("sudo").as_bool();
  return a;
}

// An action as a refusal shows it: short, whatever the journal held.
std::string shown(const Action& a) {
  std::string s;
  if (a.kind == "run") {
    s = "run: " + shell_join(a.argv);
  } else {
    s = fmt::format("{}: {}{}", a.kind, a.path,
                    a.kind == "write" ? fmt::format(" ({} bytes)", a.content.size()) : "");
  }
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

// ---- the shapes a knob's mechanism produces --------------------------------

// A device, disk or interface name: no '/', no leading '.' or '-'.
bool plain_name(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max || s.front() == '.' || s.front() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
           c == ':';
  });
}

bool digits(const std::string& s) {
  return !s.empty() && s.size() <= 12 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool dev_path(const std::string& s) {
  return s.rfind("/dev/", 0) == 0 && plain_name(s.substr(5), 32);
}

// An absolute path without '.', '..' or empty components.
bool clean_absolute(const std::string& p) {
  if (p.size() < 2 || p.size() > 4096 || p.front() != '/' || p.back() == '/') return false;
  if (p.find('\0') != std::string::npos || p.find('\n') != std::string::npos) return false;
  for (const char* bad : {"//", "/./", "/../"}) {
    if (p.find(bad) != std::string::npos) return false;
  }
  const std::string last = base_of(p);
  return last != "." && last != "..";
}

// A sysfs or procfs value: one line, short.
bool one_line(const std::string& c) {
  return !c.empty() && c.size() <= 256 && c.back() == '\n' && c.find('\n') == c.size() - 1 &&
         c.find('\0') == std::string::npos;
}

bool runs(const Action& a, const std::vector<std::string>& argv) {
  return a.kind == "run" && a.argv == argv;
}

// Why `e`'s actions are not the shape `k`'s mechanism produces; "" when they are.
std::string shape_error(const Knob& k, const JournalEntry& e, const std::string& fs_root,
                        const Action** bad) {
  const auto& rev = e.revert;
  auto count = [&](size_t n) {
    if (rev.size() == n) return std::string();
    if (!rev.empty()) *bad = &rev.back();
    return fmt::format("{} restores with {} action(s), not {}", k.name, n, rev.size());
  };
  auto wrong = [&](size_t i, const std::string& want) {
    *bad = &rev[i];
    return fmt::format("{} restores with {}", k.name, want);
  };
  switch (k.mechanism) {
    case Mechanism::kReadahead: {
      if (auto c = count(1); !c.empty()) return c;
      const auto& v = rev[0].argv;
      if (!(rev[0].kind == "run" && v.size() == 4 && v[0] == "blockdev" && v[1] == "--setra" &&
            digits(v[2]) && v[3] == e.target && dev_path(e.target))) {
        return wrong(0, "`blockdev --setra SECTORS /dev/DISK` on its target");
      }
      return {};
    }
    case Mechanism::kWriteCache: {
      if (auto c = count(1); !c.empty()) return c;
      if (!dev_path(e.target) || !(runs(rev[0], {"hdparm", "-W", "0", e.target}) ||
                                   runs(rev[0], {"hdparm", "-W", "1", e.target}))) {
        return wrong(0, "`hdparm -W 0|1 /dev/DISK` on its target");
      }
      return {};
    }
    case Mechanism::kQueueAttr: {
      if (auto c = count(1); !c.empty()) return c;
      const std::string prefix = fs_root + "/sys/block/";
      const std::string& p = rev[0].path;
      const std::string disk =
          p.rfind(prefix, 0) == 0
              ? p.substr(prefix.size(), p.find('/', prefix.size()) - prefix.size())
              : std::string();
      if (!(rev[0].kind == "write" && plain_name(disk, 32) &&
            p == prefix + disk + "/queue/" + k.param && p == e.target &&
            one_line(rev[0].content))) {
        return wrong(0, "one line written to /sys/block/DISK/queue/" + k.param);
      }
      return {};
    }
    case Mechanism::kSysctl: {
      if (auto c = count(1); !c.empty()) return c;
      if (!(rev[0].kind == "write" && rev[0].path == fs_root + detail::sysctl_path(k.param) &&
            e.target == k.param && one_line(rev[0].content))) {
        return wrong(0, "one line written to " + detail::sysctl_path(k.param));
      }
      return {};
    }
    case Mechanism::kMtu: {
      if (auto c = count(1); !c.empty()) return c;
      const auto& v = rev[0].argv;
      if (!(plain_name(e.target, 15) && v.size() == 7 &&
            runs(rev[0], {"ip", "link", "set", "dev", e.target, "mtu", v[6]}) && digits(v[6]))) {
        return wrong(0, "`ip link set dev IF mtu N` on its target");
      }
      return {};
    }
    case Mechanism::kSamba: {
      if (auto c = count(3); !c.empty()) return c;
      const std::string dropin = dir_of(e.target) + "/chokepoint-tune.conf";
      if (!clean_absolute(e.target) || rev[0].kind != "write" || rev[0].path != e.target) {
        return wrong(0, "its smb.conf's original text written back to that file");
      }
      if (!((rev[1].kind == "write" || rev[1].kind == "remove") && rev[1].path == dropin)) {
        return wrong(1, "the drop-in " + dropin + " written back or removed");
      }
      if (!runs(rev[2], {"smbcontrol", "-s", e.target, "smbd", "reload-config"})) {
        return wrong(2, "`smbcontrol -s SMB.CONF smbd reload-config`");
      }
      return {};
    }
    case Mechanism::kAfpConf: {
      if (auto c = count(2); !c.empty()) return c;
      if (!clean_absolute(e.target) || rev[0].kind != "write" || rev[0].path != e.target) {
        return wrong(0, "its afp.conf's original text written back to that file");
      }
      // A restart given with --afp-restart is a shell command: the live
      // session runs it, a journal never does.
      if (!runs(rev[1], {"systemctl", "restart", "netatalk"})) {
        return wrong(1, "`systemctl restart netatalk` (a journal runs no shell command)");
      }
      return {};
    }
    case Mechanism::kClientOption:
      break;
  }
  return fmt::format("{} changes no host", k.name);
}

// ---- files -----------------------------------------------------------------

// The journal's directory, created 0700 where missing, opened without
// following a symlink, and checked: this user's, writable by nobody else.
int open_state_dir(const std::string& dir) {
  std::string at;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    at = dir.substr(0, pos);
    if (!at.empty() && ::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Error(ErrorKind::kIo,
                  fmt::format("cannot create the tune journal's directory {}: {}", at,
                              std::strerror(errno)),
                  "set CHOKEPOINT_TUNE_STATE_DIR (or XDG_STATE_HOME) to a directory of your own");
    }
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  std::string why;
  if (fd < 0) {
    why = errno == ELOOP || errno == ENOTDIR ? "it is a symlink or not a directory"
                                             : std::strerror(errno);
  } else if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (st.st_uid != ::geteuid()) {
    why = fmt::format("it belongs to uid {}, not to this agent's uid {}", st.st_uid, ::geteuid());
  } else if (st.st_mode & 022) {
    why = fmt::format("others may write it (mode {:o})", st.st_mode & 07777);
  }
  if (!why.empty()) {
    if (fd >= 0) ::close(fd);
    throw Error(ErrorKind::kUnsupported,
                fmt::format("the tune journal's directory {} is unsafe: {}", dir, why),
                fmt::format("make it yours and 0700 (chmod 700 {}), or set "
                            "CHOKEPOINT_TUNE_STATE_DIR to a directory of your own",
                            dir));
  }
  return fd;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The journal's text, or why it is not read.
std::optional<Refused> read_journal(int dfd, const std::string& name, std::string* text) {
  Fd f{::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  auto refuse = [](Refusal r, std::string d) { return Refused{r, "", "", std::move(d)}; };
  if (f.fd < 0) {
    if (errno == ELOOP) return refuse(Refusal::kSymlink, "the journal is a symlink");
    return refuse(Refusal::kNotRegular, fmt::format("cannot open it: {}", std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return refuse(Refusal::kNotRegular, "the journal is not a regular file");
  }
  if (st.st_uid != ::geteuid()) {
    return refuse(Refusal::kNotOwner, fmt::format("the journal belongs to uid {}, not to uid {}",
                                                  st.st_uid, ::geteuid()));
  }
  if (st.st_mode & 077) {
    return refuse(Refusal::kMode,
                  fmt::format("the journal has mode {:o}, not 600", st.st_mode & 07777));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxJournalBytes) {
    return refuse(Refusal::kTooLarge,
                  fmt::format("the journal holds {} bytes, over {}", st.st_size, kMaxJournalBytes));
  }
  text->clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return refuse(Refusal::kNotRegular, std::strerror(errno));
    if (n == 0) break;
    text->append(buf, static_cast<size_t>(n));
    if (text->size() > kMaxJournalBytes) {
      return refuse(Refusal::kTooLarge, "the journal grew past the limit while read");
    }
  }
  return std::nullopt;
}

std::string random_hex() {
  unsigned char b[8] = {};
  if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    throw Error(ErrorKind::kIo, fmt::format("getrandom: {}", std::strerror(errno)));
  }
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

// `text` as the file `name` in `dfd`: an O_EXCL temp file of a random name,
// 0600, fsynced, renamed over, the directory fsynced.
void write_replacing(int dfd, const std::string& name, const std::string& text,
                     const std::string& path) {
  const std::string tmp = "." + name + ".tmp-" + random_hex();
  Fd f{::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
  auto fail = [&](const char* what) {
    const int e = errno;
    ::unlinkat(dfd, tmp.c_str(), 0);
    throw Error(ErrorKind::kIo, fmt::format("cannot write the tune journal {} ({}): {}", path, what,
                                            std::strerror(e)));
  };
  if (f.fd < 0) fail("create");
  if (::fchmod(f.fd, 0600) != 0) fail("chmod");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(f.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write");
    done += static_cast<size_t>(n);
  }
  if (::fsync(f.fd) != 0) fail("fsync");
  if (::renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) fail("rename");
  ::fsync(dfd);
}

}  // namespace

const char* to_string(Refusal r) {
  static constexpr EnumName<Refusal> kNames[] = {
      {Refusal::kSymlink, "symlink"},          {Refusal::kNotRegular, "not_regular"},
      {Refusal::kNotOwner, "not_owner"},       {Refusal::kMode, "mode"},
      {Refusal::kTooLarge, "too_large"},       {Refusal::kMalformed, "malformed"},
      {Refusal::kUnknownKnob, "unknown_knob"}, {Refusal::kActionShape, "action_shape"}};
  return name_in(kNames, r, "?");
}

std::optional<Refused> check_entry(const JournalEntry& e, const std::string& fs_root) {
  const auto& table = knob_table();
  const auto k =
      std::find_if(table.begin(), table.end(), [&](const Knob& x) { return x.name == e.knob; });
  if (k == table.end() || k->mechanism == Mechanism::kClientOption) {
    return Refused{Refusal::kUnknownKnob, e.knob, "",
                   fmt::format("'{}' is no knob of the table that changes a host; nothing of "
                               "this entry was run",
                               e.knob.substr(0, 80))};
  }
  const Action* bad = nullptr;
  const std::string why = shape_error(*k, e, fs_root, &bad);
  if (why.empty()) return std::nullopt;
  return Refused{Refusal::kActionShape, e.knob, bad ? shown(*bad) : "",
                 why + "; nothing of this entry was run: restore " + e.target.substr(0, 200) +
                     " by hand if it needs it"};
}

std::string journal_dir() {
  if (const char* d = std::getenv("CHOKEPOINT_TUNE_STATE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/chokepoint";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) {
    home = h;
  } else if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir && *pw->pw_dir) {
    home = pw->pw_dir;
  }
  if (home.empty() || home == "/") {
    throw Error(ErrorKind::kUnsupported,
                "no directory for the tune journal: HOME is unset and this user has no home",
                "set HOME, XDG_STATE_HOME or CHOKEPOINT_TUNE_STATE_DIR for the agent's user");
  }
  return home + "/.local/state/chokepoint";
}

std::string journal_path() {
  return journal_dir() + "/tune-journal-" + detail::host_name() + ".json";
}

struct Journal::Loaded {
  bool file_refused = false;
  std::vector<JournalEntry> entries;  // passed check_entry
  std::vector<std::string> raw;       // refused entries, as JSON
  std::vector<Refused> refused;
};

Journal::Journal(std::string path, std::string fs_root)
    : path_(std::move(path)), fs_root_(std::move(fs_root)) {}

Journal::~Journal() { unlock(); }

bool Journal::lock(bool wait) {
  if (lock_fd_ >= 0) return true;
  Fd dir{open_state_dir(dir_of(path_))};
  const std::string name = base_of(path_) + ".lock";
  Fd fd{::openat(dir.fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)};
  struct stat st {};
  if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot use the tune journal's lock {}.lock: {}", path_,
                            fd.fd < 0 ? std::strerror(errno) : "not a regular file of this user"),
                "remove it; chokepoint creates it again");
  }
  if (::flock(fd.fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) return false;
  lock_fd_ = fd.fd;
  fd.fd = -1;
  return true;
}

void Journal::unlock() {
  if (lock_fd_ < 0) return;
  ::close(lock_fd_);  // releases the flock
  lock_fd_ = -1;
}

Journal::Loaded Journal::load() const {
  Loaded out;
  Fd dir{open_state_dir(dir_of(path_))};
  struct stat st {};
  if (::fstatat(dir.fd, base_of(path_).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return out;
  std::string text;
  if (auto r = read_journal(dir.fd, base_of(path_), &text)) {
    out.file_refused = true;
    out.refused.push_back(*r);
    return out;
  }
  if (trim(text).empty()) return out;
  try {
    const json::value v = json::parse(text);
    const auto& doc = v.as_object();
    if (doc.contains("version") && doc.at("version").to_number<int64_t>() != 1) {
      throw std::runtime_error("version is not 1");
    }
    for (const auto& e : doc.at("entries").as_array()) {
      const auto& o = e.as_object();
      JournalEntry j;
      j.knob = std::string(o.at("knob").as_string());
      j.target = std::string(o.at("target").as_string());
      j.original = std::string(o.at("original").as_string());
      for (const auto& a : o.at("revert").as_array()) j.revert.push_back(action_from(a));
      if (auto r = check_entry(j, fs_root_)) {
        out.refused.push_back(*r);
        out.raw.push_back(json::serialize(e));
      } else {
        out.entries.push_back(std::move(j));
      }
    }
  } catch (const std::exception& e) {
    out = Loaded{};
    out.file_refused = true;
    out.refused.push_back({Refusal::kMalformed, "", "",
                           fmt::format("the journal is not chokepoint's ({})", e.what())});
  }
  return out;
}

void Journal::adopt() {
  if (adopted_) return;
  Loaded l = load();
  if (!l.refused.empty()) {
    const Refused& r = l.refused.front();
    throw Error(
        ErrorKind::kUnsupported,
        fmt::format("the tune journal {} holds what this agent will not run ({}{}: {})", path_,
                    to_string(r.reason), r.knob.empty() ? "" : ", " + r.knob, r.detail),
        fmt::format("restore by hand what it names (nothing of it was run), then "
                    "remove {}",
                    path_));
  }
  entries_ = std::move(l.entries);
  adopted_ = true;
}

void Journal::save() const {
  Fd dir{open_state_dir(dir_of(path_))};
  const std::string name = base_of(path_);
  if (entries_.empty() && refused_raw_.empty()) {
    ::unlinkat(dir.fd, name.c_str(), 0);
    return;
  }
  json::array arr;
  for (const auto& e : entries_) {
    json::array rev;
    for (const auto& a : e.revert) rev.push_back(action_json(a));
    arr.push_back(json::object{{"knob", e.knob},
                               {"target", e.target},
                               {"original", e.original},
                               {"revert", std::move(rev)}});
  }
  for (const auto& raw : refused_raw_) arr.push_back(json::parse(raw));
  json::object doc{{"version", 1},
                   {"host", detail::host_name()},
                   {"pid", static_cast<int64_t>(::getpid())},
                   {"entries", std::move(arr)}};
  write_replacing(dir.fd, name, json::serialize(doc) + "\n", path_);
}

std::vector<JournalEntry> Journal::entries() const { return adopted_ ? entries_ : load().entries; }

Resolved Journal::apply(const Knob& knob, const std::string& value, const Where& where) {
  if (!lock(false)) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("another chokepoint tune session holds {}.lock: it has knobs applied "
                            "on this host",
                            path_),
                "wait for it to end, or run `chokepoint tune --revert HOST` once it is gone");
  }
  return apply_resolved(knob, resolve(knob, value, where));
}

Resolved Journal::apply_resolved(const Knob& knob, Resolved r) {
  if (!lock(false)) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("another chokepoint tune session holds {}.lock", path_),
                "wait for it to end, or run `chokepoint tune --revert HOST` once it is gone");
  }
  check_privilege(knob, r.apply);
  check_privilege(knob, r.revert);
  adopt();
  const bool known = std::any_of(entries_.begin(), entries_.end(), [&](const JournalEntry& e) {
    return e.knob == knob.name && e.target == r.target;
  });
  if (!known) {
    entries_.push_back({knob.name, r.target, r.original, r.revert});
    save();
  }
  run_actions(knob, r.apply);
  return r;
}

std::vector<Reverted> Journal::revert_entries(std::vector<Refused>* refused) {
  std::vector<Reverted> out;
  std::vector<JournalEntry> left;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    Reverted r{it->knob, it->target, it->original, {}};
    try {
      run_actions(find_knob(it->knob), it->revert);
    } catch (const Error& e) {
      r.error = describe(e);
      left.insert(left.begin(), *it);
    }
    out.push_back(std::move(r));
  }
  entries_ = std::move(left);
  save();
  if (refused) *refused = refused_;
  if (entries_.empty() && refused_raw_.empty()) unlock();
  return out;
}

std::vector<Reverted> Journal::revert_all() {
  if (!lock(false)) {
    throw Error(ErrorKind::kUnsupported,
                fmt::format("a live chokepoint tune session holds {}.lock: it reverts its own "
                            "changes when it ends",
                            path_),
                "wait for that session to end (or stop it with Ctrl-C), then retry");
  }
  if (!adopted_) {
    Loaded l = load();
    refused_ = l.refused;
    if (l.file_refused) return {};  // nothing of it runs; the file stays as found
    entries_ = std::move(l.entries);
    refused_raw_ = std::move(l.raw);
    adopted_ = true;
  }
  return revert_entries(nullptr);
}

StartReport Journal::revert_stale() {
  StartReport out;
  out.journal = path_;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) return out;
  if (!lock(false)) return out;  // a live session holds it
  out.reverted = revert_all();
  out.refused = refused_;
  // The next user of this object reads the file again.
  unlock();
  adopted_ = false;
  entries_.clear();
  refused_raw_.clear();
  refused_.clear();
  return out;
}

}  // namespace cp::tune
