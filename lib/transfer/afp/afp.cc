// The afp driver: status on a short connection (versions, UAMs), then a
// DSI session: login, FPGetSrvrParms (does the volume exist?), FPOpenVol,
// and files through FPOpenFork with `depth` FPReadExt/FPWriteExt requests
// in flight. The request bitmaps match afpcmd's (the captures' client), so
// the replay tests can hold our requests against a real client's bytes.
#include "transfer/afp/afp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/text.h"
#include "core/units.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/afp_link.h"
#include "transfer/afp/afp_uam.h"
#include "transfer/afp/dsi.h"
#include "transfer/driver.h"
#include "transfer/option_table.h"
#include "transfer/registry.h"
#include "transfer/share_url.h"

namespace cp::transfer {
namespace afp {
namespace {

constexpr unsigned kMaxDepth = 64;
// Cap on the request size whatever quantum a server announces (memory is
// depth x this at most).
constexpr uint64_t kMaxRequestSize = 16u << 20;
// Our DSI attention quantum (bytes of attention data we accept), as afpcmd.
constexpr uint32_t kAttentionQuantum = 1024;
// How often the idle-time thread looks at the connection (seconds, at most).
constexpr double kKeepaliveCheck = 5;
// Bitmaps: afpcmd's, so replayed captures see the same requests.
constexpr uint16_t kOpenVolBitmap =
    kVolAttributes | kVolSignature | kVolCreateDate | kVolID | kVolName | kVolBlockSize;  // 0x0927
// Seconds to spend on the logout when a session ends.
constexpr double kGoodbyeTimeout = 10;

}  // namespace

AfpUrl parse_afp_url(std::string_view url) {
  const ShareUrl u = parse_share_url(url);
  auto bad = [&](std::string_view why) {
    throw Error(ErrorKind::kConfig, fmt::format("AFP share URL '{}' {}", redact_url(url), why),
                "write it as afp://[user[;AUTH=uam]@]host[:port]/volume, like "
                "afp://alice;AUTH=DHX2@nas/Data or afp://nas/Public for a guest login");
  };
  if (u.scheme != "afp") bad("does not start with afp://");
  if (!u.password.empty()) {
    throw Error(ErrorKind::kConfig,
                fmt::format("AFP share URL '{}' carries a password", redact_url(url)),
                "remove it from the URL and give it as the share's password (it would be "
                "stored with the plan and the results otherwise)");
  }
  AfpUrl a;
  a.host = u.host;
  if (u.port) a.port = static_cast<uint16_t>(u.port);
  a.user = u.user;
  const std::string low = lower(a.user);
  if (const size_t at = low.find(";auth="); at != std::string::npos) {
    a.uam = canonical_uam(std::string_view(a.user).substr(at + 6));
    a.user.resize(at);
  }
  std::string_view path = u.path;
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  const size_t slash = path.find('/');
  a.volume = std::string(path.substr(0, slash));
  if (a.volume.empty()) bad("names no volume");
  if (slash != std::string_view::npos) {
    a.dir = std::string(path.substr(slash + 1));
    while (!a.dir.empty() && a.dir.back() == '/') a.dir.pop_back();
    if (!a.dir.empty()) check_relative_path(a.dir);
  }
  return a;
}

AfpOptions parse_afp_options(const std::map<std::string, std::string>& options) {
  check_options(kAfpDriver, options);  // known, of their type, in range (the spec below)
  // Each value, else the table's default, in its unit.
  auto number = [&](std::string_view name) { return option_number(kAfpDriver, options, name); };
  AfpOptions o;
  o.depth = static_cast<unsigned>(*number("depth"));
  o.request_size = static_cast<uint64_t>(number("request_size").value_or(0));
  o.timeout_s = *number("timeout");
  o.connect_timeout_s = *number("connect_timeout");
  o.tickle_s = *number("tickle_interval");
  const std::string uam = option_value(kAfpDriver, options, "uam");
  if (uam != "auto") o.uam = canonical_uam(uam);
  return o;
}

std::string Link::call(std::string_view afp, const std::string& path) {
  dsi::Message m = conn->call(afp);
  if (m.header.error() != kNoErr) throw afp_error(m.header.error(), uint8_t(afp[0]), at(path));
  return std::move(m.payload);
}

void Link::note_flight(const char* op, const std::deque<Req>& q) {
  if (flight_op != op) {
    flight_op = op;
    flight_requests = 0;
    flight_bytes = 0;
  }
  uint64_t bytes = 0;
  for (const Req& r : q) bytes += r.count;
  flight_requests = std::max(flight_requests, q.size());
  flight_bytes = std::max(flight_bytes, bytes);
}

namespace {

class AfpFile : public File {
 public:
  AfpFile(std::shared_ptr<Link> link, std::string path, uint16_t fork, Mode mode, uint64_t size)
      : link_(std::move(link)), path_(std::move(path)), fork_(fork), mode_(mode), size_(size) {
    if (mode_ == Mode::kWrite) chunk_.reserve(link_->request_size);
    link_->flight_op.clear();
  }
  ~AfpFile() override {
    if (closed_) return;
    try {
      abandon();
      link_->conn->call(encode_close_fork(fork_));
    } catch (const Error&) {
    }
  }

