// The ftp driver: libcurl, passive (EPSV, then PASV), binary, one control
// connection per session reused for every file. ftps:// means explicit TLS
// (AUTH TLS on the control port, then protected data connections).
//
// Streaming with bounded memory: the easy handle runs in a curl multi handle
// driven from File::read/write. Downloads copy straight into the caller's
// buffer; at most one receive chunk (kRecvBuffer) waits in `overflow_`, and
// the transfer is paused (CURL_WRITEFUNC_PAUSE) until the caller reads again.
// Uploads hand curl the caller's buffer through CURLOPT_READFUNCTION and
// pause when it is used up.
//
// Share options: "ca_file" = a PEM file of CA certificates to verify an ftps://
// server against instead of the system's (a self-signed server: its own
// certificate); "insecure" = "1" skips TLS certificate checks (a last resort: the
// figures are as real, but the server is unauthenticated); "connect_timeout" and
// "stall_timeout" in seconds.
#include <curl/curl.h>
#include <linux/tcp.h>  // struct tcp_info
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "transfer/driver.h"
#include "transfer/option_table.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"
#include "transfer/share_url.h"

namespace cp::transfer {
namespace {

constexpr long kRecvBuffer = 512 << 10;  // bytes curl reads from the socket per callback
// Bytes curl asks of the read callback at once: its default, which measured
// faster here than 1 MiB (uploads pause and resume at each caller block).
constexpr long kSendBuffer = 64 << 10;
// Longest wait for socket activity, ms, between turns of the transfer loop (and
// cancellation checks). Short because libcurl 7.88 does not always wake
// curl_multi_poll while an ftps:// data connection's TLS handshake is pending:
// with 200 ms, every FTPS download waited ~200 ms before its first byte (1 MB
// files measured 5 MB/s instead of 67). While data flows, polls end on activity.
constexpr int kPollMs = 5;
// Bytes moved between two reads of the data connection's TCP_INFO.
constexpr uint64_t kSampleEvery = 1 << 20;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Options with the defaults the table at the bottom declares.
double option_seconds(const Share& share, const char* name) {
  return *option_number(kFtpDriver, share.options, name);
}

bool option_flag(const Share& share, const char* name) {
  return parse_yes_no(option_value(kFtpDriver, share.options, name)).value_or(false);
}

class FtpFile;

class FtpSession : public Session {
 public:
  FtpSession(const Share& share, const CancelToken& cancel) : cancel_(cancel) {
    global_init();
    url_ = parse_share_url(share.url);
    if (url_.scheme != "ftp" && url_.scheme != "ftps") {
      throw Error(ErrorKind::kConfig,
                  fmt::format("the ftp driver takes ftp:// or ftps:// URLs, not '{}'",
                              redact_url(share.url)),
                  "write the share as ftp://host/dir (or ftps:// for FTP over explicit TLS)");
    }
    tls_ = url_.scheme == "ftps";
    user_ = !share.user.empty() ? share.user : url_.user;
    password_ = !share.password.empty() ? share.password : url_.password;
    insecure_ = option_flag(share, "insecure");
    ca_file_ = option_value(kFtpDriver, share.options, "ca_file");
    if (!ca_file_.empty() && !tls_) {
      throw Error(ErrorKind::kConfig,
                  fmt::format("share option ca_file is for ftps:// URLs; '{}' is plain FTP",
                              redact_url(share.url)),
                  "write the share as ftps://... or drop ca_file");
    }
    if (!ca_file_.empty() && ::access(ca_file_.c_str(), R_OK) != 0) {
      throw Error(
          ErrorKind::kConfig,
          fmt::format("share option ca_file: cannot read '{}': {}", ca_file_, errno_text(errno)),
          "give the path of a PEM certificate file readable on the client host");
    }
    connect_timeout_ = option_seconds(share, "connect_timeout");
    stall_timeout_ = option_seconds(share, "stall_timeout");
    where_.server = host_port(url_, 21);
    where_.share = url_.path.empty() ? "/" : url_.path;
    where_.user = user_.empty() ? "anonymous" : user_;
    // Paths as the server sees them, relative to the login directory unless
    // absolute: "ftp://h/ram" is "ram", "ftp://h/%2Fsrv/x" is "/srv/x".
    dir_ = url_.path.size() > 1 ? url_.path.substr(1) : "";
    const std::string host =
        url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
    origin_ = fmt::format("ftp://{}:{}", host, url_.port ? url_.port : 21);

    multi_ = curl_multi_init();
    easy_ = curl_easy_init();
    if (!multi_ || !easy_) throw Error(ErrorKind::kIo, "libcurl could not start (out of memory?)");
    // Log in and change into the share's directory: wrong password, unknown
    // directory and closed port show here, not at the first file.
    setup(url_for(""));
    curl_easy_setopt(easy_, CURLOPT_NOBODY, 1L);
    perform_blocking(Step::kConnect, where_);
    // The login directory: QUOTE commands (DELE, RMD) run wherever the last
    // request left the reused connection, so they take absolute paths.
    char* entry = nullptr;
    curl_easy_getinfo(easy_, CURLINFO_FTP_ENTRY_PATH, &entry);
    entry_path_ = entry ? entry : "";
  }

