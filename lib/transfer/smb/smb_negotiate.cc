// The smb driver's NEGOTIATE probe: SMB2 (and SMB1) NEGOTIATE and SMB2 ECHO
// messages, and the probe's own TCP connection that sends them, for the
// sizes the server accepts and the path's round trip (see smb_session.h).
#include <linux/tcp.h>  // struct tcp_info with tcpi_min_rtt
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "transfer/protocols.h"
#include "transfer/smb/smb_session.h"

namespace cp::transfer {

namespace {
void put16(std::string& o, uint16_t v) {
  o += static_cast<char>(v & 0xff);
  o += static_cast<char>(v >> 8);
}
void put32(std::string& o, uint32_t v) {
  put16(o, static_cast<uint16_t>(v & 0xffff));
  put16(o, static_cast<uint16_t>(v >> 16));
}
uint32_t get16(std::string_view s, size_t at) {
  return uint32_t{static_cast<uint8_t>(s[at])} | uint32_t{static_cast<uint8_t>(s[at + 1])} << 8;
}
uint32_t get32(std::string_view s, size_t at) { return get16(s, at) | get16(s, at + 2) << 16; }
// `m` in its NetBIOS session message frame: a zero byte, then its length in
// 24 bits, big-endian (RFC 1002 4.3.1, as SMB over TCP 445 frames it).
std::string netbios_frame(const std::string& m) {
  std::string frame(1, '\0');
  frame += static_cast<char>(m.size() >> 16);
  frame += static_cast<char>(m.size() >> 8);
  frame += static_cast<char>(m.size());
  return frame + m;
}
}  // namespace

uint16_t smb2_dialect_of(std::string_view name) {
  if (name == "SMB2_02") return 0x0202;
  if (name == "SMB2_10" || name == "SMB2") return 0x0210;
  if (name == "SMB3_00") return 0x0300;
  if (name == "SMB3_02") return 0x0302;
  if (name == "SMB3_11" || name == "SMB3") return 0x0311;
  return 0;
}

std::string smb2_dialect_name(uint16_t d) {
  switch (d) {
    case 0x0202:
      return "SMB2_02";
    case 0x0210:
      return "SMB2_10";
    case 0x0300:
      return "SMB3_00";
    case 0x0302:
      return "SMB3_02";
    case 0x0311:
      return "SMB3_11";
  }
  return fmt::format("0x{:04x}", d);
}

bool is_smb1_protocol(std::string_view name) {
  return name == "NT1" || name == "LANMAN2" || name == "LANMAN1" || name == "COREPLUS" ||
         name == "CORE";
}

std::string smb1_negotiate_request() {
  std::string m;
  // SMB1 header (MS-CIFS 2.2.3.1): protocol, command NEGOTIATE (0x72),
  // status, flags (canonical paths), flags2 (unicode, NT status, extended
  // security, long names), PID high, security features, reserved, TID, PID
  // low, UID, MID.
  m += "\xffSMB";
  m += static_cast<char>(0x72);
  put32(m, 0);
  m += static_cast<char>(0x18);
  put16(m, 0xc801);
  put16(m, 0);
  m.append(8, '\0');
  put16(m, 0);
  put16(m, 0xffff);
  put16(m, 0xfeff);
  put16(m, 0);
  put16(m, 0);
  // NEGOTIATE request (2.2.4.52.1): no words, the dialect strings.
  const std::string dialect = std::string("\x02NT LM 0.12") + '\0';
  m += '\0';
  put16(m, static_cast<uint16_t>(dialect.size()));
  m += dialect;
  return netbios_frame(m);
}

namespace {
// The error for an unusable NEGOTIATE answer of `protocol` ("SMB1"): why,
// and the fix.
struct BadAnswer {
  const char* protocol;
  const char* fix;
  Error operator()(const std::string& why) const {
    return Error(ErrorKind::kPeer, fmt::format("{} NEGOTIATE response: {}", protocol, why), fix);
  }
};

// The start of a NEGOTIATE answer: at least `min` bytes, and after the
// 4-byte length prefix the protocol's `magic`.
void check_start(std::string_view frame, size_t min, std::string_view magic, const BadAnswer& bad) {
  if (frame.size() < min) throw bad(fmt::format("{} bytes is too short", frame.size()));
  if (frame.substr(4, 4) != magic) throw bad(fmt::format("not an {} message", bad.protocol));
}
}  // namespace

Smb1Negotiate parse_smb1_negotiate_response(std::string_view frame) {
  const BadAnswer bad{"SMB1",
                      "check that the server speaks SMB1 (smb.conf: server min protocol = NT1)"};
  constexpr size_t kHdr = 4 + 32;  // length prefix, SMB1 header
  check_start(frame, kHdr + 3, std::string_view("\xffSMB", 4), bad);
  if (static_cast<uint8_t>(frame[8]) != 0x72) throw bad("not a NEGOTIATE answer");
  const uint32_t status = get32(frame, 9);
  if (status != 0) throw bad(fmt::format("status 0x{:08x}", status));
  Smb1Negotiate n;
  const uint8_t words = static_cast<uint8_t>(frame[kHdr]);
  const uint32_t index = get16(frame, kHdr + 1);
  // 17 words: the NT LM 0.12 answer (2.2.4.52.2); index 0xffff: none chosen.
  if (words != 17 || index != 0) return n;
  if (frame.size() < kHdr + 1 + 34) throw bad("an NT LM answer cut short");
  n.nt1 = true;
  n.max_buffer_size = get32(frame, kHdr + 1 + 7);
  return n;
}

std::string smb2_negotiate_request(uint16_t min_dialect, uint16_t max_dialect) {
  std::vector<uint16_t> dialects;
  for (uint16_t d : {0x0202, 0x0210, 0x0300, 0x0302}) {
    if (d >= min_dialect && d <= max_dialect) dialects.push_back(d);
  }
  CP_CHECK(!dialects.empty());
  std::string m;
  // SMB2 header (MS-SMB2 2.2.1.2): protocol id, structure size 64, credit
  // charge, status, command NEGOTIATE (0), credits asked, flags, next
  // command, message id, process id, tree id, session id, signature.
  m += "\xfeSMB";
  put16(m, 64);
  put16(m, 0);
  put32(m, 0);
  put16(m, 0);
  put16(m, 1);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);  // message id (64 bits)
  put32(m, 0xfeff);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);  // session id (64 bits)
  m.append(16, '\0');
  // NEGOTIATE request (2.2.3): structure size 36, dialect count, security
  // mode (signing enabled), reserved, capabilities (large MTU), client GUID,
  // client start time, dialects.
  put16(m, 36);
  put16(m, static_cast<uint16_t>(dialects.size()));
  put16(m, 1);
  put16(m, 0);
  put32(m, 0x4);
  m.append("chokepoint-probe", 16);
  m.append(8, '\0');
  for (uint16_t d : dialects) put16(m, d);
  return netbios_frame(m);
}