  // A reply lands straight in the caller's buffer when the caller asks for
  // at least a whole request, else in one buffer kept for the file.
  size_t read(char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kRead && !closed_);
    for (;;) {
      if (pos_ < cur_len_) {
        const size_t k = std::min(n, cur_len_ - pos_);
        std::memcpy(buf, cur_.data() + pos_, k);
        pos_ += k;
        return k;
      }
      if (eof_ || n == 0) return 0;
      fill();
      if (inflight_.empty()) {
        eof_ = true;
        return 0;
      }
      if (n >= inflight_.front().count) {
        if (const size_t got = take_front(buf)) return got;
        continue;  // the end of the file
      }
      cur_.resize(link_->request_size);
      cur_len_ = take_front(cur_.data());
      pos_ = 0;
    }
  }

  size_t pread(char* buf, size_t n, uint64_t offset) override {
    CP_CHECK(mode_ == Mode::kRead && !closed_);
    std::deque<Req> q;
    uint64_t next = offset;
    const uint64_t end = offset + n;
    size_t done = 0;
    try {
      for (;;) {
        while (q.size() < link_->depth && next < end) {
          const uint64_t count = std::min<uint64_t>(link_->request_size, end - next);
          q.push_back(
              {link_->conn->send_command(encode_read_ext(fork_, next, count)), next, count});
          next += count;
        }
        if (q.empty()) break;
        const Req r = q.front();
        q.pop_front();
        bool eof = false;
        const size_t got = take(r, buf + (r.offset - offset), &eof);
        done = static_cast<size_t>(r.offset - offset + got);
        if (eof) break;
        if (got < r.count) {
          // A short reply without EOF: ask again for the rest, before the others.
          const uint64_t o = r.offset + got, c = r.count - got;
          q.push_front({link_->conn->send_command(encode_read_ext(fork_, o, c)), o, c});
        }
      }
    } catch (...) {
      for (const auto& r : q) link_->conn->discard(r.id);
      throw;
    }
    for (const auto& r : q) link_->conn->discard(r.id);
    return done;
  }

  void write(const char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kWrite && !closed_);
    if (failed_) throw earlier_failure();
    struct Guard {  // any failure leaves a hole in the file: no later write may hide it
      bool& failed;
      bool ok = false;
      ~Guard() { failed = failed || !ok; }
    } guard{failed_};
    const size_t rs = link_->request_size;
    while (n > 0) {
      if (chunk_.empty() && n >= rs) {  // whole requests straight from the caller's buffer
        send_chunk(std::string_view(buf, rs));
        buf += rs;
        n -= rs;
        continue;
      }
      const size_t k = std::min(n, rs - chunk_.size());
      chunk_.append(buf, k);
      buf += k;
      n -= k;
      if (chunk_.size() == rs) {
        send_chunk(chunk_);
        chunk_.clear();
      }
    }
    guard.ok = true;
  }

  void close() override {
    if (closed_) return;
    try {
      if (failed_) throw earlier_failure();
      if (mode_ == Mode::kWrite) {
        if (!chunk_.empty()) send_chunk(chunk_);
        chunk_.clear();
        while (!inflight_.empty()) complete_write();
        link_->call(encode_flush_fork(fork_), path_);
      } else {
        abandon();
      }
      closed_ = true;
      link_->call(encode_close_fork(fork_), path_);
    } catch (...) {
      if (!closed_) {
        closed_ = true;
        try {
          abandon();
          link_->conn->call(encode_close_fork(fork_));
        } catch (const Error&) {
        }
      }
      throw;
    }
  }