  ~FtpSession() override {
    if (easy_) {
      if (in_multi_) curl_multi_remove_handle(multi_, easy_);
      curl_easy_cleanup(easy_);
    }
    if (multi_) curl_multi_cleanup(multi_);
    if (quote_) curl_slist_free_all(quote_);
  }

  std::unique_ptr<File> open(const std::string& rel, Mode mode, uint64_t size_hint) override;

  void remove(const std::string& rel) override {
    const Place where = place(rel);
    const std::string target = absolute_or_throw(rel, "delete");
    for (const char* verb : {"DELE", "RMD"}) {
      try {
        command({fmt::format("{} {}", verb, target)}, Step::kRemove, where);
        return;
      } catch (const Error&) {
        // A directory refuses DELE with the same 550 as a missing file: try
        // RMD, and report DELE's failure when both fail.
        if (std::string_view(verb) == "RMD") break;
        first_failure_ = last_failure_;
      }
    }
    throw ftp_error(first_failure_, Step::kRemove, where);
  }

  // SIZE, then MDTM where the server answers it ('*': curl goes on when it
  // does not): two commands on the control connection, no data connection.
  FileInfo stat(const std::string& rel) override {
    const std::string target = absolute_or_throw(rel, "stat");
    try {
      command({"SIZE " + target, "*MDTM " + target}, Step::kOpenRead, place(rel));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      throw ftp_command_error(last_failure_, "SIZE", place(rel));
    }
    FileInfo info;
    bool sized = false;
    for (const std::string& r : replies_) {
      // "213 4096" (SIZE), "213 20261202032700" (MDTM: UTC, 14 digits).
      if (r.rfind("213 ", 0) != 0) continue;
      const std::string v = r.substr(4);
      if (v.size() >= 14 && sized) {
        info.mtime = ftp_mdtm_seconds(v).value_or(0);
      } else if (!sized && !v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
        info.size = std::stoull(v);
        sized = true;
      }
    }
    if (!sized) throw ftp_command_error(failure(CURLE_OK), "SIZE", place(rel));
    return info;
  }

  void mkdir(const std::string& rel) override { verb("MKD", rel); }
  void rmdir(const std::string& rel) override { verb("RMD", rel); }