std::string smb2_echo_request(uint64_t message_id) {
  std::string m;
  // SMB2 header (MS-SMB2 2.2.1.2) as in NEGOTIATE, command ECHO (0x0d), one
  // credit asked, then the ECHO request (2.2.28): structure size 4, reserved.
  m += "\xfeSMB";
  put16(m, 64);
  put16(m, 0);  // credit charge (0: one credit; 2.0.2 requires 0)
  put32(m, 0);
  put16(m, 0x0d);
  put16(m, 1);
  put32(m, 0);
  put32(m, 0);
  put32(m, static_cast<uint32_t>(message_id));
  put32(m, static_cast<uint32_t>(message_id >> 32));
  put32(m, 0xfeff);
  put32(m, 0);
  put32(m, 0);
  put32(m, 0);  // session id (64 bits): none
  m.append(16, '\0');
  put16(m, 4);
  put16(m, 0);
  return netbios_frame(m);
}

bool smb2_is_echo_response(std::string_view frame) {
  constexpr size_t kHdr = 4 + 64;
  return frame.size() >= kHdr + 4 && frame.substr(4, 4) == std::string_view("\xfeSMB", 4) &&
         get32(frame, 4 + 8) == 0 && get16(frame, 4 + 12) == 0x0d &&
         (get32(frame, 4 + 16) & 1) != 0;  // flags: a response
}

Smb2Limits parse_smb2_negotiate_response(std::string_view frame) {
  const BadAnswer bad{"SMB2", "check that the port is an SMB2 server's (smbd, Windows, a NAS)"};
  constexpr size_t kHdr = 4 + 64;  // length prefix, SMB2 header
  check_start(frame, kHdr + 40, std::string_view("\xfeSMB", 4), bad);
  const uint32_t status = get32(frame, 4 + 8);
  if (status != 0) throw bad(fmt::format("status 0x{:08x}", status));
  if (get16(frame, 4 + 12) != 0) throw bad("not a NEGOTIATE answer");
  Smb2Limits l;
  l.dialect = static_cast<uint16_t>(get16(frame, kHdr + 4));
  l.max_transact = get32(frame, kHdr + 28);
  l.max_read = get32(frame, kHdr + 32);
  l.max_write = get32(frame, kHdr + 36);
  if (l.max_transact == 0 || l.max_read == 0 || l.max_write == 0) {
    throw bad("a maximum size of 0");
  }
  return l;
}