 private:
  // Keeps `depth` reads in flight up to the size seen at open.
  void fill() {
    while (inflight_.size() < link_->depth && next_ < size_) {
      const uint64_t count = std::min<uint64_t>(link_->request_size, size_ - next_);
      inflight_.push_back(
          {link_->conn->send_command(encode_read_ext(fork_, next_, count)), next_, count});
      next_ += count;
    }
    link_->note_flight("read", inflight_);
  }

  // The front read's data, into dst (room for its count); 0 at the end.
  size_t take_front(char* dst) {
    const Req r = inflight_.front();
    inflight_.pop_front();
    bool eof = false;
    size_t got = 0;
    try {
      got = take(r, dst, &eof);
    } catch (...) {
      abandon();
      throw;
    }
    if (eof) {
      abandon();  // the file ended early: later replies carry nothing
      eof_ = true;
    } else if (got < r.count) {
      const uint64_t o = r.offset + got, c = r.count - got;
      inflight_.push_front({link_->conn->send_command(encode_read_ext(fork_, o, c)), o, c});
    }
    return got;
  }

  // One read reply into dst (room for r.count bytes): its length, *eof when
  // the server said the file ends there.
  size_t take(const Req& r, char* dst, bool* eof) {
    const dsi::Header h = link_->conn->wait_into(r.id, dst, r.count);
    const int32_t code = h.error();
    if (code != kNoErr && code != kFPEOFErr) throw afp_error(code, kFPReadExt, link_->at(path_));
    *eof = code == kFPEOFErr;
    if (!*eof && h.length == 0) {
      // Asking again would loop: the server neither sends data nor says EOF.
      throw Error(ErrorKind::kPeer,
                  fmt::format("AFP server {} answered an FPReadExt at offset {} of {} with no "
                              "data and no end of file",
                              link_->where.server, r.offset, path_),
                  "the server broke the protocol; report it with a packet capture");
    }
    return h.length;
  }

  void send_chunk(std::string_view data) {
    while (inflight_.size() >= link_->depth) complete_write();
    const uint16_t id =
        link_->conn->send_write(encode_write_ext_header(fork_, next_, data.size()), data);
    inflight_.push_back({id, next_, data.size()});
    next_ += data.size();
    link_->note_flight("write", inflight_);
  }

  void complete_write() {
    const Req r = inflight_.front();
    inflight_.pop_front();
    dsi::Message m = link_->conn->wait(r.id);
    if (m.header.error() != kNoErr) {
      abandon();
      throw afp_error(m.header.error(), kFPWriteExt, link_->at(path_));
    }
    const uint64_t last = decode_write_ext(m.payload);
    if (last != r.offset + r.count) {
      abandon();
      throw Error(ErrorKind::kIo,
                  fmt::format("AFP server {} wrote {} only up to byte {} of {}",
                              link_->where.server, path_, last, r.offset + r.count),
                  "the server's disk may be full; check its free space and log");
    }
  }

  Error earlier_failure() const {
    return Error(ErrorKind::kIo,
                 fmt::format("an earlier write to {} failed; the file is incomplete",
                             where_text(link_->at(path_))),
                 "see the first error; remove the file and write it again");
  }

  // Drops every reply still due.
  void abandon() {
    for (const auto& r : inflight_) link_->conn->discard(r.id);
    inflight_.clear();
  }

  std::shared_ptr<Link> link_;
  std::string path_;
  uint16_t fork_;
  Mode mode_;
  uint64_t size_;      // reads: the size at open
  uint64_t next_ = 0;  // offset of the next request
  std::deque<Req> inflight_;
  std::vector<char> cur_;  // reads: a reply for a caller asking for less than a request
  size_t cur_len_ = 0, pos_ = 0;
  bool eof_ = false;
  std::string chunk_;    // writes: a partial request
  bool failed_ = false;  // writes: one failed, so the file has a hole
  bool closed_ = false;
};

class AfpSession : public Session {
 public:
  AfpSession(const Share& share, const CancelToken& cancel) : link_(std::make_shared<Link>()) {
    const AfpUrl url = parse_afp_url(share.url);
    const AfpOptions opts = parse_afp_options(share.options);
    const std::string user = share.user.empty() ? url.user : share.user;
    dir_ = url.dir;
    Where& w = link_->where;
    w.server = url.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", url.host, url.port)
                                                       : fmt::format("{}:{}", url.host, url.port);
    w.volume = url.volume;
    dsi::ConnectionConfig cfg;
    cfg.connect_timeout_s = opts.connect_timeout_s;
    cfg.reply_timeout_s = opts.timeout_s;

    // 1. What the server speaks, on a connection of its own (as Apple's
    // clients and afpcmd do: the server closes it after the reply).
    ServerInfo info;
    {
      auto status = dsi::Connection::connect(url.host, url.port, &cancel, cfg);
      info = decode_server_info(status->get_status());
    }
    const auto version = choose_version(info.versions);
    if (!version) {
      std::string list;
      for (const auto& v : info.versions) list += (list.empty() ? "" : ", ") + v;
      throw Error(ErrorKind::kUnsupported,
                  fmt::format("AFP server {} speaks only {}; chokepoint needs AFP 3.0 or later",
                              w.server, list.empty() ? "no AFP version" : list),
                  "upgrade the server (netatalk 2.1 and later speak AFP 3)");
    }
    version_ = *version;
    if (!url.uam.empty() && !opts.uam.empty() && url.uam != opts.uam) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("the AFP share names two UAMs: '{}' in the URL (;AUTH=) and '{}' "
                              "in its options (uam=)",
                              url.uam, opts.uam),
                  "name the UAM in one place");
    }
    uam_ = choose_uam(info.uams, url.uam.empty() ? opts.uam : url.uam, !user.empty(), w.server);
    w.user = uam_ == kUamGuest ? "" : user;
    server_name_ = info.utf8_server_name.empty() ? info.server_name : info.utf8_server_name;
    machine_ = info.machine_type;