  std::map<std::string, std::string> properties() const override {
    // A stream, not requests: what is in flight is the data connection's TCP
    // window (the kernel's, shown by the TCP probe), not set by this client;
    // tcp_in_flight_bytes is the most the kernel kept out in the last file
    // (puts: the congestion window; gets: what arrived per round trip; read
    // once per MiB, so files under 1 MiB have none), not a window of this
    // client's (so not in_flight_bytes: no request limit).
    std::map<std::string, std::string> p = {{"tls", tls_ ? "explicit" : "none"},
                                            {"data_connection", "passive"},
                                            {"type", "binary"},
                                            {"greeting", greeting_},
                                            {"flow", "tcp_stream"},
                                            {"recv_buffer", std::to_string(kRecvBuffer)},
                                            {"send_buffer", std::to_string(kSendBuffer)}};
    if (tcp_in_flight_ > 0) p["tcp_in_flight_bytes"] = std::to_string(tcp_in_flight_);
    return p;
  }

 private:
  friend class FtpFile;

  Place place(const std::string& rel) const {
    Place p = where_;
    p.file = rel;
    return p;
  }

  std::string absolute_or_throw(const std::string& rel, const char* what) const {
    check_relative_path(rel);
    CP_CHECK(!busy_);
    const std::string target = absolute(rel);
    if (target.empty()) {
      throw Error(ErrorKind::kUnsupported,
                  fmt::format("the FTP server {} did not say its login directory (PWD), so "
                              "chokepoint cannot name {} to {} it",
                              where_.server, rel, what),
                  "give the share URL an absolute path (ftp://host/%2Fsrv/dir)");
    }
    return target;
  }

  // Commands on the control connection (curl's QUOTE, after the login);
  // every reply line lands in replies_.
  void command(const std::vector<std::string>& lines, Step step, const Place& where) {
    setup(url_for(""));
    curl_easy_setopt(easy_, CURLOPT_NOBODY, 1L);
    if (quote_) curl_slist_free_all(quote_);
    quote_ = nullptr;
    for (const std::string& l : lines) quote_ = curl_slist_append(quote_, l.c_str());
    curl_easy_setopt(easy_, CURLOPT_QUOTE, quote_);
    perform_blocking(step, where);
  }

  // MKD or RMD of `rel`.
  void verb(const char* verb, const std::string& rel) {
    const std::string target = absolute_or_throw(rel, verb[0] == 'M' ? "create" : "remove");
    try {
      command({fmt::format("{} {}", verb, target)},
              verb[0] == 'M' ? Step::kOpenWrite : Step::kRemove, place(rel));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      throw ftp_command_error(last_failure_, verb, place(rel));
    }
  }

  // URL of `rel` under the share ("" for the share's directory itself).
  std::string url_for(const std::string& rel) const {
    std::string path = dir_;
    if (!rel.empty()) path = path.empty() ? rel : path + "/" + rel;
    std::string enc = percent_encode_path(path);
    // An absolute server path keeps its leading '/' as %2F (RFC 1738).
    if (!path.empty() && path.front() == '/') enc = "%2F" + enc.substr(1);
    if (rel.empty() && !enc.empty()) enc += "/";
    return origin_ + "/" + enc;
  }

  // `rel`'s path on the server from its root ("/srv/ftp/ram/run-1/a.dat"):
  // the share's, under the login directory unless absolute; "" when the
  // server did not say its login directory.
  std::string absolute(const std::string& rel) const {
    std::string target = dir_.empty() ? rel : dir_ + "/" + rel;
    if (target.front() == '/') return target;
    if (entry_path_.empty() || entry_path_.front() != '/') return "";
    return (entry_path_ == "/" ? "" : entry_path_) + "/" + target;
  }

  // A file's URL and how curl reaches it. With its absolute path, RETR/STOR
  // name it whole and curl sends no CWD (on a reused connection it would go
  // back to the login directory and down each directory: a round trip each,
  // every file, counted in the file's time); else curl's default, a CWD per
  // directory.
  void setup_file(const std::string& rel, bool whole_path) {
    const std::string target = whole_path ? absolute(rel) : "";
    if (target.empty()) {
      setup(url_for(rel));
      return;
    }
    setup(origin_ + "/%2F" + percent_encode_path(target.substr(1)));
    curl_easy_setopt(easy_, CURLOPT_FTP_FILEMETHOD, static_cast<long>(CURLFTPMETHOD_NOCWD));
  }

