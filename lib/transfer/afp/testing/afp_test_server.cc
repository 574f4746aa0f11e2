#include "transfer/afp/testing/afp_test_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <map>
#include <stdexcept>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "transfer/afp/afp_codec.h"
#include "transfer/afp/afp_uam.h"

namespace cp::transfer::testing {
namespace {

using namespace cp::transfer::afp;  // NOLINT: test peer speaks the codec's vocabulary

// RFC 2409's 1024-bit MODP group (generator 2), the DHX2 group here.
constexpr char kModp1024Hex[] =
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A0879"
    "8E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B"
    "0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF";

std::string unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
  }
  return out;
}

// AFP dates count seconds from 2000-01-01 00:00 UTC.
uint32_t afp_date(time_t t) { return static_cast<uint32_t>(t - 946684800); }

std::string until_nul(std::string_view s) { return std::string(s.substr(0, s.find('\0'))); }

struct Fork {
  int fd = -1;
  std::string path;  // real path
  bool writable = false;
};

}  // namespace

class AfpTestServer::Session {
 public:
  Session(AfpTestServer& owner, int fd, const std::atomic<bool>& stop)
      : owner_(owner), cfg_(owner.config_), fd_(fd), stop_(stop) {}
  ~Session() {
    for (auto& [ref, f] : forks_) ::close(f.fd);
  }

  void run() {
    if (cfg_.reply_delay_ms > 0) line_ = std::thread([this] { delay_line(); });
    struct Join {
      Session& s;
      ~Join() { s.stop_line(); }
    } join{*this};
    serve();
  }

 private:
  void serve() {
    stat([](TestServerStats& s) { ++s.connections; });
    dsi::StreamDecoder decoder(cfg_.quantum + 4096);
    int requests = 0;
    for (;;) {
      dsi::Message m;
      const int idle = held_.empty() ? -1 : cfg_.hold_idle_ms;
      const ReadResult r = read_message(fd_, decoder, stop_, &m, idle);
      arrived_ = monotonic_seconds();
      if (r == ReadResult::kIdle) {
        flush_held();
        continue;
      }
      if (r == ReadResult::kClosed) return;
      std::string name = dsi::command_name(m.header.command);
      if (m.header.command == dsi::kCommand || m.header.command == dsi::kWrite) {
        name = m.payload.empty() ? name : command_name(static_cast<uint8_t>(m.payload[0]));
      }
      stat([&](TestServerStats& s) {
        s.commands.push_back(m.header.is_reply() ? "reply " + name : name);
      });
      if (m.header.is_reply()) {
        if (m.header.command == dsi::kAttention)
          stat([](TestServerStats& s) { ++s.attention_acks; });
        continue;
      }
      ++requests;
      switch (m.header.command) {
        case dsi::kGetStatus:
          reply(m.header, 0, status());
          return;  // as netatalk: a status connection ends here
        case dsi::kOpenSession: {
          dsi::SessionOptions o;
          o.server_quantum = cfg_.quantum;
          o.replay_cache = 128;
          reply(m.header, 0, dsi::encode_options(o));
          break;
        }
        case dsi::kTickle:
          stat([](TestServerStats& s) { ++s.tickles_received; });
          break;
        case dsi::kCloseSession:
          stat([](TestServerStats& s) { s.closed_session = true; });
          return;
        case dsi::kCommand:
        case dsi::kWrite: {
          const uint8_t cmd = m.payload.empty() ? 0 : static_cast<uint8_t>(m.payload[0]);
          const bool io = cmd == kFPReadExt || cmd == kFPWriteExt;
          if (!io) flush_held();
          int32_t code = 0;
          std::string out;
          try {
            out = handle(m, &code);
          } catch (const Error&) {
            code = kFPParamErr;  // a request this server cannot parse
            out.clear();
          }
          if (io && cfg_.hold) {
            held_.push_back({m.header, code, std::move(out)});
            const size_t n = held_.size();
            stat([&](TestServerStats& s) { s.max_held = std::max(s.max_held, n); });
            if (n >= cfg_.hold || code == kFPEOFErr || read_hit_end_) flush_held();
          } else {
            reply(m.header, code, out, io);
          }
          break;
        }
        default:
          break;
      }
      if (cfg_.attention_after && requests == cfg_.attention_after) {
        dsi::Header h;
        h.command = dsi::kAttention;
        h.request_id = server_id_++;
        std::string code;
        code += static_cast<char>(cfg_.attention_code >> 8);
        code += static_cast<char>(cfg_.attention_code & 0xff);
        send_out(dsi::encode_message(h, code), false);
      }
      if (cfg_.drop_after && requests == cfg_.drop_after) return;
    }
  }
  struct Held {
    dsi::Header request;
    int32_t code;
    std::string payload;
  };