    // 2. The session.
    link_->conn = dsi::Connection::connect(url.host, url.port, &cancel, cfg);
    dsi::Connection& conn = *link_->conn;
    struct Uncancel {  // the token dies after connect(); the session lives on
      dsi::Connection& c;
      ~Uncancel() { c.set_cancel(nullptr); }
    } uncancel{conn};
    // A setup that fails past this point (no such volume, a bad login) still
    // logs out and closes the DSI session: netatalk keeps a dropped client's
    // afpd for its 24 h disconnect time otherwise.
    struct Goodbye {
      AfpSession& s;
      bool armed = true;
      ~Goodbye() {
        if (armed) s.goodbye();
      }
    } goodbye{*this};
    const dsi::SessionOptions so = conn.open_session(kAttentionQuantum);
    quantum_ = so.server_quantum.value_or(dsi::kDefaultQuantum);
    if (quantum_ < 4096) {
      throw Error(
          ErrorKind::kPeer,
          fmt::format("AFP server {} announced a request quantum of {} bytes", w.server, quantum_),
          "a quantum under 4 KiB is not usable; check the server's 'server quantum'");
    }
    const uint64_t cap = std::min<uint64_t>(quantum_, kMaxRequestSize);
    link_->request_size = opts.request_size ? std::min(opts.request_size, cap) : cap;
    // Said, not silent: the request size asked for and why it is smaller.
    if (opts.request_size > cap) requested_size_ = opts.request_size;
    link_->depth = opts.depth;
    conn.set_max_reply(
        static_cast<uint32_t>(std::max<uint64_t>(link_->request_size, 1u << 20) + 4096));

    // 3. Login.
    auto uam = make_uam(uam_, user, share.password);
    dsi::Message m = conn.call(uam->login(*version));
    for (int step = 0; m.header.error() == kFPAuthContinue; ++step) {
      if (step == 4) {
        throw Error(
            ErrorKind::kPeer,
            fmt::format("AFP server {} keeps asking to continue the {} login", w.server, uam_),
            "the server's UAM misbehaves; try another with ;AUTH=");
      }
      m = conn.call(uam->next(m.payload));
    }
    if (m.header.error() != kNoErr) throw afp_error(m.header.error(), kFPLogin, w);
    logged_in_ = true;

    // 4. The volume.
    open_volume(url.volume);
    tickle_s_ = opts.tickle_s;

