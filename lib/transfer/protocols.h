// Pure helpers of the ftp, smb and path drivers (error mapping, config
// lookups), declared here so unit tests can reach them. Internal to
// lib/transfer; no libcurl or libsmbclient types.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace cp::transfer {

class Session;  // transfer/driver.h

// What a driver was doing when it failed; the error text says it.
// kClose closes a file that was written; kCloseRead one that was read.
enum class Step { kConnect, kOpenRead, kOpenWrite, kRead, kWrite, kClose, kRemove, kCloseRead };

// What a driver was doing at `step`, for an error message: "opening for
// reading", "closing after writing", ...; `connect` and `close_write` name those
// two steps in the protocol's own terms ("mounting", "closing (COMMIT) after
// writing").
const char* step_words(Step step, bool writing, const char* connect = "connecting to",
                       const char* close_write = "closing after writing");
// A file the server agent laid out that the server does not have (`message`
// names it and the server): Error(kIo), whose fix is to check `dir`.
Error laid_out_file_missing(std::string message, std::string_view dir = "the share's directory");
// Whether `step` writes a file: opening it for writing, writing, closing it.
constexpr bool writes(Step step) {
  return step == Step::kOpenWrite || step == Step::kWrite || step == Step::kClose;
}

// Where a failure happened, for the message.
struct Place {
  std::string server;  // "198.18.0.1:21"; empty for the path driver
  std::string share;   // "ram" (smb share), "/ram" (ftp dir), "/mnt/nas" (path)
  std::string user;    // login name; empty: anonymous/guest
  std::string file;    // the file inside the share; empty at connect
  // The share, or the file in it ("ram/run-1/a.dat"), for a message.
  std::string target() const { return file.empty() ? share : share + "/" + file; }
};

// A session's properties of its last file's requests (nfs, smb): the
// operation ("read" | "write"), the largest request (bytes), the most
// requests and bytes out at once; none before the first file (op empty).
void add_flight(std::map<std::string, std::string>& p, const std::string& op, uint64_t request_size,
                uint64_t depth, uint64_t in_flight_bytes);

// --- ftp -------------------------------------------------------------------
struct FtpFailure {
  int curl_code = 0;    // CURLcode
  long reply_code = 0;  // last FTP reply code (CURLINFO_RESPONSE_CODE), 0 if none
  std::string reply;    // last FTP reply line from the server, "" if none
  std::string detail;   // curl's error buffer
};
// The cp::Error for a failed libcurl FTP operation: closed port, wrong
// password, unknown directory, missing file, refused write, full disk (452,
// 552, or vsftpd's "451 Failure writing"), TLS problems, timeouts.
Error ftp_error(const FtpFailure& f, Step step, const Place& where);
// The cp::Error for a refused command of the small-file pass (`verb`: SIZE,
// MKD, RMD): kUnsupported when the server does not know it (500, 502, 504:
// "does not answer SIZE"), else kIo naming the refusal.
Error ftp_command_error(const FtpFailure& f, std::string_view verb, const Place& where);
// An MDTM answer ("20261202032700", UTC, optionally ".sss") as seconds
// since 1970; nullopt when it is not one.
std::optional<int64_t> ftp_mdtm_seconds(std::string_view v);

// --- smb -------------------------------------------------------------------
// The cp::Error for a failed libsmbclient call that set `err` (errno);
// `nt_status` is the NT_STATUS_... name libsmbclient logged, if any.
Error smb_error(int err, std::string_view nt_status, Step step, const Place& where);
// The last "NT_STATUS_..." word in libsmbclient's log text, or the status
// its words stand for ("SPNEGO login failed" -> NT_STATUS_LOGON_FAILURE), or "".
std::string smb_status_from_log(std::string_view log);

// What an SMB2 server announced in its NEGOTIATE response: the dialect it
// chose and the largest READ/WRITE/transaction it accepts (bytes).
struct Smb2Limits {
  uint16_t dialect = 0;  // 0x0202, 0x0210, 0x0300, 0x0302, ...
  uint32_t max_transact = 0, max_read = 0, max_write = 0;
};
// An SMB2 NEGOTIATE request (with its 4-byte direct-TCP length prefix)
// offering the dialects from `min_dialect` to `max_dialect` among 2.0.2,
// 2.1, 3.0 and 3.0.2 (3.1.1 needs negotiate contexts; servers announce the
// same sizes to 3.0.2).
std::string smb2_negotiate_request(uint16_t min_dialect, uint16_t max_dialect);
// Parses a NEGOTIATE response frame (length prefix included). Throws
// Error(kPeer) naming what is wrong: short, not SMB2, a failure status, a
// zero size.
Smb2Limits parse_smb2_negotiate_response(std::string_view frame);
// An SMB2 ECHO request (length prefix included) with `message_id`: after
// NEGOTIATE, before any session, a round trip the server answers at once.
std::string smb2_echo_request(uint64_t message_id);
// Whether `frame` (length prefix included) is a successful ECHO response.
bool smb2_is_echo_response(std::string_view frame);
// "SMB2_02" -> 0x0202, ..., "SMB3" and "SMB3_11" -> 0x0311, "SMB2" -> 0x0210;
// 0 for a name it does not know.
uint16_t smb2_dialect_of(std::string_view protocol_name);
// 0x0202 -> "SMB2_02", ..., 0x0311 -> "SMB3_11" (the names smb.conf uses);
// "0x...." for others.
std::string smb2_dialect_name(uint16_t dialect);
// SMB1 (NT1: the option max_protocol=NT1): a NEGOTIATE offering "NT LM 0.12"
// (length prefix included), and what the answer says: whether the server
// chose it, and its MaxBufferSize (smb.conf `max xmit`, bytes).
struct Smb1Negotiate {
  bool nt1 = false;              // the server chose "NT LM 0.12"
  uint32_t max_buffer_size = 0;  // bytes
};
std::string smb1_negotiate_request();
// Throws Error(kPeer) on a frame that is no SMB1 NEGOTIATE answer.
Smb1Negotiate parse_smb1_negotiate_response(std::string_view frame);
// "NT1", "LANMAN2", ...: the protocol names of SMB1 and older.
bool is_smb1_protocol(std::string_view protocol_name);