  template <class F>
  void stat(F f) {
    std::lock_guard<std::mutex> lock(owner_.mu_);
    f(owner_.stats_);
  }

  void reply(const dsi::Header& req, int32_t code, std::string_view payload, bool io = false) {
    if (cfg_.tickle_every && ++replies_ % cfg_.tickle_every == 0) {
      dsi::Header t;
      t.command = dsi::kTickle;
      t.request_id = server_id_++;
      send_out(dsi::encode_header(t), false);
    }
    dsi::Header h;
    h.flags = dsi::kReply;
    h.command = req.command;
    h.request_id = req.request_id;
    h.code = static_cast<uint32_t>(code);
    send_out(dsi::encode_message(h, payload), io);
  }

  // Sends now, or through the delay line: `reply_delay_ms` after the request
  // being served arrived. `io`: the answer to an FPReadExt/FPWriteExt.
  void send_out(std::string bytes, bool io) {
    if (cfg_.reply_delay_ms <= 0) {
      write_all(fd_, bytes);
      return;
    }
    std::lock_guard<std::mutex> lock(line_mu_);
    queue_.push_back({arrived_ + cfg_.reply_delay_ms / 1000, std::move(bytes), io});
    if (io) {
      const size_t n = ++io_queued_;
      stat([&](TestServerStats& s) { s.max_in_flight = std::max(s.max_in_flight, n); });
    }
    line_cv_.notify_one();
  }

