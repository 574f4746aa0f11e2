#include "transfer/forked_session.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace cp::transfer {

void keep_only(int fd) {
  if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
  ::close_range(static_cast<unsigned>(fd) + 1, ~0u, 0);
  const int null_fd = ::open("/dev/null", O_RDWR);
  for (int std_fd = 0; std_fd < 3; ++std_fd) {
    if (null_fd >= 0 && null_fd != std_fd) ::dup2(null_fd, std_fd);
  }
  if (null_fd > 2) ::close(null_fd);
}

namespace {

constexpr uint64_t kMaxFrame = 64u << 20;  // bytes: a file of the pass and its path, with room

// Frames: a 4-byte length, then the bytes. false: the other end is gone.
bool send_frame(int fd, const std::string& body) {
  const uint32_t n = static_cast<uint32_t>(body.size());
  std::string out(reinterpret_cast<const char*>(&n), 4);
  out += body;
  for (size_t off = 0; off < out.size();) {
    const ssize_t w = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool recv_frame(int fd, std::string& body) {
  uint32_t n = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&n), 4) || n > kMaxFrame) return false;
  body.resize(n);
  return read_all(fd, body.data(), n);
}

// Fields in a frame: u64 numbers and length-prefixed strings.
void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
void put_str(std::string& s, const std::string& v) {
  put_u64(s, v.size());
  s += v;
}
struct Cursor {
  const std::string& s;
  size_t pos = 0;
  uint64_t u64() {
    uint64_t v = 0;
    CP_CHECK(pos + 8 <= s.size());
    std::memcpy(&v, s.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string str() {
    const uint64_t n = u64();
    CP_CHECK(pos + n <= s.size());
    std::string v = s.substr(pos, n);
    pos += n;
    return v;
  }
};

// Throws the helper's error when answer `a` is one ('e' + kind, message, hint).
void throw_if_error(const std::string& a) {
  if (a[0] != 'e') return;
  Cursor c{a, 1};
  const auto kind = static_cast<ErrorKind>(c.u64());
  std::string msg = c.str();
  throw Error(kind, std::move(msg), c.str());
}

// Requests: op byte, then its fields. Answers: 'k' + fields, or 'e' + kind,
// message, hint.
enum Op : char { kPut = 'P', kGet = 'G', kStat = 'S', kMkdir = 'M', kRmdir = 'R', kRemove = 'D' };

std::string answer_error(const Error& e) {
  std::string a = "e";
  put_u64(a, static_cast<uint64_t>(e.kind()));
  put_str(a, e.what());
  put_str(a, e.hint());
  return a;
}

// One request on the helper's session; its answer.
std::string serve_one(Session& s, const std::string& req) {
  Cursor c{req, 1};
  const std::string path = c.str();
  std::string a = "k";
  switch (req[0]) {
    case kPut: {
      const std::string data = c.str();
      auto f = s.open(path, Mode::kWrite, data.size());
      if (!data.empty()) f->write(data.data(), data.size());
      f->close();
      break;
    }
    case kGet: {
      auto f = s.open(path, Mode::kRead, c.u64());
      std::string data;
      std::vector<char> buf(1 << 20);
      for (size_t n; (n = f->read(buf.data(), buf.size())) > 0;) {
        data.append(buf.data(), n);
        if (data.size() > kMaxFrame / 2) {
          throw Error(ErrorKind::kUnsupported,
                      fmt::format("{} is over {} bytes: too large for a helper's session", path,
                                  kMaxFrame / 2));
        }
      }
      f->close();
      put_str(a, data);
      break;
    }
    case kStat: {
      const FileInfo i = s.stat(path);
      put_u64(a, i.size);
      put_u64(a, static_cast<uint64_t>(i.mtime));
      put_u64(a, i.is_dir ? 1 : 0);
      break;
    }
    case kMkdir:
      s.mkdir(path);
      break;
    case kRmdir:
      s.rmdir(path);
      break;
    case kRemove:
      s.remove(path);
      break;
    default:
      CP_CHECK(false);
  }
  return a;
}

[[noreturn]] void helper_main(int fd, const std::function<std::unique_ptr<Session>()>& connect) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  keep_only(fd);
  std::unique_ptr<Session> s;
  try {
    s = connect();
  } catch (const Error& e) {
    send_frame(fd, answer_error(e));
    ::_exit(1);
  }
  if (!send_frame(fd, "k")) ::_exit(0);
  std::string req;
  while (recv_frame(fd, req) && !req.empty()) {
    std::string a;
    try {
      a = serve_one(*s, req);
    } catch (const Error& e) {
      a = answer_error(e);
    }
    if (!send_frame(fd, a)) break;
  }
  s.reset();  // logs out
  ::_exit(0);
}

class ForkedSession;

// A file of a forked session: written or read whole in one call.
class ForkedFile : public File {
 public:
  ForkedFile(ForkedSession& s, std::string path, Mode mode, uint64_t hint)
      : s_(s), path_(std::move(path)), mode_(mode), hint_(hint) {}
  size_t read(char* buf, size_t n) override;
  void write(const char* buf, size_t n) override {
    CP_CHECK(mode_ == Mode::kWrite && !closed_);
    data_.append(buf, n);
  }
  void close() override;