    keepalive_ = std::thread([this] { keepalive_loop(); });
    goodbye.armed = false;
  }

  // The volume: listed for this user? Then open it (its ID into link_).
  void open_volume(const std::string& volume) {
    Where& w = link_->where;
    const SrvrParms parms = decode_srvr_parms(link_->call(encode_get_srvr_parms(), ""));
    const SrvrParms::Volume* found = nullptr;
    for (const auto& v : parms.volumes) {
      if (v.name == volume) found = &v;
    }
    for (const auto& v : parms.volumes) {
      if (!found && lower(v.name) == lower(volume)) found = &v;
    }
    if (!found) {
      std::string list;
      for (const auto& v : parms.volumes) list += (list.empty() ? "" : ", ") + v.name;
      throw Error(ErrorKind::kConfig,
                  fmt::format("no such volume: AFP server {} offers no volume '{}' to {}", w.server,
                              volume, w.user.empty() ? "the guest login" : "user '" + w.user + "'"),
                  list.empty() ? "it offers none to this login; check afp.conf's volumes and "
                                 "'valid users'"
                               : "it offers: " + list);
    }
    if (found->flags & 0x80) {
      throw Error(
          ErrorKind::kUnsupported,
          fmt::format("volume '{}' on AFP server {} has a volume password", found->name, w.server),
          "volume passwords are not supported; remove it (afp.conf) or use another");
    }
    w.volume = found->name;
    const VolParams vol =
        decode_open_vol(link_->call(encode_open_vol(kOpenVolBitmap, w.volume), ""));
    if (!(vol.bitmap & kVolID)) {
      throw Error(
          ErrorKind::kPeer,
          fmt::format("AFP server {} opened volume '{}' without giving its ID", w.server, w.volume),
          "the server broke the protocol; report it with a packet capture");
    }
    link_->volume = vol.volume_id;
    volume_open_ = true;
  }

  ~AfpSession() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (keepalive_.joinable()) keepalive_.join();
    goodbye();
  }

  // Closes the volume, logs out and closes the DSI session, best effort.
  void goodbye() noexcept {
    if (!link_->conn) return;
    dsi::Connection& conn = *link_->conn;
    conn.set_reply_timeout(kGoodbyeTimeout);
    if (!conn.broken()) {
      try {
        if (volume_open_) conn.call(encode_close_vol(link_->volume));
        if (logged_in_) conn.call(encode_logout());
      } catch (const Error&) {
        // Best effort: the server cleans up when the connection closes.
      }
    }
    conn.close_session();
  }

  std::unique_ptr<File> open(const std::string& path, Mode mode, uint64_t) override {
    check_relative_path(path);
    const std::string p = afp_path(path);
    if (mode == Mode::kRead) {
      const FileDirParms st = decode_file_dir_parms(link_->call(
          encode_get_file_dir_parms(link_->volume, kRootDirID, kStatFileBitmap, kStatDirBitmap, p),
          path));
      if (st.params.is_dir) throw afp_error(kFPObjectTypeErr, kFPOpenFork, link_->at(path));
      if (!(st.file_bitmap & kExtDataForkLen)) {
        throw Error(
            ErrorKind::kPeer,
            fmt::format("AFP server {} did not give the size of {}", link_->where.server, path),
            "the server broke the protocol; report it with a packet capture");
      }
      const OpenForkReply f = decode_open_fork(
          link_->call(encode_open_fork(link_->volume, kRootDirID, 0, kAccessRead, p), path));
      return std::make_unique<AfpFile>(link_, path, f.fork, mode, st.params.ext_data_fork_len);
    }
    // Soft create; an existing file is deleted and created afresh.
    dsi::Message m = link_->conn->call(encode_create_file(link_->volume, kRootDirID, false, p));
    if (m.header.error() == kFPObjectExists) {
      link_->call(encode_delete(link_->volume, kRootDirID, p), path);
      m = link_->conn->call(encode_create_file(link_->volume, kRootDirID, false, p));
    }
    if (m.header.error() != kNoErr) {
      throw afp_error(m.header.error(), kFPCreateFile, link_->at(path));
    }
    const OpenForkReply f = decode_open_fork(link_->call(
        encode_open_fork(link_->volume, kRootDirID, 0, kAccessRead | kAccessWrite, p), path));
    return std::make_unique<AfpFile>(link_, path, f.fork, mode, 0);
  }

  void remove(const std::string& path) override {
    check_relative_path(path);
    link_->call(encode_delete(link_->volume, kRootDirID, afp_path(path)), path);
  }

  // FPGetFileDirParms: one round trip by path.
  FileInfo stat(const std::string& path) override {
    check_relative_path(path);
    const FileDirParms st = decode_file_dir_parms(
        link_->call(encode_get_file_dir_parms(link_->volume, kRootDirID, kStatFileBitmap,
                                              kStatDirBitmap, afp_path(path)),
                    path));
    // AFP dates count from 2000-01-01 UTC (946684800 s after 1970), signed.
    const uint16_t bitmap = st.params.is_dir ? st.dir_bitmap : st.file_bitmap;
    const int64_t mtime = bitmap & kModDate ? int64_t(int32_t(st.params.mod_date)) + 946684800 : 0;
    return {.size = st.params.ext_data_fork_len, .mtime = mtime, .is_dir = st.params.is_dir};
  }

  void mkdir(const std::string& path) override {
    check_relative_path(path);
    decode_create_dir(
        link_->call(encode_create_dir(link_->volume, kRootDirID, afp_path(path)), path));
  }

  // FPDelete removes an empty directory as it removes a file.
  void rmdir(const std::string& path) override { remove(path); }

  // Several files' chains of requests on the one DSI connection
  // (afp_file_ops.cc).
  void run_file_ops(FileOps& ops) override {
    afp::run_file_ops(
        *link_, [this](const std::string& rel) { return afp_path(rel); }, ops);
  }

  std::map<std::string, std::string> properties() const override {
    std::map<std::string, std::string> p = base_properties();
    if (requested_size_) {
      p["request_size_asked"] = std::to_string(requested_size_);
      p["request_size_limit"] =
          fmt::format("the server's quantum ({} bytes) and chokepoint's cap ({} bytes)", quantum_,
                      kMaxRequestSize);
    }
    return p;
  }

  std::map<std::string, std::string> base_properties() const {
    return {{"afp_version", version_},
            {"uam", uam_},
            {"server_name", server_name_},
            {"machine_type", machine_},
            {"volume", link_->where.volume},
            {"quantum", std::to_string(quantum_)},
            {"depth", std::to_string(link_->depth)},
            {"request_size", std::to_string(link_->request_size)},
            // The last file's: most requests in flight at once, their bytes.
            {"flight_op", link_->flight_op},
            {"requests_in_flight", std::to_string(link_->flight_requests)},
            {"in_flight_bytes", std::to_string(link_->flight_bytes)}};
  }

 private:
  std::string afp_path(const std::string& rel) const {
    return to_afp_path(dir_.empty() ? rel : dir_ + "/" + rel);
  }

  void keepalive_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    const double check = std::min(kKeepaliveCheck, tickle_s_ / 2);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::duration<double>(check));
      if (stop_) break;
      lock.unlock();
      link_->conn->keepalive(tickle_s_);
      lock.lock();
    }
  }

  std::shared_ptr<Link> link_;
  std::string dir_;
  std::string version_, uam_, server_name_, machine_;
  uint32_t quantum_ = 0;
  uint64_t requested_size_ = 0;  // request_size asked for, when above the cap (0: not)
  double tickle_s_ = 30;
  bool logged_in_ = false;
  bool volume_open_ = false;
  std::thread keepalive_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace
}  // namespace afp

