// Linux: shaping rates read from the kernel over rtnetlink (platform.h), for
// hosts whose `tc` cannot print them (BusyBox's prints no tbf rate) or that
// have none.
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "probe/platform.h"

namespace cp::probe::os {

namespace {

struct Attr {
  uint16_t type = 0;
  const unsigned char* data = nullptr;
  size_t len = 0;
};

// The rtattrs in [p, p + len).
std::vector<Attr> attrs(const unsigned char* p, size_t len) {
  std::vector<Attr> out;
  while (len >= sizeof(rtattr)) {
    rtattr a;
    std::memcpy(&a, p, sizeof a);
    if (a.rta_len < sizeof(rtattr) || a.rta_len > len) break;
    out.push_back({static_cast<uint16_t>(a.rta_type & NLA_TYPE_MASK), p + RTA_LENGTH(0),
                   a.rta_len - RTA_LENGTH(0)});
    const size_t step = RTA_ALIGN(a.rta_len);
    if (step >= len) break;
    p += step;
    len -= step;
  }
  return out;
}

const Attr* find(const std::vector<Attr>& as, uint16_t type) {
  for (const Attr& a : as) {
    if (a.type == type) return &a;
  }
  return nullptr;
}

uint64_t u64_of(const Attr* a) {
  uint64_t v = 0;
  if (a != nullptr && a->len >= sizeof v) std::memcpy(&v, a->data, sizeof v);
  return v;
}

// A qdisc's or class's own rate, bytes/s; 0 when it sets none.
uint64_t rate_of(std::string_view kind, const Attr* options) {
  if (options == nullptr) return 0;
  if (kind == "tbf" || kind == "htb") {
    const std::vector<Attr> o = attrs(options->data, options->len);
    const bool tbf = kind == "tbf";
    const uint16_t rate64 = tbf ? uint16_t{TCA_TBF_RATE64} : uint16_t{TCA_HTB_RATE64};
    const uint16_t parms_type = tbf ? uint16_t{TCA_TBF_PARMS} : uint16_t{TCA_HTB_PARMS};
    if (uint64_t r64 = u64_of(find(o, rate64)); r64 > 0) return r64;
    const Attr* parms = find(o, parms_type);
    tc_ratespec rate{};
    if (parms != nullptr && parms->len >= sizeof rate) std::memcpy(&rate, parms->data, sizeof rate);
    return rate.rate;  // both structs start with the rate
  }
  if (kind == "netem") {
    // struct tc_netem_qopt, then attributes.
    const size_t head = NLA_ALIGN(sizeof(tc_netem_qopt));
    if (options->len < head) return 0;
    const std::vector<Attr> o = attrs(options->data + head, options->len - head);
    if (uint64_t r64 = u64_of(find(o, TCA_NETEM_RATE64)); r64 > 0) return r64;
    const Attr* r = find(o, TCA_NETEM_RATE);
    tc_netem_rate rate{};
    if (r != nullptr && r->len >= sizeof rate) std::memcpy(&rate, r->data, sizeof rate);
    return rate.rate;
  }
  if (kind == "cake") {
    return u64_of(find(attrs(options->data, options->len), TCA_CAKE_BASE_RATE64));
  }
  return 0;
}

// Dumps qdiscs (RTM_GETQDISC) or classes (RTM_GETTCLASS) of `ifindex` and
// returns the rates (bytes/s) each sets; for classes, root classes only.
std::optional<std::vector<uint64_t>> dump_rates(int ifindex, uint16_t type) {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return std::nullopt;
  // The kernel answers a dump at once; an emulator that drops the request
  // (qemu-user translates no qdisc messages) must not hang the facts.
  const timeval wait{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  struct {
    nlmsghdr h;
    tcmsg t;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = type;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 1;
  req.t.tcm_family = AF_UNSPEC;
  req.t.tcm_ifindex = ifindex;
  if (::send(fd, &req, sizeof req, 0) != static_cast<ssize_t>(sizeof req)) {
    ::close(fd);
    return std::nullopt;
  }
  std::vector<uint64_t> rates;
  std::vector<unsigned char> buf(1 << 16);
  bool done = false, ok = true;
  while (!done && ok) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) {
      ok = false;
      break;
    }
    size_t left = static_cast<size_t>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) {
        done = true;
        break;
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        ok = false;
        break;
      }
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(tcmsg))) continue;
      tcmsg t;
      std::memcpy(&t, NLMSG_DATA(h), sizeof t);
      if (t.tcm_ifindex != ifindex) continue;
      if (type == RTM_GETTCLASS && t.tcm_parent != TC_H_ROOT) continue;
      const auto* start = static_cast<const unsigned char*>(NLMSG_DATA(h)) + NLMSG_ALIGN(sizeof t);
      const std::vector<Attr> as = attrs(start, h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof t)));
      const Attr* kind = find(as, TCA_KIND);
      if (kind == nullptr || kind->len == 0) continue;
      const std::string_view k(reinterpret_cast<const char*>(kind->data),
                               strnlen(reinterpret_cast<const char*>(kind->data), kind->len));
      if (const uint64_t r = rate_of(k, find(as, TCA_OPTIONS)); r > 0) rates.push_back(r);
    }
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return rates;
}

}  // namespace

std::optional<uint64_t> shaped_rate_bits(const std::string& ifname) {
  const unsigned ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) return std::nullopt;
  const auto qdiscs = dump_rates(static_cast<int>(ifindex), RTM_GETQDISC);
  if (!qdiscs) return std::nullopt;
  std::optional<uint64_t> bits;
  // The lowest qdisc rate (tbf, netem, cake) caps the link.
  for (uint64_t r : *qdiscs) bits = bits ? std::min(*bits, r * 8) : r * 8;
  // htb: the highest root class rate, as the tc text path does.
  if (const auto classes = dump_rates(static_cast<int>(ifindex), RTM_GETTCLASS)) {
    if (!classes->empty()) {
      const uint64_t htb = *std::max_element(classes->begin(), classes->end()) * 8;
      bits = bits ? std::min(*bits, htb) : htb;
    }
  }
  return bits;
}

}  // namespace cp::probe::os
