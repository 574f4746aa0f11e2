// The plan: what a diagnosis measures and where. Read from an INI-style
// file (examples/plan.ini documents every key); every key has a default, so
// no plan file is needed. Unknown sections or keys are errors naming the
// line, never silently ignored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cp::transfer {
struct DriverSpec;
}

namespace cp::pipeline {

struct EndpointPlan {
  std::string ram_dir = "/dev/shm";   // a tmpfs: the RAM side of protocol stages
  std::string disk_dir = "/var/tmp";  // on the disk under test
  bool disk_dir_set = false;          // by the plan or the lab, not the default above
  std::string samba_conf;             // server: smbd's config (facts, smbstatus); "" = default
};

// A file share to measure through its protocol (stages 3 and 4).
struct SharePlan {
  std::string name;    // [share NAME]
  std::string url;     // a URL one of the drivers takes (`chokepoint drivers`: smb://, /mnt/x, ...)
  std::string driver;  // the driver whose URL prefix starts it (transfer::driver_for_url)
  // The directory on the server behind the share's root; "" for a driver
  // without server files (DriverSpec::server_files).
  std::string server_dir;
  std::string medium;  // "ram" (stage 3) or "disk" (stage 4)
  std::string user;    // empty: the URL's, else anonymous/guest
  // Where the password comes from (at most one); never the plan itself.
  std::string password_env;   // an environment variable of the orchestrator
  std::string password_file;  // a file only its owner can read (0600)
  bool password_prompt = false;
  std::map<std::string, std::string> options;  // driver options
  std::string declared_at;                     // "plan.ini:12", for messages
};

// The driver for a share URL (the driver table's); throws Error(kConfig) naming
// the URL forms the drivers take.
std::string driver_for_url(const std::string& url, const std::string& where);

// Checks a share against its driver's declared data (transfer::DriverSpec):
// its options (known, typed, in range) and the capabilities the protocol
// stages use (they read and write files through it). Throws Error(kConfig)
// naming the share. parse_plan and validate call it with the registry's spec.
void check_share_driver(const SharePlan& share, const transfer::DriverSpec& spec);

// The fewest samples a budgeted protocol series keeps (pipeline/plan.h Plan::proto_budget).
constexpr int kMinProtoSamples = 3;
// The most sizes one list (disk.sizes, protocol.sizes, scan_sizes) holds,
// and the most samples a whole plan asks for (plan_outline): bounds on what
// a plan can make a run cost (a million sizes is a typo or an attack).
constexpr int kMaxSizes = 64;
constexpr int64_t kMaxPlanSamples = 100'000;

inline constexpr int kAutoTcpStreams = 0;
inline constexpr int kMaxTcpStreams = 16;  // the listener serves 16 connections at once
// "auto" for kAutoTcpStreams, else the number (plan JSON, stage params).
std::string streams_value(int streams);

struct Plan {
  EndpointPlan server, client;

  bool disk_enabled = true;
  std::vector<uint64_t> disk_sizes = {10'000'000, 100'000'000};  // bytes per file
  int disk_count = 10;                                           // files per size and op
  uint32_t disk_block = 1u << 20;                                // bytes per read/write call
  // Seconds between a size's writes and its reads: writeback still under way
  // (a VM's host cache, a drive's) would otherwise slow the first reads.
  double disk_settle = 3;

  bool tcp_enabled = true;
  double tcp_seconds = 2;            // per sample; >= 2 s for a stable figure
  int tcp_count = 5;                 // samples per direction
  uint32_t tcp_buffer = 128u << 10;  // bytes per send/recv call
  // Streams at once after the one-stream series: kAutoTcpStreams (more while
  // one stream is CPU-bound and the total rises, at most a stream per core of
  // the end with fewer), 1 (one stream only) or 2 .. kMaxTcpStreams.
  int tcp_streams = kAutoTcpStreams;
  std::string data_address;  // the server's address on the data path; "" = SSH host

  uint64_t link_bits = 0;  // nominal link speed, bit/s; 0 = detect from interfaces
  // On chokepoint's own lab: what `lab throttle` had set as the run started,
  // recorded with the plan because a throttle changes figures as much as a
  // plan key does (`compare` names it). Not read from a plan file.
  struct LabThrottle {
    double smbd_cpu = 0;          // smbd's CPU quota, fraction of one core (0: none)
    uint64_t disk_read_bps = 0;   // server disk read limit, bytes/s (0: none)
    uint64_t disk_write_bps = 0;  // server disk write limit, bytes/s (0: none)
  };
  std::optional<LabThrottle> lab_throttle;

