// The agent's typed messages: a struct per request and result (disk, TCP,
// files, run directories, transfer and size-scan samples, facts, the agent's own
// hello/stats/smb_status, tuning), the progress and error frames, and the
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
#include "core/files_pass.h"

namespace cp::msg {

// ---- disk (stage 1) --------------------------------------------------------

struct DiskRequest {
  std::string dir;            // a prepared base dir; the file lives in its run dir
  std::string op;             // "write" | "read" | "syncwrite" (a flush per block)
  std::string name;           // a plain file name
  uint64_t size = 0;          // bytes to write (writes only)
  uint64_t block = 1u << 20;  // bytes per I/O call
  bool delete_after = false;  // read, syncwrite: remove the file after
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

// ---- small files (files; docs/small-files.md) -----------------------------

// One pass of a files::Tree on the agent's own disk, in a fresh directory
// `name` inside the run directory of the prepared base dir `dir`.
struct FilesRequest {
  std::string dir;
  std::string name;  // a plain name: the pass's root directory
  uint64_t count = 1000;
  uint64_t size = 4096;  // bytes per file
  uint64_t dirs = 10;
  std::string order = "sequential";  // | "random" (seeded)
  uint64_t seed = 0;
  double budget = 30;  // s per pass; 0: none
};

// A phase's figures (files::PhaseStats, flattened) and this end's CPU over it.
struct FilesPhase {
  files::PhaseStats stats;
  CpuSummary cpu;
};

struct FilesResult {
  std::vector<FilesPhase> phases;  // create, stat, read, delete
  std::string fs_type;             // the directory's filesystem ("ext4", "tmpfs")
  bool cache_possible = false;     // the read phase may have been served from a cache
  std::string cache_reason;        // why ("" when it is false)
};

// What a small-file sample (one phase of one pass) stores beside its figures:
// the sample's bytes are the data moved, its seconds the phase's time, and
// its figure operations/s = ops / seconds.
struct FilesDetails {
  uint64_t count = 0;  // files the pass was asked for
  uint64_t ops = 0;    // operations the phase completed
  uint64_t dirs = 0;
  std::string order;  // "sequential" | "random"
  uint64_t seed = 0;  // of the random order
  double in_flight_mean = 1;
  uint64_t in_flight_max = 1;
  files::Latency latency_us;  // median, p99, max per operation, us
  bool budget_hit = false;    // the budget stopped the phase before `count`
  std::string skipped_reason;
  std::string fs_type;         // of the directory the pass ran in
  std::string cache_reason;    // read: why a cache may have served it
  std::string share;           // the share it ran over; "" on an end's own disk
  std::string driver;          // that share's protocol ("smb"); "" on an end's own disk
  std::string in_flight_note;  // a share's: how operations were kept in flight, or why one
  double sync_seconds = 0;     // an end's create: the syncfs inside its seconds
  // A share's: the round trips one operation cost, and those of them that
  // took turns on the connection (files::PhaseStats); 0: unknown.
  uint64_t round_trips = 0;
  uint64_t serial_round_trips = 0;
};

// ---- TCP (stage 2) ---------------------------------------------------------

struct TcpListenRequest {
  // The address the peer will connect to (the agent listens on it when it is
  // one of this host's, else on every address of its family); "0.0.0.0", "::".
  std::string bind;
  // The samples' tokens (random, 128 bits hex): a connection presenting any
  // other is dropped. Empty: any token (tests, tools).
  std::vector<std::string> tokens;
};
struct TcpListenResult {
  uint64_t port = 0;
  std::string address;  // what it listens on ("" from an older agent)
};

struct TcpRunRequest {
  std::string host;
  uint64_t port = 0;
  std::string token;
  std::string mode;  // "send" | "recv": what the connecting (client) side does
  double seconds = 0;
  uint64_t buffer = 128u << 10;  // bytes per socket call
  // Several streams at once: one connection per token, each on its own
  // thread (`token` is then the first). Empty: the one stream of `token`.
  std::vector<std::string> tokens;
};

struct TcpResultRequest {
  std::string token;
  double timeout = 60;              // s the listener waits for the connection
  std::vector<std::string> tokens;  // several streams: each token's (see TcpRunRequest)
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

// One stream of several: this side's bytes and time, and its socket.
struct TcpStream {
  uint64_t bytes = 0;
  double seconds = 0;
  TcpInfo tcp_info;
};

struct TcpResult {
  uint64_t bytes = 0;   // several streams: their sum
  double seconds = 0;   // several streams: the longest's
  bool sender = false;  // this side sent the data
  TcpInfo tcp_info;     // several streams: summed counters, the first's RTT and path
  CpuSummary cpu;
  std::vector<TcpStream> streams;  // several streams: each one's; empty with one
};

struct TcpDetails {
  std::string sender;  // "client" | "server"
  uint64_t sender_bytes = 0;
  double sender_seconds = 0;
  TcpInfo tcp_info;           // the sender's socket
  TcpInfo receiver_tcp_info;  // the receiver's socket
  // Several streams: each one's figure as the receiver counted it (bytes, s)
  // with the sender's socket; the sample's bytes are their sum. Empty: one.
  std::vector<TcpStream> streams;
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

struct RemoveFileResult {
  bool removed = false;  // the file was there
};

// ---- run directories (prepare, sweep_orphans, check_space) -----------------

struct PrepareRequest {
  std::vector<std::string> dirs;  // base dirs to make a private run dir in
  bool shared = false;            // behind a share: open to the protocol server's user
  int64_t run = 0;                // the orchestrator's run id, for the owner record
};

// A run directory an earlier agent left: removed (with why its owner is
// gone) or kept (alive, or `error` when it could not be removed).
struct RunDirEntry {
  std::string path;
  std::string reason;  // removed: why its owner is gone
  std::string error;   // kept: why it could not be removed ("" when alive)
  // kept: left alone as not provably this uid's run directory (a foreign
  // owner, an owner record that is a link, FIFO or too large):
  // agent_server/run_dir.h's refusal codes; "" otherwise.
  std::string refused;
};

struct PrepareResult {
  std::map<std::string, std::string> dirs;  // base dir -> the run dir made in it
  std::vector<RunDirEntry> swept;           // orphans removed on the way (wire name kept)
  std::vector<RunDirEntry> refused;         // chokepoint-run-* left alone on the way
};

// The orphan cleanup (`chokepoint clean`); its wire type stays "sweep_orphans"
// so agents of other versions still answer.
struct CleanOrphansRequest {
  std::vector<std::string> dirs;
};

struct CleanOrphansResult {
  std::vector<RunDirEntry> removed;
  std::vector<RunDirEntry> kept;
};

// The record a run directory holds of its agent (a file, read back by later
// agents: stored JSON, read leniently).
struct OwnerRecord {
  int64_t pid = 0;
  int64_t start_ticks = 0;  // the process's start, clock ticks since boot
  std::string boot_id;
  std::string host;
  std::string pid_ns;  // the /proc/self/ns/pid link
  int64_t run = 0;
  double started_at = 0;  // wall s
};

struct CheckSpaceRequest {
  std::string dir;     // a prepared base dir
  uint64_t bytes = 0;  // what the stage will write there
  std::string hint;    // the fix to name when it does not fit ("": the disk stage's)
};

struct CheckSpaceResult {
  uint64_t total = 0;   // bytes of the filesystem
  uint64_t avail = 0;   // bytes free to the agent
  std::string fs_type;  // "tmpfs", "ext4"; "unknown"
  std::string disk;     // the disk under it ("sda"); "" for none (tmpfs) or unknown
};

// ---- the agent itself (hello, stats, cleanup, bye, smb_status) -------------

struct RevertedKnob {
  std::string knob;
  std::string target;
  std::string original;
  std::string error;  // "" when restored
};

// A tune journal (or one entry of it) the agent refused to run.
struct RefusedJournal {
  std::string
      reason;  // tune_agent/journal.h to_string(Refusal): "symlink", "mode", "action_shape", ...
  std::string knob;    // "" when the whole file is refused
  std::string action;  // the refused action as shown; "" for a whole entry or file
  std::string detail;
};

// What the agent did at its start with the tune journal a dead session left.
struct TuneStartReport {
  std::vector<RevertedKnob> reverted;
  std::vector<RefusedJournal> refused;  // never run, left in the journal
  std::string error;                    // the journal could not be looked at
  std::string journal;                  // its path ("" when there is nothing to say)
  bool empty() const { return reverted.empty() && refused.empty() && error.empty(); }
};
// One line per knob restored or not, refusal and error ("restored tune knob
// ..."), for `clean` and `diagnose` alike; none when `r` is empty.
std::vector<std::string> tune_start_lines(const TuneStartReport& r);

struct Hello {
  std::string version;
  std::string build;
  int64_t proto = 0;
  int64_t pid = 0;
  std::string hostname;
  std::string os;
  std::string arch;
  std::string role;                  // "full" | "server" (no protocol clients)
  std::vector<std::string> drivers;  // the transfer drivers it has
  TuneStartReport tune_at_start;     // reverted or refused at its start
};

// The stats, cleanup and bye answers.
struct AgentStats {
  uint64_t max_rss_kb = 0;  // the agent's peak RSS, KiB
};

struct SmbStatusRequest {
  std::string conf;  // smb.conf; "": the running smbd's
};

// One session as smbd reports it (`smbstatus --json`); "" where it says nothing.
struct SmbSessionStatus {
  std::string client;  // "ipv4:198.18.0.2:41234"
  std::string dialect;
  std::string signing;
  std::string signing_degree;
  std::string encryption;
  std::string encryption_degree;
};

struct SmbStatusResult {
  std::vector<SmbSessionStatus> sessions;
};

// ---- frames around the answers (progress, error) ---------------------------

struct Progress {
  uint64_t bytes = 0;
  double seconds = 0;
};

// An error frame's "error": the agent's Error.
struct ErrorInfo {
  std::string kind;  // core/error.h to_string(ErrorKind)
  std::string message;
  std::string hint;
};

// ---- tuning (tune_plan, tune_apply, tune_confirm, tune_revert) -------------

// tune_plan and tune_apply: a knob, its value, and where on the host it acts.
struct TuneRequest {
  std::string knob;
  std::string value;
  std::string disk_dir;
  std::string samba_conf;
  std::string data_address;
  bool console = false;  // a change that may cut SSH is allowed (a console is at hand)
  std::string afp_conf;
  std::string afp_restart;
  uint64_t confirm_s = 20;  // tune_apply: s the orchestrator has to confirm (cuts_ssh)
};

struct TunePlanResult {
  std::string target;
  std::string original;
  std::vector<std::string> apply;   // the commands, as shown
  std::vector<std::string> revert;  // likewise
  std::string journal;
  bool cuts_ssh = false;
  uint64_t watchdog_s = 0;  // tune_apply of a cuts_ssh change: the watchdog's s; 0 none
};

struct TuneConfirmResult {
  bool confirmed = false;  // false: the watchdog reverted already
};

struct TuneRevertResult {
  std::vector<RevertedKnob> reverted;
  std::vector<RevertedKnob> reverted_at_start;  // a killed session's, at agent start
  std::string at_start_error;
  std::string journal;
  std::vector<RefusedJournal> refused;  // at start or now: never run
};

// ---- protocol samples (transfer, size scan: wire type "sweep") ------------

// The share as transfer/size-scan requests carry it (password included: never stored).
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

struct SizeScanRequest {
  ShareRef share;
  std::string remote;
  std::string pattern;     // "seqread" | "randread" | "seqwrite" | "randwrite"
  uint64_t request = 0;    // bytes per call
  uint64_t bytes = 0;      // bytes to move
  uint64_t file_size = 0;  // bytes of the file the offsets fall in
};

struct SizeScanResult {
  uint64_t bytes = 0;
  double seconds = 0;
  std::string checksum;
  CpuSummary cpu;  // the client's
};

struct SizeScanDetails {
  std::string share;
  std::string pattern;
  uint64_t request = 0;
};

// ---- small files over a share (files_share) --------------------------------
// One small-file pass through a share's driver (transfer/files_pass.h,
// docs/small-files.md): the client agent creates, stats, reads and deletes a
// tree of files in `root` and answers each phase's figures.

struct FilesShareRequest {
  ShareRef share;
  std::string root;                  // the pass's directory inside the share: made, then removed
  uint64_t count = 1000;             // files
  uint64_t size = 4096;              // bytes per file
  uint64_t dirs = 10;                // directories they spread over
  std::string order = "sequential";  // "sequential" | "random" (seeded)
  uint64_t seed = 0;
  double budget = 30;      // seconds a phase may take once a tenth of the files are in; 0: none
  uint64_t in_flight = 1;  // operations in flight asked for (capped at the driver's)
  // The server agent laid the tree out (files_tree layout): no create phase.
  bool laid_out = false;
  // One phase alone ("create" | "stat" | "read" | "delete") on the tree the
  // requests before it left, with the `existing` files its create made; ""
  // runs the four (transfer::FilesPassOptions::only).
  std::string phase;
  uint64_t existing = 0;
};

struct FilesShareResult {
  std::vector<FilesPhase> phases;                 // create, stat, read, delete; the client's CPU
  uint64_t in_flight = 1;                         // sessions the pass ran on
  std::string in_flight_note;                     // how, or why one at a time
  uint64_t created = 0;                           // files the create phase made
  bool kept = false;                              // the tree stays for the next phase's request
  std::string leftover;                           // what could not be removed ("" none)
  std::map<std::string, std::string> properties;  // the driver session's
};

// The server agent's part (files_tree): the tree `name` in the run dir of
// `dir` (the share's server_dir) laid out, dropped from the cache, or removed.
struct FilesTreeRequest {
  std::string dir;
  std::string name;
  std::string action;  // "layout" | "drop" | "remove"
  uint64_t count = 0, size = 0, dirs = 1;
};

struct FilesTreeResult {
  uint64_t files = 0;  // made, dropped or removed
  uint64_t bytes = 0;
  double seconds = 0;
  bool cache_possible = false;  // layout, drop: a cache may still serve them
  std::string cache_reason;
};

// ---- facts -----------------------------------------------------------------

// Its answer, the host's facts: core/facts_message.h.
struct FactsRequest {
  std::string ram_dir;
  std::string disk_dir;
  std::string peer_address;  // the other end, to find the interface that reaches it
  std::string samba_conf;    // "": the running smbd's
  // Whether to read the Samba configuration and count smbd's privileges: the
  // file server's end only (a client's facts would name whatever smbd the
  // machine runs for something else, or a lab's other host's).
  bool samba = true;
};

// ---- cpu_start -------------------------------------------------------------

// Which connection the sample's file server holds, so that the server agent
// knows it for this end's whatever its network namespace (a container, a
// session of vsftpd's isolate_network): the server end's TCP port and the
// client's address as the server sees it. Both absent: no such hint.
struct CpuStartRequest {
  int64_t port = 0;  // the share's port (its URL's, else its driver's default)
  std::string peer;  // the client's address toward the server ("198.18.0.2")
};

}  // namespace cp::msg