namespace {
constexpr std::string_view kAfpPrefixes[] = {"afp://"};
constexpr OptionSpec kAfpOptions[] = {
    option::count("depth", "8", 1, afp::kMaxDepth, "FPReadExt/FPWriteExt requests in flight"),
    option::size("request_size", "", 4096, 0,
                 "bytes per request; default and cap: the server's DSI request quantum"),
    option::seconds("timeout", "120s", "longest silence from the server while a reply is due"),
    option::seconds("connect_timeout", "10s", "longest wait for the TCP connection and the login"),
    option::seconds("tickle_interval", "30s",
                    "send a DSITickle after this long without sending (netatalk drops a client "
                    "silent for 2 minutes)"),
    option::choice("uam", "auto", "auto|dhx2|dhcast128|cleartxt|guest",
                   "the login method; auto: the strongest offered, never cleartxt (the password "
                   "in the clear), which is used only when named here or with ;AUTH="),
};
std::unique_ptr<Driver> make() { return std::make_unique<SessionDriver<afp::AfpSession>>("afp"); }
}  // namespace

const DriverSpec kAfpDriver = {
    .name = "afp",
    .summary = "AFP 3.x over DSI/TCP, spoken by chokepoint itself",
    .url_prefixes = kAfpPrefixes,
    // The small-file pass's operations in flight on the one DSI connection
    // (DSI numbers each request: afp_file_ops.cc).
    // Round trips: create FPCreateFile, FPOpenFork, FPWriteExt, FPFlushFork,
    // FPCloseFork; stat FPGetFileDirParms; read FPOpenFork, FPReadExt,
    // FPCloseFork (one at a time, the size comes from an FPGetFileDirParms
    // first); delete FPDelete.
    .caps = {.random_access = true,
             .stat = true,
             .mkdir = true,
             .max_in_flight = afp::kMaxDepth,
             .file_ops_in_flight = true,
             .file_round_trips = {5, 1, 3, 1}},
    .options = kAfpOptions,
    .make = make,
    .display = "AFP",
    .default_port = 548,
};

}  // namespace cp::transfer
