// The agent's typed messages: a struct per request and result of the disk,
// TCP, file, transfer (protocol sample), sweep and facts requests, and the
// details a stage stores with each sample. Each has one codec
// (messages_json.h, for .cc files only): the agent decodes requests and builds
// replies through it, the runner's stages encode requests and decode replies,
// and analysis reads stored details back with it. Field names are the wire's
// (schemas/agent-messages.schema.json). Light header: no Boost.JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/cpu_message.h"

namespace cp::msg {

// ---- disk (stage 1) --------------------------------------------------------

struct DiskRequest {
  std::string dir;            // a prepared base dir; the file lives in its run dir
  std::string op;             // "write" | "read"
  std::string name;           // a plain file name
  uint64_t size = 0;          // bytes to write (write only)
  uint64_t block = 1u << 20;  // bytes per I/O call
  bool delete_after = false;  // read: remove the file after
};

struct DiskResult {
  uint64_t bytes = 0;
  double seconds = 0;
  bool direct = false;          // O_DIRECT was used
  bool cache_possible = false;  // the page cache may have served it
  std::string method;           // how the probe did its I/O ("o_direct", "buffered+fadvise", ...)
  bool huge_page = false;       // the buffer is a huge page
  CpuSummary cpu;               // this end's CPU during the sample
  std::string cache_reason;     // why a cache may have served it ("" when none may)
};

// What a disk sample stores beside its figures.
struct DiskDetails {
  std::string file;
  std::string method;
  bool direct = false;
  bool huge_page = false;
  uint64_t block = 0;
  std::string cache_reason;  // DiskResult's
};

// ---- TCP (stage 2) ---------------------------------------------------------

struct TcpListenRequest {
  std::string bind;  // "0.0.0.0" | "::" | an address
};
struct TcpListenResult {
  uint64_t port = 0;
};

struct TcpRunRequest {
  std::string host;
  uint64_t port = 0;
  std::string token;
  std::string mode;  // "send" | "recv": what the connecting (client) side does
  double seconds = 0;
  uint64_t buffer = 128u << 10;  // bytes per socket call
};

struct TcpResultRequest {
  std::string token;
  double timeout = 60;  // s the listener waits for the connection
};

// The kernel's tcp_info of one socket at the end of a sample.
struct TcpInfo {
  bool available = false;
  uint64_t retransmits = 0;     // segments
  uint64_t rtt_us = 0;          // smoothed RTT, us
  uint64_t rttvar_us = 0;       // us
  uint64_t snd_cwnd = 0;        // segments
  uint64_t snd_mss = 0;         // bytes
  uint64_t pmtu = 0;            // bytes
  double busy_s = 0;            // s
  double rwnd_limited_s = 0;    // s limited by the receive window
  double sndbuf_limited_s = 0;  // s limited by the send buffer
  uint64_t delivery_rate = 0;   // bytes/s
  uint64_t rtt_idle_us = 0;     // RTT before the data flowed, us (0: unknown)
};

struct TcpResult {
  uint64_t bytes = 0;
  double seconds = 0;
  bool sender = false;  // this side sent the data
  TcpInfo tcp_info;
  CpuSummary cpu;
};

struct TcpDetails {
  std::string sender;  // "client" | "server"
  uint64_t sender_bytes = 0;
  double sender_seconds = 0;
  TcpInfo tcp_info;           // the sender's socket
  TcpInfo receiver_tcp_info;  // the receiver's socket
};

// ---- share files (make_file, file_info, remove_file) -----------------------

struct FileRequest {
  std::string dir;
  std::string name;
  uint64_t size = 0;          // make_file only
  uint64_t block = 1u << 20;  // bytes per I/O call
  bool evict = false;         // drop it from the page cache after
  bool shared = false;        // make_file: readable by a protocol server's user
};

struct FileResult {
  uint64_t bytes = 0;
  double seconds = 0;
  std::string checksum;  // XXH3-64 hex
  // make_file with evict: a cache of the filesystem's own (ZFS's ARC) may
  // still serve the file, and why.
  bool cache_possible = false;
  std::string cache_reason;
};

// ---- protocol samples (transfer, sweep) ------------------------------------

// The share as transfer/sweep requests carry it (password included: never stored).
struct ShareRef {
  std::string name;
  std::string url;
  std::string driver;
  std::string user;
  std::string password;
  std::map<std::string, std::string> options;
};

struct TransferRequest {
  ShareRef share;
  std::string op;      // "read" (share -> local) | "write" (local -> share)
  std::string remote;  // path inside the share
  std::string dir;     // the local file's prepared base dir
  std::string name;    // the local file's name
  uint64_t size = 0;   // expected size (0: unknown)
  uint64_t block = 1u << 20;
  bool delete_after = false;  // remove the local file after
};

struct TransferResult {
  uint64_t bytes = 0;
  double seconds = 0;
  std::string checksum;
  // What the driver's session says of itself (dialect, call sizes, in_flight_bytes, ...).
  std::map<std::string, std::string> properties;
  CpuSummary cpu;  // the client's
};

struct TransferDetails {
  std::string file;
  std::string share;
  std::string checksum;
  std::map<std::string, std::string> properties;
  // The share directory's filesystem on the server ("tmpfs", "ext4") and the
  // disk under it ("sda"); "" unknown (check_space's reply).
  std::string server_fs;
  std::string server_disk;
  std::string cache_reason;  // the server's make_file: why a cache may serve the file
};

struct SweepRequest {
  ShareRef share;
  std::string remote;
  std::string pattern;     // "seqread" | "randread" | "seqwrite" | "randwrite"
  uint64_t request = 0;    // bytes per call
  uint64_t bytes = 0;      // bytes to move
  uint64_t file_size = 0;  // bytes of the file the offsets fall in
};

struct SweepResult {
  uint64_t bytes = 0;
  double seconds = 0;
  std::string checksum;
  CpuSummary cpu;  // the client's
};

struct SweepDetails {
  std::string share;
  std::string pattern;
  uint64_t request = 0;
};

// ---- facts -----------------------------------------------------------------

// Its answer, the host's facts: core/facts_message.h.
struct FactsRequest {
  std::string ram_dir;
  std::string disk_dir;
  std::string peer_address;  // the other end, to find the interface that reaches it
  std::string samba_conf;    // "": the running smbd's
};

}  // namespace cp::msg
