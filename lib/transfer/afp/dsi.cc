#include "transfer/afp/dsi.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transfer/afp/afp_codec.h"

namespace cp::transfer::dsi {
namespace {

// Poll slice while blocking: how quickly a cancel is noticed (ms).
constexpr int kPollSliceMs = 250;
// Receive staging buffer; payload remainders larger than this are read
// straight into the message (bytes).
constexpr size_t kStagingSize = 64 << 10;

bool known_command(uint8_t c) {
  return c == kCloseSession || c == kCommand || c == kGetStatus || c == kOpenSession ||
         c == kTickle || c == kWrite || c == kAttention;
}

void put32(std::string& out, uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

Error peer_error(std::string message) {
  return Error(ErrorKind::kPeer, std::move(message),
               "the AFP server broke the DSI framing; check that the port is an AFP "
               "(netatalk afpd) port");
}

}  // namespace

std::string command_name(uint8_t command) {
  switch (command) {
    case kCloseSession:
      return "DSICloseSession";
    case kCommand:
      return "DSICommand";
    case kGetStatus:
      return "DSIGetStatus";
    case kOpenSession:
      return "DSIOpenSession";
    case kTickle:
      return "DSITickle";
    case kWrite:
      return "DSIWrite";
    case kAttention:
      return "DSIAttention";
  }
  return fmt::format("DSI command {}", command);
}

namespace {
// The header's fields in wire order, for both directions (afp::Get, afp::Put).
constexpr auto kHeaderFields = [](auto& io, auto& h) {
  io(h.flags, "flags");
  io(h.command, "command");
  io(h.request_id, "request id");
  io(h.code, "error code/data offset");
  io(h.length, "total data length");
  io(h.reserved, "reserved");
};
}  // namespace

std::string encode_header(const Header& h) { return afp::write_fields(h, kHeaderFields); }

Header decode_header(std::string_view bytes, uint32_t max_length) {
  const Header h = afp::read_fields<Header>(bytes, "DSI header", kHeaderFields);
  if (h.flags != kRequest && h.flags != kReply) {
    throw peer_error(
        fmt::format("DSI header: flags 0x{:02x} are neither request nor reply", h.flags));
  }
  if (!known_command(h.command)) {
    throw peer_error(fmt::format("DSI header: unknown command {}", h.command));
  }
  if (h.length > max_length) {
    throw peer_error(fmt::format("DSI header: {} of {} bytes exceeds the {} byte limit",
                                 command_name(h.command), h.length, max_length));
  }
  if (h.command == kWrite && !h.is_reply() && h.code > h.length) {
    throw peer_error(
        fmt::format("DSI header: DSIWrite data offset {} is past its length {}", h.code, h.length));
  }
  return h;
}

std::string encode_message(Header h, std::string_view payload) {
  h.length = static_cast<uint32_t>(payload.size());
  std::string out = encode_header(h);
  out += payload;
  return out;
}

void StreamDecoder::feed(std::string_view bytes) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  buf_ += bytes;
}

std::optional<Message> StreamDecoder::next() {
  if (buffered() < kHeaderSize) return std::nullopt;
  const Header h = decode_header(std::string_view(buf_).substr(pos_, kHeaderSize), max_length_);
  if (buffered() - kHeaderSize < h.length) return std::nullopt;
  Message m;
  m.header = h;
  m.payload = buf_.substr(pos_ + kHeaderSize, h.length);
  pos_ += kHeaderSize + h.length;
  if (pos_ > (1u << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return m;
}

std::string encode_options(const SessionOptions& o) {
  std::string out;
  auto put = [&](uint8_t type, const std::optional<uint32_t>& v) {
    if (!v) return;
    out += static_cast<char>(type);
    out += static_cast<char>(4);
    put32(out, *v);
  };
  put(kOptServerQuantum, o.server_quantum);
  put(kOptAttentionQuantum, o.attention_quantum);
  put(kOptReplayCache, o.replay_cache);
  return out;
}

SessionOptions decode_options(std::string_view payload) {
  afp::Reader r(payload, "DSIOpenSession options");
  SessionOptions o;
  while (r.remaining() > 0) {
    const uint8_t type = r.u8("option type");
    const uint8_t len = r.u8("option length");
    if (type <= kOptReplayCache) {
      if (len != 4)
        r.fail("option length", fmt::format("is {} for option {}; expected 4", len, type));
      const uint32_t v = r.u32("option value");
      if (type == kOptServerQuantum) o.server_quantum = v;
      if (type == kOptAttentionQuantum) o.attention_quantum = v;
      if (type == kOptReplayCache) o.replay_cache = v;
    } else {
      r.skip(len, "option value");
    }
  }
  return o;
}

// --- Connection -------------------------------------------------------------

std::unique_ptr<Connection> Connection::connect(const std::string& host, uint16_t port,
                                                const CancelToken* cancel,
                                                ConnectionConfig config) {
  const std::string where = host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                                                : fmt::format("{}:{}", host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0) {
    throw Error(ErrorKind::kRemote,
                fmt::format("cannot resolve AFP server '{}': {}", host, gai_strerror(rc)),
                "check the host name in the share's afp:// URL");
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
  std::string last_error = "no address";
  bool timed_out = false;
  bool refused = false;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = errno_text(errno);
      continue;
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      const double deadline = monotonic_seconds() + config.connect_timeout_s;
      err = ETIMEDOUT;
      while (monotonic_seconds() < deadline) {
        if (cancel && cancel->cancelled()) {
          ::close(fd);
          throw Error(ErrorKind::kCancelled, "cancelled while connecting to AFP server " + where);
        }
        pollfd p{fd, POLLOUT, 0};
        const int n = ::poll(&p, 1, kPollSliceMs);
        if (n < 0 && errno != EINTR) {
          err = errno;
          break;
        }
        if (n > 0) {
          socklen_t len = sizeof err;
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
          break;
        }
      }
    }
    if (err == 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>(fd, where, config);
      c->set_cancel(cancel);
      return c;
    }
    ::close(fd);
    timed_out = timed_out || err == ETIMEDOUT;
    refused = refused || err == ECONNREFUSED;
    last_error = err == ETIMEDOUT ? fmt::format("no answer within {} s", config.connect_timeout_s)
                                  : errno_text(err);
  }
  if (refused) {
    throw Error(ErrorKind::kRemote,
                fmt::format("AFP server {} refused the connection (nothing listens on port {})",
                            where, port),
                "check that afpd (netatalk) runs there and listens on that port "
                "(afp.conf: 'afp port', 'afp listen'), or fix the port in the afp:// URL");
  }
  throw Error(ErrorKind::kRemote,
              fmt::format("cannot connect to AFP server {}: {}", where, last_error),
              timed_out ? "check the host and that no firewall drops TCP port " + port_text
                        : "check the host and port in the share's afp:// URL");
}

Connection::Connection(int fd, std::string peer, ConnectionConfig config)
    : fd_(fd), peer_(std::move(peer)), config_(config), staging_(kStagingSize) {
  const int flags = fcntl(fd_, F_GETFL);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  last_send_ = last_recv_ = monotonic_seconds();
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

void Connection::set_cancel(const CancelToken* cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_ = cancel;
}

void Connection::set_reply_timeout(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  config_.reply_timeout_s = seconds;
}

void Connection::set_max_reply(uint32_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  config_.max_reply = bytes;
}

bool Connection::broken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_.has_value();
}

size_t Connection::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_.size() + replies_.size();
}

Connection::Stats Connection::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Connection::fail(Error e) {
  if (!failure_) failure_ = e;
  throw e;
}

void Connection::check_usable() const {
  if (failure_) throw *failure_;
  if (attention_) throw *attention_;
}

uint16_t Connection::next_id() {
  // Ids wrap from 65535 to 0; skip any still awaiting a reply.
  do {
    ++last_id_;
  } while (outstanding_.count(last_id_) || replies_.count(last_id_) || discarded_.count(last_id_));
  return last_id_;
}

void Connection::send_frame(const Header& h, std::string_view a, std::string_view b) {
  const std::string hdr = encode_header(h);
  const std::string_view parts[3] = {hdr, a, b};
  size_t sent = 0;
  const size_t total = hdr.size() + a.size() + b.size();
  double progress = monotonic_seconds();
  while (sent < total) {
    iovec iov[3];
    int n_iov = 0;
    size_t skip = sent;
    for (const auto& p : parts) {
      if (skip >= p.size()) {
        skip -= p.size();
        continue;
      }
      iov[n_iov].iov_base = const_cast<char*>(p.data() + skip);
      iov[n_iov].iov_len = p.size() - skip;
      ++n_iov;
      skip = 0;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n_iov;
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      progress = monotonic_seconds();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The server is not reading yet: take in what it sends meanwhile so
      // neither side blocks on a full buffer.
      pollfd p{fd_, POLLOUT | POLLIN, 0};
      const int r = ::poll(&p, 1, kPollSliceMs);
      if (r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) read_available();
      if (cancel_ && cancel_->cancelled()) {
        // A frame cut short leaves the stream unusable.
        fail(Error(ErrorKind::kCancelled,
                   fmt::format("cancelled while sending to AFP server {}", peer_)));
      }
      if (monotonic_seconds() - progress > config_.reply_timeout_s) {
        fail(Error(
            ErrorKind::kRemote,
            fmt::format("AFP server {} accepted no data for {} s", peer_, config_.reply_timeout_s),
            "the server or the network is stuck; check the server's load and logs"));
      }
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) {
      fail(Error(ErrorKind::kRemote,
                 fmt::format("AFP server {} closed the connection ({})", peer_, errno_text(errno)),
                 "check the server's log (afpd); it may have dropped the session"));
    }
    fail(Error(ErrorKind::kRemote,
               fmt::format("lost the connection to AFP server {}: {}", peer_, errno_text(errno)),
               "check that the server is up; its log (afpd) may say why it dropped the session"));
  }
  last_send_ = monotonic_seconds();
}

void Connection::send_owed() {
  while (owe_tickle_ || !owed_attention_acks_.empty()) {
    if (!owed_attention_acks_.empty()) {
      Header h;
      h.flags = kReply;
      h.command = kAttention;
      h.request_id = owed_attention_acks_.front();
      owed_attention_acks_.pop_front();
      send_frame(h, {}, {});
    } else {
      owe_tickle_ = false;
      Header h;
      h.command = kTickle;
      h.request_id = next_id();
      send_frame(h, {}, {});
      ++stats_.tickles_sent;
    }
  }
}

uint16_t Connection::send_request(uint8_t command, uint32_t code, std::string_view a,
                                  std::string_view b, bool expect_reply) {
  check_usable();
  Header h;
  h.command = command;
  h.request_id = next_id();
  h.code = code;
  h.length = static_cast<uint32_t>(a.size() + b.size());
  if (expect_reply) outstanding_[h.request_id] = command;
  send_frame(h, a, b);
  send_owed();
  return h.request_id;
}

bool Connection::read_available() {
  // A large payload remainder goes straight into the message.
  if (have_header_ && staged_begin_ == staged_end_ &&
      cur_.length - cur_got_ >= staging_.size() / 2) {
    const ssize_t n = ::recv(fd_, cur_dst_ + cur_got_, cur_.length - cur_got_, 0);
    if (!received(n, /*mid_reply=*/true)) return false;
    cur_got_ += static_cast<size_t>(n);
    consume_staged();
    return true;
  }
  if (staged_begin_ == staged_end_) staged_begin_ = staged_end_ = 0;
  if (staged_end_ == staging_.size()) {
    std::memmove(staging_.data(), staging_.data() + staged_begin_, staged_end_ - staged_begin_);
    staged_end_ -= staged_begin_;
    staged_begin_ = 0;
  }
  const ssize_t n = ::recv(fd_, staging_.data() + staged_end_, staging_.size() - staged_end_, 0);
  if (!received(n, /*mid_reply=*/false)) return false;
  staged_end_ += static_cast<size_t>(n);
  consume_staged();
  return true;
}

bool Connection::received(ssize_t n, bool mid_reply) {
  if (n > 0) {
    last_recv_ = monotonic_seconds();
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if ((n == 0 || errno == ECONNRESET) && mid_reply) {
    fail(Error(ErrorKind::kRemote,
               fmt::format("AFP server {} closed the connection in the middle of a reply", peer_),
               "check the server's log (afpd); it may have crashed or been restarted"));
  }
  if (n == 0 || errno == ECONNRESET) {
    fail(
        Error(ErrorKind::kRemote,
              fmt::format("AFP server {} closed the connection{}", peer_, n == 0 ? "" : " (reset)"),
              "check the server's log (afpd): it may have refused the session, hit a "
              "session limit, or been restarted"));
  }
  fail(Error(ErrorKind::kRemote,
             fmt::format("lost the connection to AFP server {}: {}", peer_, errno_text(errno)),
             "check that the server is up"));
}

void Connection::consume_staged() {
  for (;;) {
    if (!have_header_) {
      if (staged_end_ - staged_begin_ < kHeaderSize) return;
      try {
        cur_ = decode_header(std::string_view(staging_.data() + staged_begin_, kHeaderSize),
                             config_.max_reply);
      } catch (const Error& e) {
        fail(e);
      }
      staged_begin_ += kHeaderSize;
      have_header_ = true;
      cur_got_ = 0;
      cur_direct_ = target_.active && !target_.done && cur_.is_reply() &&
                    cur_.request_id == target_.id && cur_.length <= target_.cap;
      if (cur_direct_) {
        cur_dst_ = target_.dst;
      } else {
        cur_payload_.assign(cur_.length, '\0');
        cur_dst_ = cur_payload_.data();
      }
    }
    const size_t take = std::min(staged_end_ - staged_begin_, size_t{cur_.length} - cur_got_);
    std::memcpy(cur_dst_ + cur_got_, staging_.data() + staged_begin_, take);
    staged_begin_ += take;
    cur_got_ += take;
    if (cur_got_ < cur_.length) return;
    finish_current();
  }
}

void Connection::finish_current() {
  have_header_ = false;
  if (!cur_direct_) {
    dispatch(Message{cur_, std::move(cur_payload_)});
    cur_payload_.clear();
    return;
  }
  // The checks dispatch() makes of a reply (the target awaits one, so its id
  // cannot be a discarded one).
  cur_direct_ = false;
  settle_outstanding(cur_);
  target_.done = true;
  target_.header = cur_;
}

void Connection::settle_outstanding(const Header& h) {
  auto it = outstanding_.find(h.request_id);
  if (it == outstanding_.end()) {
    fail(peer_error(
        fmt::format("AFP server {} sent a {} reply to request id {}, which awaits no reply", peer_,
                    command_name(h.command), h.request_id)));
  }
  if (it->second != h.command) {
    fail(peer_error(fmt::format("AFP server {} answered {} request id {} with a {} reply", peer_,
                                command_name(it->second), h.request_id, command_name(h.command))));
  }
  outstanding_.erase(it);
}

void Connection::detach_target() {
  if (have_header_ && cur_direct_) {
    cur_payload_.assign(cur_.length, '\0');
    std::memcpy(cur_payload_.data(), cur_dst_, cur_got_);
    cur_dst_ = cur_payload_.data();
    cur_direct_ = false;
  }
  target_ = {};
}

void Connection::dispatch(Message m) {
  const Header& h = m.header;
  if (h.is_reply()) {
    if (discarded_.erase(h.request_id)) return;
    settle_outstanding(h);
    replies_.emplace(h.request_id, std::move(m));
    return;
  }
  switch (h.command) {
    case kTickle:
      ++stats_.tickles_received;
      owe_tickle_ = true;  // answered once the current frame is out
      return;
    case kAttention: {
      ++stats_.attentions;
      owed_attention_acks_.push_back(h.request_id);
      if (m.payload.size() < 2) return;  // no attention code: nothing to act on
      const afp::Attention a = afp::decode_attention(m.payload);
      if (a.crashed) {
        attention_ =
            Error(ErrorKind::kRemote, fmt::format("AFP server {} announced that it crashed", peer_),
                  "check the server's log (afpd) and retry once it is back");
      } else if (a.shutdown) {
        attention_ = Error(
            ErrorKind::kRemote,
            a.minutes ? fmt::format("AFP server {} announced that it shuts down in {} min", peer_,
                                    a.minutes)
                      : fmt::format("AFP server {} announced that it is shutting down", peer_),
            "retry when the server is back; results taken during a shutdown would mislead");
      }
      return;
    }
    case kCloseSession:
      fail(Error(ErrorKind::kRemote, fmt::format("AFP server {} closed the session", peer_),
                 "the server ended the session (idle timeout, shutdown or an administrator); "
                 "check its log (afpd)"));
    default:
      fail(peer_error(fmt::format("AFP server {} sent a {} request, which servers do not send",
                                  peer_, command_name(h.command))));
  }
}

Message Connection::wait_locked(uint16_t id) {
  for (;;) {
    if (auto it = replies_.find(id); it != replies_.end()) {
      Message m = std::move(it->second);
      replies_.erase(it);
      if (!failure_) send_owed();
      return m;
    }
    wait_step(id, [&] { return replies_.count(id) > 0; });
  }
}

void Connection::wait_step(uint16_t id, const std::function<bool()>& arrived) {
  // Acknowledge an attention before reporting it.
  if (!failure_) send_owed();
  check_usable();
  if (!outstanding_.count(id)) {
    CP_CHECK(!"waiting for a request id that was never sent");
  }
  try {
    while (read_available()) {
      if (arrived()) break;
    }
  } catch (const Error&) {
    // A reply that came before the failure (netatalk sends a refused
    // login's reply, an attention and DSICloseSession within 150 us) is
    // still the answer; the failure stays for the next call.
    if (!arrived()) throw;
  }
  if (arrived() || attention_) return;
  pollfd p{fd_, POLLIN, 0};
  const int n = ::poll(&p, 1, kPollSliceMs);
  if (n < 0 && errno != EINTR) {
    fail(Error(ErrorKind::kIo, fmt::format("poll on AFP connection: {}", errno_text(errno))));
  }
  if (cancel_ && cancel_->cancelled()) {
    throw Error(ErrorKind::kCancelled,
                fmt::format("cancelled while waiting for AFP server {}", peer_));
  }
  if (n == 0 && monotonic_seconds() - last_recv_ > config_.reply_timeout_s) {
    fail(Error(ErrorKind::kRemote,
               fmt::format("AFP server {} sent nothing for {} s while a reply was due", peer_,
                           config_.reply_timeout_s),
               "the server or the network is stuck; check the server's load and log, or "
               "raise the share option 'timeout'"));
  }
}

std::string Connection::get_status() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint16_t id = send_request(kGetStatus, 0, {}, {}, true);
  Message m = wait_locked(id);
  if (m.header.error() != 0) {
    throw Error(
        ErrorKind::kRemote,
        fmt::format("AFP server {} answered DSIGetStatus with error {}", peer_, m.header.error()),
        "check that the port is an AFP server's");
  }
  return std::move(m.payload);
}

SessionOptions Connection::open_session(uint32_t attention_quantum) {
  std::lock_guard<std::mutex> lock(mu_);
  SessionOptions mine;
  mine.attention_quantum = attention_quantum;
  const std::string opts = encode_options(mine);
  const uint16_t id = send_request(kOpenSession, 0, opts, {}, true);
  Message m = wait_locked(id);
  if (m.header.error() != 0) {
    throw Error(ErrorKind::kRemote,
                fmt::format("AFP server {} refused the session (DSIOpenSession error {})", peer_,
                            m.header.error()),
                "the server may be at its session limit ('max connections' in afp.conf) or "
                "shutting down");
  }
  return decode_options(m.payload);
}

uint16_t Connection::send_command(std::string_view afp) {
  std::lock_guard<std::mutex> lock(mu_);
  return send_request(kCommand, 0, afp, {}, true);
}

uint16_t Connection::send_write(std::string_view afp_header, std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  return send_request(kWrite, static_cast<uint32_t>(afp_header.size()), afp_header, data, true);
}

Message Connection::wait(uint16_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return wait_locked(id);
}

Header Connection::wait_into(uint16_t id, char* dst, size_t cap) {
  std::lock_guard<std::mutex> lock(mu_);
  auto too_long = [&](const Header& h) {
    return peer_error(
        fmt::format("AFP server {} answered request id {} with {} bytes; at most {} "
                    "were asked for",
                    peer_, id, h.length, cap));
  };
  if (auto it = replies_.find(id); it != replies_.end()) {  // it came earlier
    Message m = std::move(it->second);
    replies_.erase(it);
    if (m.payload.size() > cap) throw too_long(m.header);
    std::memcpy(dst, m.payload.data(), m.payload.size());
    if (!failure_) send_owed();
    return m.header;
  }
  target_ = {};
  target_.active = true;
  target_.id = id;
  target_.dst = dst;
  target_.cap = cap;
  if (have_header_ && cur_.is_reply() && cur_.request_id == id && cur_.length <= cap) {
    // It is arriving already: what came so far moves, the rest lands in dst.
    std::memcpy(dst, cur_payload_.data(), cur_got_);
    cur_payload_.clear();
    cur_dst_ = dst;
    cur_direct_ = true;
  }
  struct Detach {
    Connection& c;
    ~Detach() { c.detach_target(); }
  } detach{*this};
  for (;;) {
    if (target_.done) {
      const Header h = target_.header;
      if (!failure_) send_owed();
      return h;
    }
    if (auto it = replies_.find(id); it != replies_.end()) {  // too long to land in dst
      const Header h = it->second.header;
      replies_.erase(it);
      throw too_long(h);
    }
    wait_step(id, [&] { return target_.done || replies_.count(id) > 0; });
  }
}

void Connection::discard(uint16_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (replies_.erase(id)) return;
  if (outstanding_.erase(id)) discarded_.insert(id);
}

void Connection::tickle() {
  std::lock_guard<std::mutex> lock(mu_);
  check_usable();
  owe_tickle_ = true;
  send_owed();
}

void Connection::keepalive(double idle_s) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || failure_) return;
  try {
    while (read_available()) {
    }
    if (monotonic_seconds() - last_send_ >= idle_s) owe_tickle_ = true;
    send_owed();
  } catch (const Error&) {
    // Kept in failure_ for the next call.
  }
}

void Connection::close_session() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) return;
  if (!failure_) {
    try {
      Header h;
      h.command = kCloseSession;
      h.request_id = next_id();
      send_frame(h, {}, {});
    } catch (const Error&) {
    }
  }
  ::shutdown(fd_, SHUT_RDWR);
  if (!failure_) failure_ = Error(ErrorKind::kRemote, "the AFP session is closed");
}

}  // namespace cp::transfer::dsi