  // Resets the easy handle for a new request.
  void setup(const std::string& url) {
    curl_easy_reset(easy_);
    errbuf_[0] = '\0';
    last_reply_.clear();
    replies_.clear();
    // The newest socket curl opens is the file's data connection (the
    // control connection is older and reused).
    curl_easy_setopt(easy_, CURLOPT_SOCKOPTFUNCTION, &FtpSession::on_socket);
    curl_easy_setopt(easy_, CURLOPT_SOCKOPTDATA, this);
    curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, errbuf_);
    curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy_, CURLOPT_USERNAME, user_.empty() ? "anonymous" : user_.c_str());
    curl_easy_setopt(easy_, CURLOPT_PASSWORD, password_.c_str());
    curl_easy_setopt(easy_, CURLOPT_TRANSFERTEXT, 0L);
    curl_easy_setopt(easy_, CURLOPT_FTP_USE_EPSV, 1L);
    curl_easy_setopt(easy_, CURLOPT_FTP_SKIP_PASV_IP, 1L);
    curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout_ * 1e3));
    curl_easy_setopt(easy_, CURLOPT_FTP_RESPONSE_TIMEOUT, static_cast<long>(stall_timeout_));
    curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_TIME, static_cast<long>(stall_timeout_));
    curl_easy_setopt(easy_, CURLOPT_BUFFERSIZE, kRecvBuffer);
    curl_easy_setopt(easy_, CURLOPT_UPLOAD_BUFFERSIZE, kSendBuffer);
    curl_easy_setopt(easy_, CURLOPT_HEADERFUNCTION, &FtpSession::on_reply);
    curl_easy_setopt(easy_, CURLOPT_HEADERDATA, this);
    if (tls_) {
      curl_easy_setopt(easy_, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
      if (!ca_file_.empty()) curl_easy_setopt(easy_, CURLOPT_CAINFO, ca_file_.c_str());
      if (insecure_) {
        curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYHOST, 0L);
      }
    }
  }

  // Server replies arrive here line by line (the header callback, for FTP).
  static size_t on_reply(char* data, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<FtpSession*>(self_ptr);
    std::string line(data, size * n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.size() >= 3 && std::isdigit(static_cast<unsigned char>(line[0]))) {
      self->last_reply_ = line;
      self->replies_.push_back(line);
      if (self->greeting_.empty() && line.rfind("220", 0) == 0) self->greeting_ = line;
    }
    return size * n;
  }

  void add() {
    CP_CHECK(!in_multi_);
    const CURLMcode mc = curl_multi_add_handle(multi_, easy_);
    if (mc != CURLM_OK) {
      throw Error(ErrorKind::kIo, fmt::format("libcurl: {}", curl_multi_strerror(mc)));
    }
    in_multi_ = true;
    // A transfer's data connection is a new socket (on_socket names it).
    data_fd_ = CURL_SOCKET_BAD;
    watch_connect_ = true;
    done_ = false;
    result_ = CURLE_OK;
  }

  // Drives the transfer until `satisfied()` or it ends; polls the
  // cancellation token between waits.
  template <typename Pred>
  void run_until(Pred satisfied) {
    for (;;) {
      int running = 0;
      const CURLMcode mc = curl_multi_perform(multi_, &running);
      if (mc != CURLM_OK) {
        throw Error(ErrorKind::kIo, fmt::format("libcurl: {}", curl_multi_strerror(mc)));
      }
      int left = 0;
      while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
        if (m->msg == CURLMSG_DONE && m->easy_handle == easy_) {
          done_ = true;
          result_ = m->data.result;
        }
      }
      if (done_ || satisfied()) return;
      if (cancel_.cancelled()) {
        detach();
        cancel_.check();
      }
      // libcurl 7.88 does not wait for the passive data connection's
      // connect to complete (EPSV's reply, then nothing until a timeout):
      // every RETR waited out kPollMs after its 229. Until that socket is
      // writable (connected), its POLLOUT wakes the loop too.
      curl_waitfd connect{data_fd_, CURL_WAIT_POLLOUT, 0};
      const bool watch = watch_connect_ && data_fd_ != CURL_SOCKET_BAD;
      curl_multi_poll(multi_, watch ? &connect : nullptr, watch ? 1 : 0, kPollMs, nullptr);
      if (watch && connect.revents != 0) watch_connect_ = false;
    }
  }

  // Takes the handle out of the multi handle; throws the mapped error when
  // the transfer failed.
  void finish(Step step, const Place& where) {
    detach();
    if (result_ != CURLE_OK) {
      last_failure_ = failure(result_);
      throw ftp_error(last_failure_, step, where);
    }
  }

  void detach() {
    if (in_multi_) curl_multi_remove_handle(multi_, easy_);
    in_multi_ = false;
  }

  FtpFailure failure(CURLcode code) const {
    FtpFailure f;
    f.curl_code = code;
    long reply = 0;
    curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &reply);
    f.reply_code = reply;
    f.reply = last_reply_;
    f.detail = errbuf_;
    return f;
  }

  void perform_blocking(Step step, const Place& where) {
    add();
    run_until([] { return false; });
    finish(step, where);
  }

  const CancelToken& cancel_;
  ShareUrl url_;
  std::string origin_;  // "ftp://host:port"
  std::string dir_;     // the share's directory as the server sees it
  std::string user_, password_;
  bool tls_ = false;
  bool insecure_ = false;
  std::string ca_file_;  // "": the system's CA certificates
  double connect_timeout_ = 15, stall_timeout_ = 60;
  Place where_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;
  curl_slist* quote_ = nullptr;
  bool in_multi_ = false;
  bool done_ = false;
  CURLcode result_ = CURLE_OK;
  bool busy_ = false;  // a File is open (one at a time per session)
  // The data connection (the newest socket) and what its TCP kept in flight
  // at most in the last file, bytes; `sampled_at_` the bytes moved when
  // TCP_INFO was last read.
  curl_socket_t data_fd_ = CURL_SOCKET_BAD;
  bool watch_connect_ = false;  // data_fd_'s connect not seen complete yet
  uint64_t tcp_in_flight_ = 0, moved_ = 0, sampled_at_ = 0;

  static int on_socket(void* self, curl_socket_t fd, curlsocktype) {
    static_cast<FtpSession*>(self)->data_fd_ = fd;
    return CURL_SOCKOPT_OK;
  }
  // Counts `n` bytes moved; every kSampleEvery bytes, reads the data
  // connection's TCP_INFO (one system call per MiB).
  void moved(size_t n, bool upload) {
    moved_ += n;
    if (moved_ - sampled_at_ < kSampleEvery || data_fd_ == CURL_SOCKET_BAD) return;
    sampled_at_ = moved_;
    tcp_info ti{};
    socklen_t len = sizeof ti;
    if (getsockopt(data_fd_, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return;
    // Puts: the congestion window (what TCP lets the connection keep out;
    // its unacknowledged bytes at one instant may be none on a fast link);
    // gets: what arrived per round trip.
    const uint64_t out = upload ? uint64_t(ti.tcpi_snd_cwnd) * ti.tcpi_snd_mss : ti.tcpi_rcv_space;
    tcp_in_flight_ = std::max(tcp_in_flight_, out);
  }
  char errbuf_[CURL_ERROR_SIZE] = {};
  std::string last_reply_;
  std::vector<std::string> replies_;  // every reply line of the current request
  std::string greeting_;
  std::string entry_path_;  // the login directory, absolute
  FtpFailure last_failure_, first_failure_;
};

class FtpFile : public File {
 public:
  FtpFile(FtpSession& s, Mode mode, Place where) : s_(s), mode_(mode), where_(std::move(where)) {
    s_.busy_ = true;
    s_.tcp_in_flight_ = s_.moved_ = s_.sampled_at_ = 0;
    CURL* e = s_.easy_;
    if (mode_ == Mode::kRead) {
      curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &FtpFile::on_data);
      curl_easy_setopt(e, CURLOPT_WRITEDATA, this);
      // No SIZE before RETR (a round trip per file): the size comes with
      // RETR's 150 reply where the server gives it, and the agent checks the
      // size and checksum of what arrived either way.
      curl_easy_setopt(e, CURLOPT_IGNORE_CONTENT_LENGTH, 1L);
    } else {
      curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(e, CURLOPT_FTP_CREATE_MISSING_DIRS,
                       static_cast<long>(CURLFTP_CREATE_DIR_RETRY));
      curl_easy_setopt(e, CURLOPT_READFUNCTION, &FtpFile::on_send);
      curl_easy_setopt(e, CURLOPT_READDATA, this);
    }
    s_.add();
    // Until the server accepted RETR/STOR, so a missing file or a refused
    // write fails open(), not the first read or write.
    s_.run_until([this] { return started_; });
    if (s_.done_) {
      if (s_.result_ != CURLE_OK) {
        s_.busy_ = false;
        s_.finish(mode_ == Mode::kRead ? Step::kOpenRead : Step::kOpenWrite, where_);
      }
    }
  }

  ~FtpFile() override {
    if (!ended_) s_.detach();
    s_.busy_ = false;
  }

  size_t read(char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kRead);
    size_t got = std::min(n, overflow_.size() - overflow_pos_);
    std::memcpy(buf, overflow_.data() + overflow_pos_, got);
    overflow_pos_ += got;
    if (overflow_pos_ == overflow_.size()) {
      overflow_.clear();
      overflow_pos_ = 0;
    }
    if (got == n || n == 0 || ended_) return got;
    if (s_.done_) {
      end_of_transfer(Step::kRead);
      return got;
    }
    dst_ = buf;
    dst_len_ = got;
    dst_cap_ = n;
    unpause();
    s_.run_until([this] { return dst_len_ == dst_cap_; });
    dst_ = nullptr;
    got = dst_len_;
    if (s_.done_ && overflow_.empty()) end_of_transfer(Step::kRead);
    return got;
  }

  void write(const char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kWrite && !ended_);
    if (n == 0) return;
    if (s_.done_) end_of_transfer(Step::kWrite);
    src_ = buf;
    src_left_ = n;
    unpause();
    s_.run_until([this] { return src_left_ == 0; });
    src_ = nullptr;
    if (s_.done_) end_of_transfer(Step::kWrite);
  }

  void close() override {
    if (ended_) return;
    if (mode_ == Mode::kWrite) {
      closing_ = true;
      unpause();
      s_.run_until([] { return false; });
    } else if (!s_.done_) {
      // Closed before the end: abandon the download (curl drops the connection).
      s_.detach();
      ended_ = true;
      s_.busy_ = false;
      return;
    }
    end_of_transfer(Step::kClose);
  }

 private:
  void unpause() {
    if (!paused_) return;
    paused_ = false;
    curl_easy_pause(s_.easy_, CURLPAUSE_CONT);
  }

  // The transfer ended: throw its error, if any, once.
  void end_of_transfer(Step step) {
    if (ended_) return;
    ended_ = true;
    s_.busy_ = false;
    Step reported = step;
    // Failures after the data went out (the server's "226" or its refusal)
    // belong to the write, whichever call noticed them.
    if (mode_ == Mode::kWrite) reported = Step::kWrite;
    s_.finish(reported, where_);
  }

  static size_t on_data(char* data, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<FtpFile*>(self_ptr);
    const size_t len = size * n;
    self->started_ = true;
    const size_t room = self->dst_ ? self->dst_cap_ - self->dst_len_ : 0;
    if (room == 0 && !self->overflow_.empty()) {
      // Both the caller's buffer and the one chunk we keep are full.
      self->paused_ = true;
      return CURL_WRITEFUNC_PAUSE;
    }
    const size_t k = std::min(room, len);
    if (k > 0) {
      std::memcpy(self->dst_ + self->dst_len_, data, k);
      self->dst_len_ += k;
    }
    if (k < len) self->overflow_.assign(data + k, data + len);
    self->s_.moved(len, false);
    return len;
  }

  static size_t on_send(char* out, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<FtpFile*>(self_ptr);
    self->started_ = true;
    if (self->src_left_ == 0) {
      if (self->closing_) return 0;  // end of file
      self->paused_ = true;
      return CURL_READFUNC_PAUSE;
    }
    const size_t k = std::min(size * n, self->src_left_);
    std::memcpy(out, self->src_, k);
    self->src_ += k;
    self->src_left_ -= k;
    self->s_.moved(k, true);
    return k;
  }

  FtpSession& s_;
  Mode mode_;
  Place where_;
  bool started_ = false;
  bool paused_ = false;
  bool closing_ = false;
  bool ended_ = false;  // the transfer is over and its result was taken
  // Download: the caller's buffer and what is in it.
  char* dst_ = nullptr;
  size_t dst_len_ = 0, dst_cap_ = 0;
  // At most one receive chunk that did not fit (<= kRecvBuffer bytes).
  std::vector<char> overflow_;
  size_t overflow_pos_ = 0;
  // Upload: what is left of the caller's buffer.
  const char* src_ = nullptr;
  size_t src_left_ = 0;
};