  std::vector<SharePlan> shares;
  bool proto_enabled = true;
  std::vector<uint64_t> proto_sizes = {10'000'000, 100'000'000};  // bytes per file
  int proto_count = 10;                                           // files per size and direction
  uint32_t proto_block = 1u << 20;  // bytes per driver read/write call
  // Seconds per size and direction of a share: once kMinProtoSamples samples are
  // in, a series stops when it has run this long; sizes of which that many
  // samples cannot fit at the TCP stage's rate are left out. Slow paths (Wi-Fi,
  // a VPN, 100 Mbit/s) then finish in minutes. Sizes and a count the plan sets
  // are kept (only an explicit budget cuts them); 0 = no budget.
  double proto_budget = 30;
  bool proto_sizes_set = false, proto_count_set = false, proto_budget_set = false;
  // Transfer-size scan (QuickBench's table): per share, sequential and
  // random reads and writes in requests of each size.
  bool size_scan = false;
  std::vector<uint64_t> scan_sizes = {4096, 16384, 65536, 262144, 1048576};
  uint64_t scan_bytes = 16u << 20;  // moved per cell
  uint64_t scan_file = 64u << 20;   // the file random requests land in

  // [files]: the small-file stage (docs/small-files.md): passes of `files_count`
  // files of `files_size` bytes over `files_dirs` directories, on each end's
  // disk_dir; each pass stops at `files_budget` s once a tenth is in (0: none).
  bool files_enabled = true;
  bool files_shares = true;  // the passes over each share too (after the protocol stages)
  uint64_t files_count = 1000;
  uint64_t files_size = 4096;
  uint64_t files_dirs = 10;
  std::string files_order = "both";  // "sequential" | "random" | "both"
  double files_budget = 30;
  int files_in_flight = 0;  // 0: auto (as the protocol's kernel client would); shares only

  // [timeouts]. Agents send a heartbeat every second while they work, so
  // silence means the agent (or its host, or the path to it) is stopped,
  // not slow.
  double silence_timeout = 30;  // s: an agent silent this long is abandoned
  double stall_after = 5;       // s: a sample during which an agent was silent this long is stalled

  std::string source;  // file it came from, or "(defaults)"
};

// Parses plan text; `name` is used in messages ("plan.ini:12: ...").
// Throws Error(kConfig) naming the line and key.
// Keys the text sets override `base` (the defaults, or the lab's dirs).
Plan parse_plan(const std::string& text, const std::string& name, Plan base = {});
Plan load_plan(const std::string& path, Plan base = {});  // reads the file, then parse_plan

// Adds a share given on the command line: "NAME=URL[,key=value...]" with the
// keys of a [share] section (server_dir, medium, user, password_env, ...).
void add_share_flag(Plan& plan, const std::string& flag);

// With no [server] disk_dir given, the server's disk stage measures the disk
// behind the first `medium = disk` share (its server_dir) instead of the
// default /var/tmp, which on a NAS is often the system disk, not the data
// volume the share reads. Returns a note saying so, or "" when nothing changed.
std::string settle_server_disk_dir(Plan& plan);

// The protocol sizes a share runs under the budget at the TCP stage's
// `tcp_rate` (bytes/s; 0 unknown: all): those of which kMinProtoSamples
// transfers fit in it, the smallest always; the rest go to `dropped`.
std::vector<uint64_t> budgeted_proto_sizes(const Plan& plan, double tcp_rate,
                                           std::vector<uint64_t>* dropped);
// Whether a protocol series that has `done` samples after `elapsed` s stops
// for the budget (never before kMinProtoSamples, nor when the plan sets the
// count and no budget).
bool proto_series_done(const Plan& plan, int done, double elapsed);

// Checks what single keys cannot: every share complete, no two shares of one
// protocol over one medium, at most kMaxPlanSamples samples in all. Throws
// Error(kConfig) naming the share (or, for the samples, the key in Error::key).
void validate(const Plan& plan);

// The keys parse_plan accepts, per section ("share" for every [share NAME]),
// in name order; "password" (refused with a hint) is left out. README's plan
// table and examples/plan.ini are held to it (plan_test.cc).
std::map<std::string, std::vector<std::string>> plan_keys();

// The effective plan as JSON text (stored with each run; no secrets in it).
std::string plan_to_json(const Plan& plan);

// What a plan will measure, stage by stage, before anything connects
// (`diagnose --dry-run`): the most samples each stage takes (a protocol
// budget may end a series sooner, never later) and the transfers' bytes, in
// the order the runner takes them.
struct StageOutline {
  std::string stage;  // "disk server", "tcp server->client", "ftp-ram", "size-scan smb-ram"
  std::string what;   // one line: sizes x count x operations, the dirs or URL
  int samples = 0;
  uint64_t bytes = 0;  // moved by those samples (tcp: 0, its samples are timed)
};
std::vector<StageOutline> plan_outline(const Plan& plan);
// Whether the share's driver can run a small-file pass (it makes the pass's
// directory: Capabilities::mkdir); a share whose driver cannot is left out of
// the small-file stage, with a note.
bool files_pass_can_run(const SharePlan& share);
// The outline as text, one stage per line.
std::string plan_outline_text(const Plan& plan);

}  // namespace cp::pipeline
