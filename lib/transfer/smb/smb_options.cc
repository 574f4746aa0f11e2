// The smb driver's options (types, ranges, defaults: the table plan read and
// the session both check against), connections=auto, what the verdict and the
// protocol stage know of SMB (Samba's limits, smbstatus), and its DriverSpec.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/error.h"
#include "core/messages_json.h"
#include "transfer/driver.h"
#include "transfer/option_table.h"
#include "transfer/protocols.h"
#include "transfer/registry.h"
#include "transfer/smb/smb_session.h"

namespace cp::transfer {

unsigned smb_auto_connections(double rtt_s, uint64_t io_size, double rate) {
  CP_CHECK(io_size > 0);
  if (rtt_s <= smb::kLanRtt) return 1;
  // One call being handed over (the server reads all of it before it answers,
  // the caller takes all of it before that connection asks again), the others
  // in flight across its round trip: 2 + the calls a round trip lasts, or 3
  // with the rate unknown (measured through the lab's delay line at 2 and 10
  // ms: one connection idles 13-16 % of the time, far more than a round trip
  // per call, so no share of a call is small enough to stay on one).
  unsigned n = 3;
  if (rate > 0) n = 2 + static_cast<unsigned>(std::ceil(rtt_s / (double(io_size) / rate)));
  const auto by_memory = static_cast<unsigned>(std::max<uint64_t>(kSmbAutoMemory / io_size, 1));
  return std::max(1u, std::min({n, kSmbMaxConnections, by_memory}));
}

namespace {
constexpr std::string_view kSmbPrefixes[] = {"smb://"};
constexpr std::string_view kSmbProtocols = "NT1|SMB2|SMB2_02|SMB2_10|SMB3|SMB3_00|SMB3_02|SMB3_11";
constexpr OptionSpec kSmbOptions[] = {
    option::choice("encrypt", "default", "default|none|request|require",
                   "SMB3 encryption, as libsmbclient's client smb encrypt"),
    option::size("io_size", "", 4096, 64 << 20,
                 "bytes per smbc_read/smbc_write call; default 1 MiB, 8 MiB on a path whose "
                 "round trip is over 1 ms"),
    option::count_or_auto("connections", kSmbMaxConnections,
                          "connections moving one file's data at once; auto: 1 on a short path, "
                          "more where the round trip is long"),
    option::path_rate(
        "the path's rate, for connections=auto (unknown: 3 connections on a long path)"),
    option::seconds("timeout", "30s", "libsmbclient's timeout per call"),
    option::text("workgroup", "the login's domain or workgroup (a user DOMAIN;name sets it too)"),
    option::choice("min_protocol", "SMB2_02", kSmbProtocols, "the oldest dialect offered"),
    option::choice("max_protocol", "SMB3", kSmbProtocols, "the newest dialect offered"),
};
// Samba's settings that cap one request, and their default (4.x): 8 MiB.
constexpr uint64_t kSambaDefaultMaxIo = 8ull << 20;
constexpr ServerLimit kSambaLimits[] = {
    {"smb2 max read", "read", kSambaDefaultMaxIo},
    {"smb2 max write", "write", kSambaDefaultMaxIo},
    {"smb2 max trans", "", kSambaDefaultMaxIo},
};

// What the server agent's smb_status asks: smbstatus with this smb.conf.
std::string status_body(const std::string& server_conf) {
  return boost::json::serialize(msg::to_json(msg::SmbStatusRequest{server_conf}));
}

// The SMB session the client holds, as smbd reports it: dialect, signing,
// encryption (libsmbclient does not tell its caller); {"smb_negotiated":
// "unknown: why"} when smbd lists none from this client.
std::map<std::string, std::string> status_properties(const std::string& reply,
                                                     const std::string& client_address) {
  const auto st = msg::decode<msg::SmbStatusResult>(boost::json::parse(reply), "smb_status");
  for (const auto& sess : st.sessions) {
    // "ipv4:198.18.0.2:41234": this client's address between the colons.
    if (!client_address.empty() &&
        sess.client.find(":" + client_address + ":") == std::string::npos) {
      continue;
    }
    std::map<std::string, std::string> out;
    for (const auto& [k, val] :
         {std::pair{"dialect", sess.dialect}, std::pair{"signing", sess.signing},
          std::pair{"encryption", sess.encryption}}) {
      out[std::string("smb_") + k] = (val.empty() || val == "-") ? "none" : val;
    }
    return out;
  }
  return {{"smb_negotiated", "unknown: smbstatus lists no session from this client"}};
}

}  // namespace

const DriverSpec kSmbDriver = {
    .name = "smb",
    .summary = "SMB2/3 through libsmbclient (Samba's client library)",
    .url_prefixes = kSmbPrefixes,
    // The small-file pass's operations in flight: a session each, the extra
    // ones in helper processes (libsmbclient's contexts cannot run in several
    // threads: smb_session.h), as many as `connections` allows.
    .caps = {.random_access = true,
             .random_write = true,
             .stat = true,
             .mkdir = true,
             .max_in_flight = transfer::kSmbMaxConnections,
             .threads = false,
             // SMB2 as Debian 12's libsmbclient sends it, one request at a
             // time, none compounded (bench/smb2_count.py on a capture):
             // create CREATE, WRITE, CLOSE; stat CREATE, QUERY_INFO, CLOSE;
             // read CREATE, QUERY_INFO, READ, CLOSE (the size first, as
             // smbclient's get); delete a CREATE with delete-on-close, CLOSE.
             .file_round_trips = {3, 3, 4, 2}},
    .options = kSmbOptions,
    .make = smb::make_driver,
    .display = "SMB",
    .hints = {.server_limits = kSambaLimits, .negotiated_request_size = true, .samba_config = true},
    .negotiated = {.request = "smb_status", .body = status_body, .read = status_properties},
    .default_port = 445,
};

}  // namespace cp::transfer