 private:
  ForkedSession& s_;
  std::string path_;
  Mode mode_;
  uint64_t hint_;
  std::string data_;
  size_t pos_ = 0;
  bool fetched_ = false, closed_ = false;
};

class ForkedSession : public Session {
 public:
  ForkedSession(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  ~ForkedSession() override {
    ::close(fd_);  // the helper logs out and ends
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  std::unique_ptr<File> open(const std::string& path, Mode mode, uint64_t hint) override {
    return std::make_unique<ForkedFile>(*this, path, mode, hint);
  }
  void remove(const std::string& path) override { call(kRemove, path); }
  FileInfo stat(const std::string& path) override {
    const std::string a = call(kStat, path);
    Cursor c{a, 1};
    FileInfo i;
    i.size = c.u64();
    i.mtime = static_cast<int64_t>(c.u64());
    i.is_dir = c.u64() != 0;
    return i;
  }
  void mkdir(const std::string& path) override { call(kMkdir, path); }
  void rmdir(const std::string& path) override { call(kRmdir, path); }

  // Sends a request; its answer ('k' + fields), or throws the helper's error.
  std::string call(Op op, const std::string& path, const std::string* data = nullptr,
                   uint64_t hint = 0) {
    std::string req(1, op);
    put_str(req, path);
    if (data) put_str(req, *data);
    if (op == kGet) put_u64(req, hint);
    std::string a;
    if (!send_frame(fd_, req) || !recv_frame(fd_, a) || a.empty()) {
      throw Error(ErrorKind::kIo,
                  fmt::format("the helper process {} of a share's session ended", pid_),
                  "its connection or the helper failed; see the server's log");
    }
    throw_if_error(a);
    return a;
  }

 private:
  pid_t pid_;
  int fd_;
};

size_t ForkedFile::read(char* buf, size_t n) {
  CP_CHECK(mode_ == Mode::kRead && !closed_);
  if (!fetched_) {
    const std::string a = s_.call(kGet, path_, nullptr, hint_);
    Cursor c{a, 1};
    data_ = c.str();
    fetched_ = true;
  }
  const size_t k = std::min(n, data_.size() - pos_);
  std::memcpy(buf, data_.data() + pos_, k);
  pos_ += k;
  return k;
}

void ForkedFile::close() {
  if (closed_) return;
  closed_ = true;
  if (mode_ == Mode::kWrite) s_.call(kPut, path_, &data_);
}

}  // namespace

std::unique_ptr<Session> fork_session(const std::function<std::unique_ptr<Session>()>& connect) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    throw Error(ErrorKind::kIo, "socketpair for a session's helper: " + errno_text(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    throw Error(ErrorKind::kIo, "cannot start a session's helper process: " + errno_text(errno));
  }
  if (pid == 0) {
    ::close(sv[0]);
    helper_main(sv[1], connect);
  }
  ::close(sv[1]);
  auto s = std::make_unique<ForkedSession>(pid, sv[0]);
  // The helper's login: "k", or its error.
  std::string a;
  if (!recv_frame(sv[0], a) || a.empty()) {
    throw Error(ErrorKind::kIo, fmt::format("the helper process {} ended before logging in", pid));
  }
  throw_if_error(a);
  return s;
}

}  // namespace cp::transfer
