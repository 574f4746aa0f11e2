// The ladder: each layer's measured throughput held against the layer
// beneath it, and the verdict naming the layer that caps each path. The rules
// run from one ordered table (rules.cc, verdict_rules()); findings are
// structured, and report/finding_text.h renders their sentences.
// docs/verdict-rules.md documents the rules for users.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/stats.h"
#include "core/stored_run.h"

namespace cp::analysis {

// Thresholds of the rules (fractions).
constexpr double kAtCeiling = 0.90;      // a layer within 10 % of the one beneath is at its ceiling
constexpr double kShortTcp = 0.80;       // TCP under 80 % of the link: the network stack is short
constexpr double kCoreSaturated = 90;    // % busy of one core: CPU-bound
constexpr double kWindowLimited = 0.20;  // tcp_info limited for > 20 % of busy time
constexpr double kMinCpuWindow = 0.5;    // s: shorter CPU windows are not evidence
constexpr double kFasterThanBeneath = 1.05;  // a layer > 5 % above the one beneath: cache suspected
// A read of a file the server evicted (fsync + posix_fadvise, no ZFS) through a
// file server may beat the disk probe by this much with no cache: the file
// server's readahead keeps more reads queued than the probe's one O_DIRECT read,
// and a throttle's first slice lets a burst through. Beyond it a cache served part.
constexpr double kEvictedReadSlack = 1.25;
constexpr double kAboveLink = 1.05;          // TCP > 5 % above the nominal link: no real ceiling
constexpr uint64_t kGoodReadaheadKb = 2048;  // readahead at or above this: no readahead hint
// A process at >= 90 % of its cgroup CPU limit is CPU-bound: starved by a
// quota (smbd at 20 % of a core), it never fills a core.
constexpr double kQuotaSaturated = 0.90;
// ... or one whose cgroup was throttled in >= 20 % of its CFS periods while it
// used at least half of its limit: the quota binds, though competing load kept
// the process from using all of it.
constexpr double kThrottledPeriods = 20;  // %
constexpr double kThrottledUse = 0.5;
// One thread at >= 90 % of a core is CPU-bound (a thread cannot use two cores,
// whichever cores it moved between); so is an end whose cores are all >= 90 % busy.
constexpr double kThreadSaturated = 90;
constexpr double kAllCoresBusy = 90;
// ... and then only when the endpoint's own work wants at least half a core:
// what it used (agent, file server, kernel) plus the time its agent and file
// server threads waited for a core (competing load takes that from it). Else
// the busy cores are another job's, and the row is flagged as measured under
// competing load instead (Row::competing_load).
constexpr double kOwnBusy = 50;  // % of one core
// Kernel work (system + irq/softirq) at least this share of the busy time: the
// cost is per packet, which jumbo frames cut.
constexpr double kPerPacketShare = 0.5;
// A small-file phase on a disk whose worst operation took >= 50x its median
// and at least 50 ms (a user waits on it: "537 ms worst case" in seed 002)
// stalled: a device pausing, a journal commit.
constexpr double kLatencyTail = 50;
constexpr double kLatencyStallUs = 50'000;
// A small-file phase over a share at >= 80 % of in flight / (round trips per
// operation x RTT) waits on the round trips (files.round_trips).
constexpr double kRoundTripBound = 0.80;
// A small-file phase over a share whose client agent spent >= half of each
// operation's time on its own CPU (its CPU per operation over the operation's
// time, in flight counted) is paced by chokepoint's client (files.client): a
// faster client would go faster, so the figure is a lower bound.
constexpr double kClientCpuShare = 0.5;
// Small files copied to a share moving this many times fewer bytes/s than
// the big files' verdict figure take the headline.
constexpr double kSmallFilesSlower = 10;
// A protocol at >= 80 % of what the client's own bytes in flight allow over
// the round trip (bytes in flight / RTT) is limited by the client.
constexpr double kProbeLimited = 0.80;
// A client whose calls each end with an empty pipe (a synchronous smbc_read of
// io_size bytes) idles a round trip per call: when that is >= 10 % of its time
// ((rate / io_size) x RTT), the figure is limited by the client too.
constexpr double kProbeDrain = 0.10;
// A protocol's file that takes at most this many round trips of the path longer
// than the layer beneath allows may be paying only its setup (connect, log in,
// open, close: a round trip or a few each) and TCP's slow start (log2 of the
// window in packets, 10-20 on long fat paths): too short to tell the protocol
// from the path's latency.
constexpr double kPerFileRoundTrips = 30;
// A TCP below 80 % of both ends' interface speeds with no window, buffer or
// CPU limit: the path between them caps it.
constexpr double kPathShort = 0.80;
// A TCP whose samples (at least 3) lie within 5 % of their median ((max - min) /
// median) holds a steady rate, as a slower link or a shaper does: under
// competing load, that tells the path from a CPU shared with other jobs, whose
// load swings (it left the loaded lab's unshaped TCP 12-70 % apart).
constexpr double kSteadyRate = 0.05;
constexpr size_t kSteadySamples = 3;
// A bus carries about 80 % of its payload ceiling (the link's rate after line
// coding) once command, frame and packet overheads are paid (SATA FIS and
// handshakes, PCIe TLP headers, USB protocol): a disk at >= 80 % of it is at
// the bus's effective ceiling, and the bus caps it.
constexpr double kBusEffective = 0.80;

// One end's CPU over a row's samples: window-weighted averages of the
// per-sample CPU messages (core/cpu_message.h), % of one core unless noted.
struct CpuProc {
  std::string comm;
  std::string role;  // "agent" | "server" | "kernel" | "other" ("" from older agents)
  bool other_netns = false;
  double cpu_pct = 0;
  double top_thread_pct = -1;  // its busiest thread; -1 unknown
  double limit_pct = 0;        // cgroup CPU limit; 0 none
  double throttled_pct = -1;   // its cgroup's throttled CFS periods, %; -1 unknown
};
struct CpuUse {
  double seconds = 0;                   // sample windows summed
  double total_busy_pct = 0;            // all cores, 0..100
  double sys_pct = 0, softirq_pct = 0;  // of all cores' time, 0..100
  double agent_pct = 0, server_pct = 0, kernel_pct = 0, other_pct = 0;
  double own_wait_pct = 0;     // agent and file server threads waiting for a CPU
  std::vector<CpuProc> procs;  // busiest first
};
// Why a row is CPU-bound, when it is.
struct CpuBound {
  std::string host;  // "server" | "client" | "both" (both ends share one machine's CPUs)
  // "thread" (one thread at a core) | "quota" | "all cores" | "turns" (one
  // request in flight: the client's and the server's busiest threads take turns,
  // together at a core)
  std::string kind;
  std::string process;   // thread/quota: its comm; all cores: the busiest process
  std::string role;      // the process's role: "server" (the file server), "agent"
                         // (chokepoint's own probe: the figure is a lower bound),
                         // "kernel", "other" (competing load)
  double pct = 0;        // thread: % of a core; quota: the process, % of a core;
                         // all cores: % busy
  double limit_pct = 0;  // quota: its limit, % of a core
  bool other_netns = false;
  double competing_pct = 0;   // CPU of other processes (not the endpoint's), % of a core
  bool per_packet = false;    // kernel work >= kPerPacketShare of the busy time
  bool same_machine = false;  // both ends share one machine's CPUs (Analysis::same_machine)
  bool empty() const { return kind.empty(); }
};

// The bus beneath a disk_dir's disk, from the host's facts (core/facts_message.h
// BusFacts): one link, or for md/LVM/dm the members' links together.
struct BusLinkInfo {
  std::string member;  // "sda" for an array's member; "" for the disk's own link
  std::string kind;    // "sata" | "pcie" | "usb" | "virtual"
  std::string link;    // as sysfs says it: "3.0 Gbps", "8.0 GT/s PCIe x4", "5000 Mbit/s"
  double ceiling = 0;  // payload ceiling after line coding, bytes/s; 0 unknown
};
struct BusCeiling {
  // "sata" | "pcie" | "usb" (one link) | "members" (an array: its members'
  // links together) | "virtual" (loop, zram, virtio, dm/md over such: no bus)
  std::string kind;
  std::vector<BusLinkInfo> links;  // one, or each member's
  // The theoretical ceiling: the link's payload rate after line coding (an
  // array: its members' summed, the most they carry together), bytes/s; 0
  // unknown. The effective one is kBusEffective of it.
  double theoretical = 0;
  double effective() const { return theoretical * kBusEffective; }
  bool empty() const { return kind.empty(); }
};

// What a row's figure counts: bytes/s, or operations/s (the small-file rows,
// "files:server:create:4096": rate, samples and ratio are then ops/s).
enum class RowUnit { kBytes, kOps };
// "bytes/s" | "ops/s".
const char* unit_name(RowUnit u);

// Where the nominal link speed comes from (Analysis::link_source; the link
// row's label names it).
struct LinkSource {
  // "plan" | "shaper" (a tc rate on `ifname` of `host`) | "interface"
  // (`ifname`'s speed) | "" (unknown)
  std::string from;
  std::string ifname;  // shaper, interface: "eth0"
  std::string host;    // shaper, interface: "server" | "client"
};

// What a row measures, field by field (Row::key says the same in one string):
// report/row_text.h renders a row's label from these fields alone ("server
// disk read, 100 MB files"), for every report, so no English is built here.
struct RowIdentity {
  std::string layer;  // "link" | "tcp" | "disk" | "files" | a protocol ("smb")
  // disk, an end's small files: the end ("server" | "client"); tcp: the
  // direction ("server->client"); a protocol, a share's small files: the
  // medium ("ram" | "disk")
  std::string where;
  // A small-file row over a share: its protocol ("smb"; `where` its medium);
  // "" for every other row (an end's own disk's small files: `where` the end).
  std::string driver;
  // disk: "read" | "write" | "syncwrite"; tcp: "send"; a protocol: "read" |
  // "write", the transfer-size scan's "sweep-seqread"; small files: the phase
  // ("create"), "random-create" for the pass in random order.
  std::string op;
  uint64_t size = 0;  // file size (the size scan: request size), bytes; 0 for tcp and link
  int streams = 1;    // TCP rows: streams at once (the figure is their total)
  LinkSource link;    // the link row: its speed's source
};

// How a finding names a row it cites (report/row_text.h cited_name renders it).
enum class CitedName {
  kNone,      // by no name of the rule's (reports that must name it use its label)
  kLabel,     // by its label: "SMB from RAM read, 100 MB files"
  kLayer,     // by its layer: "server disk", "TCP"
  kTheLayer,  // the same with its article: "the server disk"
  kMedium,    // a protocol by its medium: "SMB from RAM"
  kMediumOp,  // ... and its op: "SMB from RAM read"
};

// A row as a finding cites it: enough to name it and its figure without the
// ladder beside it.
struct Cited : RowIdentity {
  std::string key;                      // Row::key; "" when none
  size_t n = 0;                         // successful samples
  double median = 0, min = 0, max = 0;  // bytes/s
  // How the rule names it; report/row_text.h renders the words (cited_name)
  // and what the row does there (cited_verb: "reads", "carries", "moves").
  CitedName named = CitedName::kNone;
  bool empty() const { return key.empty(); }
};

// Why a row's figure may not be its layer's own (analysis/trust.cc): what it
// is, the rows and the figures it weighs; report/row_text.h renders its words.
struct TrustReason {
  // "cache.no_direct"     samples ran without O_DIRECT (the filesystem refused it)
  // "cache.agent"         samples the agent said a cache may serve (`why`)
  // "cache.beats_beneath" faster than `beneath` (the server disk, or the same
  //                       protocol from RAM) beyond both rows' spread: the
  //                       server's page cache served (read) or absorbed (write) part
  // "cache.client"        faster than TCP (`beneath`): the client's page cache
  // "anomaly.beats_tcp"   faster than TCP (`beneath`) beyond both rows' spread
  //                       where no cache explains it: TCP's figure is no ceiling
  // Not over the medium it claims (trust.medium; `row` the first it touches):
  // "medium.disk_on_ram"       `role`'s disk_dir is on `fs` (tmpfs, ramfs): its
  //                            disk rows measured RAM
  // "medium.ram_share_on_disk" the share of `row` measured as RAM is on `fs`
  // "medium.disk_share_on_ram" the share of `row` measured as disk is on `fs`
  // "medium.other_disk"        the share of `row` measured as disk is on
  //                            `share_disk`, the disk stage measured `stage_disk`
  // "medium.client_ram_dir"    the client's ram_dir is on `fs`, not in RAM
  std::string id;
  Cited row, beneath;         // beneath: the "beats" ids' and "cache.client"'s
  size_t cache_possible = 0;  // cache.no_direct, cache.agent: samples flagged (of row.n)
  // ... the RAM of `role` ("server" | "client") the files fit in, bytes (0: not known)
  uint64_t memory_bytes = 0;
  std::string role;
  std::string why;                     // cache.agent: the agent's reason
  std::string fs;                      // medium.*: the filesystem ("tmpfs", "ext4")
  std::string share_disk, stage_disk;  // medium.other_disk: "sdb", "sda"
};

struct Row : RowIdentity {
  std::string key;  // "tcp:server->client:send", "disk:server:read:100000000", "link"
  // A small-file row: the operations in flight its samples kept (the mean of
  // their means; 0 unknown).
  double in_flight_mean = 0;
  RowUnit unit = RowUnit::kBytes;  // of rate, samples and min/max
  // Small-file rows: per-operation latency, us: the median of the samples'
  // medians, the highest p99 and the highest max (0: none).
  double latency_median_us = 0, latency_p99_us = 0, latency_max_us = 0;
  // Small-file rows over a share: the round trips one operation cost and
  // those that took turns on the connection, as its samples' sessions
  // reported them (the most any sample did; 0: not reported).
  uint64_t round_trips = 0, serial_round_trips = 0;
  Summary rate;                    // bytes/s over the successful samples
  size_t failed = 0;               // failed samples
  size_t cache_possible = 0;       // samples flagged cache_possible
  std::string cache_possible_why;  // the agent's reason for the first of them ("" none given)
  std::string below;               // key of the layer beneath, or ""
  double ratio = 0;                // rate.median / below's median; 0 when none
  // The ratio's 95 % bootstrap interval (ratio of medians): its noise.
  double ratio_lo = 0, ratio_hi = 0;
  // The layer beneath had no row of this size: the size it was held against.
  uint64_t below_size = 0;
  // CPU evidence: the busiest core (% busy, averaged over a sample) seen on
  // either end during this row's samples, where, and its top process.
  // The top process of that end's sample ("smbd", its CPU in % of one core);
  // none when the sample listed none.
  double max_core_pct = 0;
  std::string max_core_host;
  struct TopProcess {
    std::string comm;
    double cpu_pct = 0;
  };
  std::optional<TopProcess> max_core_top;
  // Quota evidence: a process that ran at >= kQuotaSaturated of its cgroup CPU
  // limit during one of this row's samples, on either end; the one closest to
  // its limit, a process in its agent's own network namespace first (in a lab
  // on one machine both agents see the same processes). Host "" when none.
  std::string quota_host;
  std::string quota_process;   // its comm
  double quota_cpu_pct = 0;    // its CPU, % of one core
  double quota_limit_pct = 0;  // its limit, % of one core
  bool quota_other_netns = false;
  // TCP evidence from the sender's tcp_info, summed over samples.
  double rwnd_limited_frac = -1;  // of busy time; -1 when unknown
  double sndbuf_limited_frac = -1;
  uint64_t retransmits = 0;
  double rtt_us = 0;       // median of the sender's smoothed RTT over samples, µs; 0 when unknown
  double rtt_idle_us = 0;  // median RTT before payload moved (handshake), µs; 0 unknown
  // Per end ("server", "client"): CPU over the samples, and why the row is
  // CPU-bound (empty when it is not).
  std::map<std::string, CpuUse> cpu;
  CpuBound cpu_bound;
  // Every core of an end was busy during its samples, mostly with other
  // processes: its figures may be low. The busiest such process, and the share
  // of a core the other processes used (0: not so).
  std::string competing_process;
  double competing_load_pct = 0;
  // The successful samples behind `rate`, in stored order: bytes/s and their
  // ids in the store (0 when not stored), so every figure can be traced.
  std::vector<double> samples;
  std::vector<int64_t> sample_ids;
  // The figure may come from a cache rather than the layer: why (one reason
  // or more; none when not suspected).
  bool cache_suspected = false;
  std::vector<TrustReason> cache_reasons;
  // Faster than the layer beneath beyond both rows' noise, where no cache can
  // explain it (a protocol over RAM faster than TCP): the figure beneath is no
  // ceiling. No verdict rests on such a pair either.
  bool anomaly = false;
  std::optional<TrustReason> anomaly_reason;  // set when `anomaly`
  // Protocol rows: what the client driver recorded (first sample's
  // details "properties": requested dialect, max_read_size, mount options).
  std::map<std::string, std::string> properties;
  // The file server instance serving its samples' connections (the server
  // end's CpuSummary::server_pid, the first a sample names); 0 unknown.
  int server_pid = 0;
  // Protocol rows: the filesystem of the share's directory on the server, as
  // the server agent found it ("tmpfs", "ext4"; "" unknown).
  std::string server_fs;
  std::string server_disk;  // the disk under it ("sda", "md2"; "" unknown or none)
  // Why the row is not over the medium it claims (a TrustReason "medium.*";
  // none when it is): a disk row on tmpfs, a "ram" share on a disk, a "disk"
  // share on tmpfs, a client RAM dir on a disk. No verdict rests on it.
  std::optional<TrustReason> medium_reason;
  // Disk rows: the bus beneath the disk (empty when the facts do not say), and
  // the row's median over its theoretical ceiling (0: none known).
  BusCeiling bus;
  double bus_ratio = 0;
};

// How sure a finding is (see docs/verdict-rules.md, "Confidence").
enum class Confidence {
  kCertain,     // the figures hold it beyond their noise
  kLikely,      // it holds, but rests on few samples, a lower bound or a figure a cache
                // may have served
  kCannotTell,  // undecided: `candidates` lists what it could be
};
// report/finding_text.h confidence_name names it.

// A tuning hint or a setting worse than its default: what to change (`id`)
// and the figures and words that triggered it; report/hint_text.cc renders its
// English, so a wording change touches no rule.
//   "mtu.mismatch"          numbers server_mtu, client_mtu
//   "tcp.receive_buffer"    words receiver, tcp_rmem, rmem_max (the receiver's
//                           sysctls; "" unknown); numbers rwnd_limited (fraction)
//                           or rmem, bdp (bytes), path_bits (bit/s), rtt_ms
//   "tcp.send_buffer"       words sender, tcp_wmem, wmem_max; numbers sndbuf_limited
//   "cpu.jumbo_frames"      (kernel work dominates the busy CPU at MTU 1500)
//   "protocol.in_flight"    (more requests in flight: larger calls, connections)
//   "protocol.client_drain" (larger calls or more connections keep the path full)
//   "disk.readahead"        words protocol, disk_device; numbers disk_bps,
//                           protocol_bps (bytes/s), read_ahead_kb
//   "protocol.negotiated_size" words protocol, op; numbers size (bytes per request)
//   "server.request_limit"  words key, value; numbers size, default_size (bytes)
//   "server.costly_setting" words parameter, value, server, default, cost,
//                           evidence (its SettingFound::evidence id); the
//                           evidence's own words and numbers prefixed "evidence."
inline constexpr std::string_view kHintIds[] = {
    "mtu.mismatch",         "tcp.receive_buffer",    "tcp.send_buffer", "cpu.jumbo_frames",
    "protocol.in_flight",   "protocol.client_drain", "disk.readahead",  "protocol.negotiated_size",
    "server.request_limit", "server.costly_setting"};
struct Hint {
  std::string id;  // one of kHintIds
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> words;
  bool operator==(const Hint&) const = default;
};

// What made a costly setting's cost show (analysis/costly_settings.cc): an id
// and its figures (bytes, bytes/s, ms) and words; report/hint_text.cc renders
// it, so a wording change touches no rule.
//   "setting.request_size"      numbers request, default (bytes)
//   "setting.sync_writes"       words proto, near ("near": within kNearSyncRate of
//                               the synchronous rate; "below": under the plain
//                               rate), ram_cpu ("yes": the RAM row CPU-bound),
//                               client_flushes ("yes": `sync always` off);
//                               numbers rate, sync_rate, block, ram_rate and
//                               plain_rate when measured (bytes/s, bytes)
//   "setting.sync_unmeasured"   words proto; numbers rate
//   "setting.cpu_encrypted"     words mode        "setting.cpu_signed"  words mode
//   "setting.cpu_server_read"   words process, kind
//   "setting.disk_below"        words proto
//   "setting.window"            words proto; numbers buffer (bytes), rtt_ms,
//                               window_rate, tcp_rate, rate (bytes/s)
//   "setting.cpu_tls"           words value
//   "setting.rate_cap"          words proto; numbers rate, cap (bytes/s)
inline constexpr std::string_view kSettingEvidenceIds[] = {
    "setting.request_size",  "setting.sync_writes", "setting.sync_unmeasured",
    "setting.cpu_encrypted", "setting.cpu_signed",  "setting.cpu_server_read",
    "setting.disk_below",    "setting.window",      "setting.cpu_tls",
    "setting.rate_cap"};

// What a costly setting costs, by id (analysis/costly_settings.cc's table);
// report/hint_text.h setting_cost_text words it, so a wording change touches
// no rule:
//   "flush_every_write"   a flush (fsync) after every write
//   "flush_when_asked"    a flush whenever the client asks for one
//   "cpu_per_byte"        CPU per byte on both ends (encryption, signing, TLS)
//   "requests_per_byte"   more requests, and round trips, per byte
//   "sync_reads", "sync_writes"  each served synchronously (no aio)
//   "copy_smbd", "copy_vsftpd", "copy_proftpd"  a copy per byte read (no sendfile)
//   "fixed_socket_buffer" a fixed socket buffer caps the TCP window
//   "session_rate"        each session held to that many bytes per second
//   "download_rate_kib", "upload_rate_kib"  ... KiB per second, by direction

// A costly server setting a finding names (analysis/costly_settings.h): the
// value the run recorded and the evidence that fit.
struct SettingFound {
  std::string server;     // "samba" | "nfs" | "vsftpd"
  std::string parameter;  // "sync always"
  // Where the value was set: a Samba share's section ("disk") or "global";
  // "" where the server has no sections.
  std::string section;
  std::string value;  // "Yes"
  std::string default_value;
  std::string cost;  // what it costs: a cost id ("flush_every_write"), listed above
  Hint evidence;     // what fit: one of kSettingEvidenceIds, with its figures
};

// What a finding concludes, apart from the evidence it cites: a finding
// resting on another takes this part of it whole (adopt_verdict).
struct FindingVerdict {
  // The capping layer: "server disk" | "client disk" | "network" (the link at its
  // nominal rate) | "network path" (something between two faster NICs) | "tcp" |
  // "cpu" (see `cpu`) | "smb", "ftp", ... (the protocol layer) | "smb + disk"
  // (reading and serving together) | "server bus", "client bus" (the link beneath
  // that end's disk at its effective ceiling) | "undecided" (see `candidates`); for the
  // other paths: "cache", "error", "network", "config".
  std::string layer;
  std::string cap;  // the key of the row that caps it ("" when none)
  // layer "cpu": who and how.
  CpuBound cpu;
  // The CPU evidence an undecided finding weighed without naming it (busy cores
  // that may hold a TCP near the link's rate); empty when none.
  CpuBound cpu_weighed;
  // The figure is a lower bound: chokepoint's own client limits it (its bytes
  // in flight over the RTT, or its own thread at a core).
  bool lower_bound = false;
  // layer "undecided": the layers it could be, and why it cannot tell:
  // "noise" | "cache" | "anomaly" | "medium" (a share not on the
  // medium its row claims) | "latency" (files too short for the path's
  // round trips) | "load" (measured while other processes kept every core busy)
  std::vector<std::string> candidates;
  std::string undecided_reason;
  // Tuning hints that fit the evidence, each with the figures that triggered
  // it (the text renders them too).
  std::vector<Hint> hints;
};

struct Finding : FindingVerdict {
  // The rule that made it: a stable id from verdict_rules() ("protocol.layer",
  // "tcp.window", "trust.page_cache"); docs/verdict-rules.md lists them.
  std::string rule;
  Confidence confidence = Confidence::kCertain;
  // "server -> client" | "client -> server" (disk to disk), "smb ram read" (a
  // protocol path), "tcp", "cpu", "cache", "errors", "mtu", "load" (rows
  // measured while other processes kept every core busy).
  std::string path;
  // The evidence, for charts and JSON: the keys of the rows on this path in
  // data order (a bar each; `cap` the one that caps it), and the ratio the
  // verdict rests on (capping layer / layer beneath; 0: none).
  std::vector<std::string> rows;
  double ratio = 0;
  // The ratio's 95 % interval (see Row::ratio_lo).
  double ratio_lo = 0, ratio_hi = 0;
  // The row judged (its figure) and the layer it was held against; other rows
  // the finding cites (a path's other layers; a protocol from disk: the same
  // protocol from RAM and the server disk; the rows a note lists).
  Cited subject, beneath;
  std::vector<Cited> context;
  // Rule-specific evidence, named as docs/verdict-rules.md lists it: figures
  // ("round_trips", "rtt_ms", "path_bits", "competing_load_pct" ...) and words
  // ("competing_process", "reason", "near" ...).
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> words;
  // The finding this one rests on, when it does (0 or 1 entries): a path or
  // protocol capped by TCP rests on TCP's explanation, a protocol from disk at
  // its RAM figure's ceiling on the verdict over RAM.
  std::vector<Finding> because;
  // trust.page_cache, trust.anomaly, protocol.untrusted, trust.medium and the
  // verdicts resting on a row not over its medium: why a figure is not
  // trusted (its words' "reason", as report/ renders it).
  std::vector<TrustReason> reasons;
  // layer "server bus" / "client bus": the link(s) beneath the capping disk.
  BusCeiling bus;
  int suggested_count = 0;      // noise: samples per row that would likely settle it
  uint64_t suggested_size = 0;  // latency: file size, bytes, that would likely settle it
  // Configured values worse than their defaults ("smb2 max read = 16384"):
  // hints "server.request_limit" and "server.costly_setting", named whatever
  // caps the path.
  std::vector<Hint> misconfigured;
  // Costly server settings whose evidence fits this finding (those not at
  // their default also in `misconfigured`).
  std::vector<SettingFound> settings;
  // Rows on this path whose figure a cache may have served: the verdict does
  // not trust them.
  std::vector<Cited> untrusted;
};

// What the verdict cites from one host's facts (see lib/probe/sysinfo.h);
// empty/zero/-1 when the facts do not say.
struct HostFacts {
  std::string hostname;
  uint64_t memory_bytes = 0;
  int mtu = 0;
  std::string ram_fs;       // the filesystem of ram_dir: "tmpfs" ("" unknown)
  std::string disk_device;  // the disk behind disk_dir: "sda"
  std::string disk_fs;      // the filesystem of disk_dir: "ext4" ("" unknown)
  int64_t read_ahead_kb = -1;
  BusCeiling disk_bus;                             // the bus beneath disk_device (empty: unknown)
  std::map<std::string, std::string> tcp_sysctls;  // "net.ipv4.tcp_rmem" -> "4096 131072 6291456"
  std::string boot_id;     // the kernel's boot id: equal on both ends = one machine
  std::string nic_name;    // the data interface ("eth0"; "" unknown)
  double nic_bits = 0;     // its speed, bit/s (0 unknown)
  double shaped_bits = 0;  // a tc rate shaping it, bit/s (0 none)
  // A Samba config's parameters, as the facts read it.
  struct SambaConfig {
    bool known = false;                         // a Samba config was read
    std::string config_path;                    // where ("" unknown)
    std::map<std::string, std::string> global;  // its [global] parameters
    // Each share section's parameters set apart from [global] (lower-case names).
    std::map<std::string, std::map<std::string, std::string>> shares;
  };
  SambaConfig samba;  // the host's (the plan's, else its first smbd's)
  // Each running smbd's, by its pid (several on one host, each with its config).
  std::map<int, SambaConfig> samba_instances;
  // The config of the smbd whose pid is `server_pid` (a row's Row::server_pid:
  // the instance that served its samples) where the facts list it, else the
  // host's.
  const SambaConfig& samba_serving(int server_pid) const;
  // Other file servers' settings by server ("vsftpd", "nfs-ganesha",
  // "knfsd"), from the config each was started with (lower-case names): the
  // first instance the facts list of each (this namespace's first).
  std::map<std::string, std::map<std::string, std::string>> server_configs;
  // Every running instance's, by its pid (several vsftpd or Ganeshas on one
  // host): a row whose samples name the instance serving them (Row::server_pid)
  // reads its own.
  struct ServerInstance {
    std::string server;
    std::map<std::string, std::string> settings;
  };
  std::map<int, ServerInstance> server_instances;
};

struct Analysis {
  double link_bits = 0;    // nominal link speed, bit/s; 0 when unknown
  LinkSource link_source;  // where link_bits comes from
  int server_mtu = 0, client_mtu = 0;
  HostFacts server, client;
  std::vector<Row> rows;
  // Both ends report the same kernel boot id: one machine (a lab in
  // namespaces, containers), so they share its CPUs.
  bool same_machine = false;
  bool stages_ran = false;    // the run has stages (with samples or not)
  int headline_finding = -1;  // the verdict in one sentence: this finding, -1 when none
  std::vector<Finding> findings;
  // A finding answers a path (a path or protocol verdict, "undecided" included).
  bool has_verdict() const;
};

// Runs every rule of verdict_rules() over the run's stored samples, once: a
// command passes the result to each report it prints.
Analysis analyze(const stored::Run& run);
// How many times analyze() has run in this process (tests hold each command
// to one analysis per run it reports).
uint64_t analyses_run();

// The rules, in the order they are tried (docs/verdict-rules.md lists them; a
// test holds both together). Within a chain the first rule that applies makes
// the finding; the run-wide rules each add theirs.
struct RuleInfo {
  std::string_view id;       // "protocol.turn_taking"
  std::string_view chain;    // "trust" | "path" | "tcp" | "protocol" | "protocol from disk" | "run"
  std::string_view summary;  // one line
};
std::vector<RuleInfo> verdict_rules();

// A finding is a verdict on a path (disk to disk or a protocol path).
bool is_verdict_path(const std::string& path);

// One path's verdict in brief, for summaries and the stored verdict of `history`.
struct PathVerdict {
  std::string path;                              // "smb disk read", "server -> client"
  std::string layer;                             // "server disk", "cpu", "undecided", ...
  std::string rule;                              // Finding::rule
  double figure = 0;                             // the judged row's median, bytes/s (0 when none)
  double ratio = 0, ratio_lo = 0, ratio_hi = 0;  // against the layer beneath (0: none)
  Confidence confidence = Confidence::kCertain;
};
// Every verdict finding's, in findings order.
std::vector<PathVerdict> path_verdicts(const Analysis& a);

// A run's verdict in brief, for `history` and `compare`: the headline finding's
// path and layer, and the capping row's median (0 when none).
// Rows with figures no verdict judges yet (the small-file rows, in ops/s):
// a run that measured only them still measured something.
bool has_unjudged_figures(const Analysis& a);

struct Headline {
  std::string path;   // "smb disk read"; "" when the run has no verdict
  std::string layer;  // "server disk", "cpu", "undecided", ...
  // The capping row (report/row_text.h names it), or without it the row's
  // label as stored (history's summaries); neither when none caps.
  std::optional<RowIdentity> cap_row;
  std::string stored_cap;
  double cap_bytes_per_s = 0;
  std::optional<Finding> finding;  // the headline finding (report/ renders its sentence)
  std::string stored_text;  // without `finding`: the sentence as stored (history's summaries)
  bool stages_ran = false;  // without a finding: whether any stage ran
  // Without a finding: only figures no verdict judges yet (small-file rows) came in.
  bool figures_only = false;
};
Headline headline_of(const Analysis& a);

// Finds a row by key; nullptr when absent.
const Row* find_row(const Analysis& a, const std::string& key);

// A cell of the transfer-size scan (stored op "sweep-seqread", size = request
// bytes): listed in its own table, not a layer of the ladder.
bool is_size_scan(const Row& r);

// The facts of `role` ("server" | "client") that the rules cite.
const HostFacts& host_facts(const Analysis& a, const std::string& role);

// The largest value of "4096 131072 6291456" (tcp_rmem/wmem) or of a single
// number; 0 when `text` holds none.
uint64_t max_of_sysctl(const std::string& text);

}  // namespace cp::analysis