namespace smb {
namespace {

// A connection of the probe's own to host:port: its round trip, then `talk`
// (a NEGOTIATE and what follows) through `io`. Returns what `talk` returns;
// nullopt when no address connects or the exchange fails within
// kProbeTimeout. *rtt: the least round trip the kernel saw on the connection
// (handshake and every answer); *handshake_rtt: the handshake's alone.
struct ProbeIo {
  std::function<bool(const std::string&)> send_all;
  std::function<bool(std::string&)> recv_frame;  // one length-prefixed frame
};
template <class T>
std::optional<T> probe_connection(const std::string& host, uint16_t port, double* rtt,
                                  double* handshake_rtt,
                                  const std::function<std::optional<T>(ProbeIo&)>& talk) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) {
    return std::nullopt;
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
  const double deadline = monotonic_seconds() + kProbeTimeout;
  auto wait_for = [&](int fd, short events) {
    for (;;) {
      const double left = deadline - monotonic_seconds();
      if (left <= 0) return false;
      pollfd p{fd, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  };
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    // The TCP handshake is the path's round trip (the NEGOTIATE answer also
    // waits for smbd to fork a process for the connection).
    const double t0 = monotonic_seconds();
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS || !wait_for(fd, POLLOUT)) continue;
      int err = 0;
      socklen_t len = sizeof err;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) continue;
    }
    // The kernel's measure of the handshake, free of this process's
    // scheduling (a busy host can add milliseconds to the wall clock).
    *rtt = monotonic_seconds() - t0;
    tcp_info ti{};
    socklen_t ti_len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &ti_len) == 0 && ti.tcpi_rtt > 0) {
      *rtt = ti.tcpi_rtt / 1e6;
    }
    *handshake_rtt = *rtt;
    ProbeIo io;
    io.send_all = [&](const std::string& req) {
      size_t sent = 0;
      while (sent < req.size()) {
        const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
          sent += static_cast<size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
          if (!wait_for(fd, POLLOUT)) return false;
        } else {
          return false;
        }
      }
      return true;
    };
    io.recv_frame = [&](std::string& frame) {
      frame.clear();
      size_t want = 4;
      while (frame.size() < want) {
        char buf[4096];
        const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, want - frame.size()), 0);
        if (n > 0) {
          frame.append(buf, static_cast<size_t>(n));
          if (frame.size() == 4 && want == 4) {
            want = 4 + ((size_t{static_cast<uint8_t>(frame[1])} << 16) |
                        (size_t{static_cast<uint8_t>(frame[2])} << 8) |
                        size_t{static_cast<uint8_t>(frame[3])});
            if (want > (1u << 16)) return false;  // no NEGOTIATE or ECHO answer is that long
          }
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
          if (!wait_for(fd, POLLIN)) return false;
        } else {
          return false;
        }
      }
      return true;
    };
    std::optional<T> out = talk(io);
    if (!out) return std::nullopt;
    // The kernel's least RTT sample on this connection (handshake and every
    // answer), else its smoothed RTT now: whichever is smaller.
    ti = {};
    ti_len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &ti_len) == 0) {
      if (ti.tcpi_rtt > 0) *rtt = std::min(*rtt, ti.tcpi_rtt / 1e6);
      if (ti_len >= offsetof(tcp_info, tcpi_min_rtt) + sizeof ti.tcpi_min_rtt &&
          ti.tcpi_min_rtt > 0 && ti.tcpi_min_rtt != ~0u) {
        *rtt = std::min(*rtt, ti.tcpi_min_rtt / 1e6);
      }
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Smb2Limits> probe_limits(const std::string& host, uint16_t port,
                                       const std::string& min_protocol,
                                       const std::string& max_protocol, double* rtt,
                                       double* handshake_rtt, int* samples) {
  const uint16_t lo = std::max<uint16_t>(smb2_dialect_of(min_protocol), 0x0202);
  const uint16_t hi = std::min<uint16_t>(smb2_dialect_of(max_protocol), 0x0302);
  if (lo > hi) return std::nullopt;
  return probe_connection<Smb2Limits>(
      host, port, rtt, handshake_rtt, [&](ProbeIo& io) -> std::optional<Smb2Limits> {
        *samples = 1;
        std::string frame;
        if (!io.send_all(smb2_negotiate_request(lo, hi)) || !io.recv_frame(frame)) {
          return std::nullopt;
        }
        std::optional<Smb2Limits> limits;
        try {
          limits = parse_smb2_negotiate_response(frame);
        } catch (const Error&) {
          return std::nullopt;
        }
        // More RTT samples: ECHOs (no session needed), one at a time; a server
        // that refuses them leaves the samples taken so far.
        std::string echo;
        for (int i = 1; i <= kProbeEchoes; ++i) {
          if (!io.send_all(smb2_echo_request(static_cast<uint64_t>(i))) || !io.recv_frame(echo) ||
              !smb2_is_echo_response(echo)) {
            break;
          }
          ++*samples;
        }
        return limits;
      });
}

// SMB1 only (max_protocol NT1): what the server answers an NT1 offer, the
// one libsmbclient then makes; nullopt when it does not answer one.
std::optional<Smb1Negotiate> probe_smb1(const std::string& host, uint16_t port, double* rtt,
                                        double* handshake_rtt, int* samples) {
  return probe_connection<Smb1Negotiate>(
      host, port, rtt, handshake_rtt, [&](ProbeIo& io) -> std::optional<Smb1Negotiate> {
        *samples = 1;
        std::string frame;
        if (!io.send_all(smb1_negotiate_request()) || !io.recv_frame(frame)) return std::nullopt;
        try {
          return parse_smb1_negotiate_response(frame);
        } catch (const Error&) {
          return std::nullopt;
        }
      });
}

}  // namespace smb
}  // namespace cp::transfer