  void delay_line() {
    std::unique_lock<std::mutex> lock(line_mu_);
    for (;;) {
      line_cv_.wait(lock, [&] { return line_stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopped, and all sent (a status reply must still leave)
      const double wait = queue_.front().due - monotonic_seconds();
      if (wait > 0) {
        line_cv_.wait_for(lock, std::chrono::duration<double>(wait));
        continue;
      }
      Delayed d = std::move(queue_.front());
      queue_.pop_front();
      if (d.io) --io_queued_;  // it leaves now: the client may answer before write_all returns
      lock.unlock();
      write_all(fd_, d.bytes);
      lock.lock();
    }
  }

  void stop_line() {
    if (!line_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(line_mu_);
      line_stop_ = true;
    }
    line_cv_.notify_all();
    line_.join();
  }

  void flush_held() {
    if (cfg_.reverse_held) std::reverse(held_.begin(), held_.end());
    for (const auto& h : held_) reply(h.request, h.code, h.payload, true);
    held_.clear();
    read_hit_end_ = false;
  }

  std::string status() const {
    ServerInfo info;
    info.machine_type = cfg_.machine_type;
    info.versions = cfg_.versions;
    info.uams = cfg_.uams;
    // netatalk's flags: copy file, server messages, signature, TCP/IP,
    // notifications, directory services, UTF-8 name, UUIDs, ext sleep, fast bozo.
    info.flags = 0x8f79;
    info.server_name = cfg_.server_name;
    info.utf8_server_name = cfg_.server_name;
    info.addresses = {std::string("\x01\x7f\x00\x00\x01", 5)};
    return encode_server_info(info);
  }

  std::string handle(const dsi::Message& m, int32_t* code) {
    const Request q = decode_request(m.payload);
    if (q.command != kFPLogin && q.command != kFPLoginCont && !logged_in_) {
      *code = kFPUserNotAuth;
      return {};
    }
    // The commands a method of their own answers, by the request alone.
    using Handler = std::string (Session::*)(const Request&, int32_t*);
    static const std::map<uint8_t, Handler> kHandlers = {
        {kFPLogin, &Session::login},
        {kFPLoginCont, &Session::login_cont},
        {kFPOpenVol, &Session::open_vol},
        {kFPGetFileDirParms, &Session::get_file_dir_parms},
        {kFPCreateFile, &Session::create_file},
        {kFPCreateDir, &Session::create_dir},
        {kFPDelete, &Session::remove},
        {kFPOpenFork, &Session::open_fork},
        {kFPReadExt, &Session::read_ext},
    };
    if (const auto it = kHandlers.find(q.command); it != kHandlers.end())
      return (this->*it->second)(q, code);
    switch (q.command) {
      case kFPGetSrvrParms: {
        SrvrParms p;
        p.server_time = afp_date(::time(nullptr));
        // Listed by name (as netatalk does); IDs follow the configuration's order.
        for (const auto& [name, dir] : cfg_.volumes) p.volumes.push_back({0, name});
        std::sort(p.volumes.begin(), p.volumes.end(),
                  [](const auto& a, const auto& b) { return a.name < b.name; });
        return encode_srvr_parms(p);
      }
      case kFPGetSrvrMsg:
        return Writer().u16(q.msg_type).u16(q.bitmap).u16(0).take();
      case kFPCloseVol:
      case kFPFlush:
        if (!volume(q.volume)) *code = kFPParamErr;
        return {};
      case kFPLogout:
        stat([](TestServerStats& s) { s.logged_out = true; });
        return {};
      case kFPWriteExt:
        return write_ext(q, m.payload, code);
      case kFPFlushFork:
      case kFPCloseFork: {
        auto it = forks_.find(q.fork);
        if (it == forks_.end()) {
          *code = kFPParamErr;
        } else if (q.command == kFPFlushFork) {
          ::fsync(it->second.fd);
        } else {
          ::close(it->second.fd);
          forks_.erase(it);
        }
        return {};
      }
    }
    *code = kFPCallNotSupported;
    return {};
  }

  // --- logins ---------------------------------------------------------------

  bool check(const std::string& user, const std::string& password) const {
    auto it = cfg_.users.find(user);
    return it != cfg_.users.end() && it->second == password;
  }

  void logged_in(const std::string& uam) {
    logged_in_ = true;
    stat([&](TestServerStats& s) {
      s.uam = uam;
      s.version = version_;
    });
  }

  std::string login(const Request& q, int32_t* code) {
    if (std::find(cfg_.versions.begin(), cfg_.versions.end(), q.version) == cfg_.versions.end() ||
        !choose_version({q.version})) {
      *code = kFPBadVersNum;
      return {};
    }
    if (std::find(cfg_.uams.begin(), cfg_.uams.end(), q.uam) == cfg_.uams.end()) {
      *code = kFPBadUAM;
      return {};
    }
    version_ = q.version;
    uam_ = q.uam;
    if (q.uam == kUamGuest) {
      logged_in(q.uam);
      return {};
    }
    Reader r(q.auth, "FPLogin auth");
    user_ = r.pascal("user");
    auto pad = [&] {
      if ((q.auth_offset + r.pos()) % 2) r.skip(1, "pad");
    };
    if (!cfg_.users.count(user_)) {
      *code = kFPUserNotAuth;
      return {};
    }
    if (q.uam == kUamCleartext) {
      pad();
      const std::string pw = until_nul(r.bytes(8, "password"));
      if (check(user_, pw)) {
        logged_in(q.uam);
      } else {
        *code = kFPUserNotAuth;
      }
      return {};
    }
    if (q.uam == kUamDhcast128) {
      pad();
      const std::string ma(r.bytes(16, "Ma"));
      const std::string rb = random_bytes(32);
      const std::string g(1, static_cast<char>(kDhcast128Generator));
      const std::string mb = crypto::mod_exp(g, rb, dhcast128_prime(), 16);
      key_ = crypto::mod_exp(ma, rb, dhcast128_prime(), 16);
      nonce_ = random_bytes(16);
      *code = kFPAuthContinue;
      return Writer()
          .u16(0x1234)
          .bytes(mb)
          .bytes(crypto::cast5_cbc(true, key_, kServerToClientIV, nonce_ + std::string(16, '\0')))
          .take();
    }
    // DHX2: our group and public key; the client answers with its key and nonce.
    p_ = unhex(kModp1024Hex);
    ra_ = random_bytes(128);
    const std::string ma = crypto::mod_exp(std::string(1, '\2'), ra_, p_, 128);
    dhx2_step_ = 1;
    *code = kFPAuthContinue;
    return Writer().u16(0x4242).u32(2).u16(128).bytes(p_).bytes(ma).take();
  }

  std::string login_cont(const Request& q, int32_t* code) {
    Reader r(q.auth, "FPLoginCont");
    if (uam_ == kUamDhcast128 && !key_.empty()) {
      if (r.u16("id") != 0x1234) {
        *code = kFPParamErr;
        return {};
      }
      const std::string plain =
          crypto::cast5_cbc(false, key_, kClientToServerIV, r.bytes(80, "sealed"));
      key_.clear();
      if (plain.compare(0, 16, crypto::increment(nonce_)) != 0) {
        *code = kFPParamErr;  // what netatalk answers to a wrong nonce
      } else if (check(user_, until_nul(std::string_view(plain).substr(16)))) {
        logged_in(uam_);
      } else {
        *code = kFPUserNotAuth;
      }
      return {};
    }
    if (uam_ == kUamDhx2 && dhx2_step_ == 1) {
      if (r.u16("id") != 0x4242) {
        *code = kFPParamErr;
        return {};
      }
      const std::string mb(r.bytes(128, "Mb"));
      key_ = crypto::md5(crypto::mod_exp(mb, ra_, p_, 128));
      const std::string cn =
          crypto::cast5_cbc(false, key_, kClientToServerIV, r.bytes(16, "client nonce"));
      nonce_ = random_bytes(16);
      dhx2_step_ = 2;
      *code = kFPAuthContinue;
      return Writer()
          .u16(0x4243)
          .bytes(crypto::cast5_cbc(true, key_, kServerToClientIV, crypto::increment(cn) + nonce_))
          .take();
    }
    if (uam_ == kUamDhx2 && dhx2_step_ == 2) {
      dhx2_step_ = 0;
      if (r.u16("id") != 0x4243) {
        *code = kFPParamErr;
        return {};
      }
      const std::string plain =
          crypto::cast5_cbc(false, key_, kClientToServerIV, r.bytes(272, "sealed"));
      if (plain.compare(0, 16, crypto::increment(nonce_)) != 0) {
        *code = kFPUserNotAuth;
      } else if (check(user_, until_nul(std::string_view(plain).substr(16)))) {
        logged_in(uam_);
      } else {
        *code = kFPUserNotAuth;
      }
      return {};
    }
    *code = kFPParamErr;
    return {};
  }

  // --- volumes and files --------------------------------------------------------

  const std::string* volume(uint16_t id) const {
    if (!open_vols_.count(id)) return nullptr;
    return &cfg_.volumes[id - 1].second;
  }

  std::string open_vol(const Request& q, int32_t* code) {
    for (size_t i = 0; i < cfg_.volumes.size(); ++i) {
      if (cfg_.volumes[i].first != q.name) continue;
      struct stat st {};
      struct statvfs vfs {};
      ::stat(cfg_.volumes[i].second.c_str(), &st);
      ::statvfs(cfg_.volumes[i].second.c_str(), &vfs);
      VolParams v;
      v.bitmap = q.bitmap & 0x0fff;
      v.attributes = 0x1cec;  // netatalk's for a UTF-8, UNIX-privileges volume
      v.signature = 2;        // fixed directory IDs
      v.create_date = v.mod_date = afp_date(st.st_mtime);
      v.backup_date = 0x80000000;
      v.volume_id = static_cast<uint16_t>(i + 1);
      const uint64_t free = uint64_t(vfs.f_bavail) * vfs.f_frsize;
      const uint64_t total = uint64_t(vfs.f_blocks) * vfs.f_frsize;
      v.bytes_free = static_cast<uint32_t>(std::min<uint64_t>(free, 0xffffffff));
      v.bytes_total = static_cast<uint32_t>(std::min<uint64_t>(total, 0xffffffff));
      v.ext_bytes_free = free;
      v.ext_bytes_total = total;
      v.name = q.name;
      v.block_size = 4096;
      open_vols_.insert(v.volume_id);
      return encode_vol_params(v);
    }
    *code = kFPObjectNotFound;
    return {};
  }

  // The real path for a request's volume, directory and path; 0 or an error.
  int32_t resolve(const Request& q, std::string* real, std::string* rel) const {
    const std::string* root = volume(q.volume);
    if (!root) return kFPParamErr;
    if (q.dir != kRootDirID) return kFPObjectNotFound;
    *real = *root;
    rel->clear();
    size_t start = 0;
    while (start < q.name.size()) {
      const size_t end = std::min(q.name.find('\0', start), q.name.size());
      const std::string part = q.name.substr(start, end - start);
      if (part.empty() || part == "." || part == ".." || part.find('/') != std::string::npos) {
        return kFPParamErr;
      }
      *real += "/" + part;
      *rel += (rel->empty() ? "" : "/") + part;
      start = end + 1;
    }
    return cfg_.deny.count(*rel) ? kFPAccessDenied : kNoErr;
  }

  // resolve(), then the object's stat in `st`: kFPObjectNotFound where there is none.
  int32_t resolve_existing(const Request& q, std::string* real, std::string* rel,
                           struct stat* st) const {
    if (const int32_t code = resolve(q, real, rel); code != kNoErr) return code;
    return ::stat(real->c_str(), st) == 0 ? kNoErr : kFPObjectNotFound;
  }

  Params params_of(const std::string& real, const std::string& rel, const struct stat& st) const {
    Params p;
    p.is_dir = S_ISDIR(st.st_mode);
    p.parent_id = kRootDirID;
    p.create_date = p.mod_date = afp_date(st.st_mtime);
    p.backup_date = 0x80000000;
    const std::string base =
        rel.substr(rel.rfind('/') == std::string::npos ? 0 : rel.rfind('/') + 1);
    p.long_name = base.substr(0, 31);
    p.short_name = base.substr(0, 12);
    p.utf8_name = base;
    p.node_id = rel.empty() ? kRootDirID : static_cast<uint32_t>(st.st_ino);
    p.data_fork_len = static_cast<uint32_t>(std::min<uint64_t>(st.st_size, 0xffffffff));
    p.ext_data_fork_len = static_cast<uint64_t>(st.st_size);
    if (p.is_dir) {
      if (DIR* d = ::opendir(real.c_str())) {
        while (dirent* e = ::readdir(d)) {
          if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++p.offspring_count;
        }
        ::closedir(d);
      }
    }
    p.owner_id = st.st_uid;
    p.group_id = st.st_gid;
    p.unix_privs = {st.st_uid, st.st_gid, st.st_mode, 0x87070707};
    return p;
  }

  static bool bits_valid(uint16_t bitmap, bool is_dir) {
    // Bit 14 is file-only; bits above 15 do not exist.
    return !(is_dir && (bitmap & (1 << 14)));
  }

  std::string get_file_dir_parms(const Request& q, int32_t* code) {
    std::string real, rel;
    struct stat st {};
    if ((*code = resolve_existing(q, &real, &rel, &st)) != kNoErr) return {};
    const bool dir = S_ISDIR(st.st_mode);
    if (!bits_valid(dir ? q.dir_bitmap : q.file_bitmap, dir)) {
      *code = kFPBitmapErr;
      return {};
    }
    return encode_file_dir_parms(q.file_bitmap, q.dir_bitmap, params_of(real, rel, st));
  }

  std::string create_file(const Request& q, int32_t* code) {
    std::string real, rel;
    if ((*code = resolve(q, &real, &rel)) != kNoErr) return {};
    struct stat st {};
    const std::string parent = real.substr(0, real.rfind('/'));
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      *code = kFPObjectNotFound;
      return {};
    }
    const bool hard = q.flag & 0x80;
    const int fd = ::open(real.c_str(), O_WRONLY | O_CREAT | (hard ? O_TRUNC : O_EXCL), 0644);
    if (fd < 0) *code = errno == EEXIST ? kFPObjectExists : kFPAccessDenied;
    if (fd >= 0) ::close(fd);
    return {};
  }

  // The new directory's ID: its inode, as netatalk's CNID scheme "last" does.
  std::string create_dir(const Request& q, int32_t* code) {
    std::string real, rel;
    if ((*code = resolve(q, &real, &rel)) != kNoErr) return {};
    if (::mkdir(real.c_str(), 0755) != 0) {
      *code = errno == EEXIST   ? kFPObjectExists
              : errno == ENOENT ? kFPObjectNotFound
                                : kFPAccessDenied;
      return {};
    }
    struct stat st {};
    ::stat(real.c_str(), &st);
    return Writer().u32(static_cast<uint32_t>(st.st_ino)).take();
  }

  std::string remove(const Request& q, int32_t* code) {
    std::string real, rel;
    if ((*code = resolve(q, &real, &rel)) != kNoErr) return {};
    for (const auto& [ref, f] : forks_) {
      if (f.path == real) {
        *code = kFPFileBusy;
        return {};
      }
    }
    struct stat st {};
    if (::lstat(real.c_str(), &st) != 0) {
      *code = kFPObjectNotFound;
    } else if (S_ISDIR(st.st_mode) ? ::rmdir(real.c_str()) != 0 : ::unlink(real.c_str()) != 0) {
      *code = errno == ENOTEMPTY ? kFPDirNotEmpty : kFPAccessDenied;
    }
    return {};
  }

  std::string open_fork(const Request& q, int32_t* code) {
    std::string real, rel;
    struct stat st {};
    if ((*code = resolve_existing(q, &real, &rel, &st)) != kNoErr) return {};
    if (S_ISDIR(st.st_mode)) {
      *code = kFPObjectTypeErr;
      return {};
    }
    const bool writable = q.access & kAccessWrite;
    const int fd = ::open(real.c_str(), writable ? O_RDWR : O_RDONLY);
    if (fd < 0) {
      *code = kFPAccessDenied;
      return {};
    }
    next_fork_ = static_cast<uint16_t>(next_fork_ + 256);
    forks_[next_fork_] = {fd, real, writable};
    return encode_open_fork_reply(q.bitmap, next_fork_, params_of(real, rel, st));
  }

  std::string read_ext(const Request& q, int32_t* code) {
    stat([&](TestServerStats& s) { s.read_counts.push_back(q.count); });
    auto it = forks_.find(q.fork);
    if (it == forks_.end()) {
      *code = kFPParamErr;
      return {};
    }
    struct stat st {};
    ::fstat(it->second.fd, &st);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (q.offset + q.count >= size) read_hit_end_ = true;
    if (q.offset >= size) {
      *code = kFPEOFErr;
      return {};
    }
    uint64_t count = q.count;
    if (q.offset + count > size) {  // as netatalk: the data there is, with EOF
      count = size - q.offset;
      *code = kFPEOFErr;
    }
    std::string data(count, '\0');
    const ssize_t n = ::pread(it->second.fd, data.data(), count, static_cast<off_t>(q.offset));
    data.resize(n < 0 ? 0 : static_cast<size_t>(n));
    return data;
  }

  std::string write_ext(const Request& q, std::string_view payload, int32_t* code) {
    stat([&](TestServerStats& s) { s.write_counts.push_back(q.count); });
    auto it = forks_.find(q.fork);
    if (it == forks_.end() || payload.size() - q.data_offset != q.count) {
      *code = kFPParamErr;
      return {};
    }
    if (!it->second.writable) {
      *code = kFPAccessDenied;
      return {};
    }
    if (written_ + q.count > cfg_.disk_full_after) {
      *code = kFPDiskFull;
      return {};
    }
    const ssize_t n = ::pwrite(it->second.fd, payload.data() + q.data_offset, q.count,
                               static_cast<off_t>(q.offset));
    if (n != static_cast<ssize_t>(q.count)) {
      *code = kFPMiscErr;
      return {};
    }
    written_ += q.count;
    return Writer().u64(q.offset + q.count).take();
  }

  AfpTestServer& owner_;
  const TestServerConfig& cfg_;
  int fd_;
  const std::atomic<bool>& stop_;
  uint16_t server_id_ = 0;
  int replies_ = 0;
  std::vector<Held> held_;
  // The delay line (reply_delay_ms): messages due at a time, in order.
  struct Delayed {
    double due;  // monotonic seconds
    std::string bytes;
    bool io;
  };
  double arrived_ = 0;  // when the request being served arrived
  std::thread line_;
  std::mutex line_mu_;
  std::condition_variable line_cv_;
  std::deque<Delayed> queue_;
  size_t io_queued_ = 0;
  bool line_stop_ = false;
  bool read_hit_end_ = false;
  bool logged_in_ = false;
  std::string version_, uam_, user_;
  std::string key_, nonce_, p_, ra_;
  int dhx2_step_ = 0;
  std::set<uint16_t> open_vols_;
  std::map<uint16_t, Fork> forks_;
  uint16_t next_fork_ = 0;
  uint64_t written_ = 0;
};

AfpTestServer::AfpTestServer(TestServerConfig config) : config_(std::move(config)) {
  server_ = std::make_unique<LoopbackServer>(
      [this](int fd, const std::atomic<bool>& stop) {
        Session s(*this, fd, stop);
        s.run();
      },
      config_.port);
}

AfpTestServer::~AfpTestServer() { server_.reset(); }

TestServerStats AfpTestServer::stats_after(size_t connections) const {
  if (!server_->wait_served(connections)) {
    throw std::runtime_error("AFP test server: the client never closed its connections");
  }
  return stats();
}

TestServerStats AfpTestServer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace cp::transfer::testing