// --- nfs -------------------------------------------------------------------
inline constexpr unsigned kNfsMaxDepth = 1024;
inline constexpr uint64_t kNfsMaxRequest = 16 << 20;
struct NfsOptions {
  int version = 4;                  // 3 or 4
  uint64_t request_size = 1 << 20;  // bytes per READ/WRITE (capped at the server's rsize/wsize)
  // Requests in flight on the connection; 0 = "auto" (the default): sized to
  // the path after the mount (nfs_auto_depth).
  unsigned depth = 0;
  double path_rate = 0;    // option path_rate, bytes/s, for depth=auto; 0 unknown
  int uid = -1, gid = -1;  // AUTH_SYS ids; -1: the share user's, else the agent's
  double timeout_s = 30;   // seconds without an answer before a call fails
};
// Option depth=auto: how many READs/WRITEs of `request_size` bytes to keep in
// flight on a path with round trip `rtt_s` (seconds, the least the kernel
// timed on the mount's connection; <= 0 unknown) and rate `rate` (bytes/s;
// <= 0 unknown: kNfsAssumedRate). Twice the path's bytes in flight (rtt x
// rate; TCP's slow start overshoots to twice that, and the receiver's
// autotuning sizes its window so too) plus two requests (one being handed to
// the reader or filled by the writer, one being answered); never below
// kNfsMinDepth (a LAN: the Linux client too keeps several 1 MiB requests
// out), never above kNfsAutoMemory bytes of requests (the agent holds each
// write twice, in its slot and in libnfs's encoded call).
inline constexpr unsigned kNfsMinDepth = 4;
inline constexpr uint64_t kNfsAutoMemory = 32ull << 20;
inline constexpr double kNfsAssumedRate = 10e9 / 8;  // 10 Gbit/s, a fast NAS link, bytes/s
unsigned nfs_auto_depth(double rtt_s, uint64_t request_size, double rate);
// What an nfs session's small-file chains (Session::run_file_ops) sent,
// per phase (create, stat, read, delete) over its life: operations that
// ended well, and for those the waits for answers (round trips), the RPCs
// and the OPENs and CLOSEs that took turns (NFSv4). The lab test holds them
// against Session::file_round_trips(). nullopt: not an nfs session.
struct NfsOpsSent {
  uint64_t ops = 0, round_trips = 0, calls = 0, serial = 0;
};
std::optional<std::array<NfsOpsSent, 4>> nfs_file_ops_sent(const Session& s);
// The nfs share options; Error(kConfig) naming an unknown option or a bad value.
NfsOptions parse_nfs_options(const std::map<std::string, std::string>& options);
// The cp::Error for a failed libnfs call: -status as errno, libnfs's text
// (which carries NFS3ERR_/NFS4ERR_/MNT3ERR_ names): closed port, unknown
// export, refused mount, version not served, read-only export, permission,
// full disk, missing file, a silent or lost server.
Error nfs_error(int err, std::string_view detail, Step step, const Place& where);

// Option connections=auto: how many SMB connections (each one synchronous
// call in flight, idle for a round trip between calls; `io_size` bytes of
// slot each) keep a path with round trip `rtt_s` (seconds; <= 0 unknown;
// the least of the probe's samples) full. 1 on a short path (rtt <=
// 1 ms); else one call being handed over and enough others in flight to
// cover its round trip at `rate` (bytes/s; 0 unknown): 2 + ceil(rtt /
// (io_size / rate)), or 3 with the rate unknown. At most kSmbMaxConnections
// and at most kSmbAutoMemory bytes of calls (never below 1).
inline constexpr unsigned kSmbMaxConnections = 16;
inline constexpr uint64_t kSmbAutoMemory = 64ull << 20;
unsigned smb_auto_connections(double rtt_s, uint64_t io_size, double rate);

// --- path ------------------------------------------------------------------
Error path_error(int err, Step step, const Place& where);

}  // namespace cp::transfer