std::unique_ptr<File> FtpSession::open(const std::string& rel, Mode mode, uint64_t) {
  check_relative_path(rel);
  CP_CHECK(!busy_);
  Place where = where_;
  where.file = rel;
  setup_file(rel, true);
  if (mode == Mode::kWrite && rel.find('/') != std::string::npos && !absolute(rel).empty()) {
    // A STOR by whole path cannot create missing directories (curl makes
    // them while it walks down with CWD): refused, it goes again that way.
    try {
      return std::make_unique<FtpFile>(*this, mode, where);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      setup_file(rel, false);
    }
  }
  return std::make_unique<FtpFile>(*this, mode, std::move(where));
}

}  // namespace

namespace {
constexpr std::string_view kFtpPrefixes[] = {"ftp://", "ftps://"};
constexpr OptionSpec kFtpOptions[] = {
    option::text("ca_file",
                 "a PEM file of CA certificates to verify an ftps:// server against instead of "
                 "the system's (a self-signed server: its own certificate)"),
    option::flag("insecure", "no",
                 "skip TLS certificate checks (a last resort: the server is unauthenticated)"),
    // At least 1 s: curl takes whole seconds.
    option::seconds("connect_timeout", "15s", "longest wait for the connection and the login", 1),
    option::seconds("stall_timeout", "60s", "longest time a transfer may move nothing", 1),
};
std::unique_ptr<Driver> make() { return std::make_unique<SessionDriver<FtpSession>>("ftp"); }
}  // namespace

// No random access: every offset would be a new RETR (or STOR) with REST on a
// new data connection, which measures connection setup, not I/O.
const DriverSpec kFtpDriver = {
    .name = "ftp",
    .summary = "FTP, or FTPS with explicit TLS, through libcurl (passive, binary)",
    .url_prefixes = kFtpPrefixes,
    // One control connection: its commands are strictly one at a time.
    // create: PASV, the data connection, STOR, its 226; stat: SIZE,
    // MDTM; read: PASV, connect, RETR, 226; delete: DELE (round trips).
    .caps = {.stat = true, .mkdir = true, .max_in_flight = 1, .file_round_trips = {4, 2, 4, 1}},
    .options = kFtpOptions,
    .make = make,
    .display = "FTP",
    .default_port = 21,
};

}  // namespace cp::transfer
