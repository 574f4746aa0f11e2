// The small-file pass's shared vocabulary (docs/small-files.md): its phases,
// the tree of files it lays out (the same names on a disk and over a share),
// the per-operation latency histogram and what a phase reports. The disk
// probe (probe/files.cc) and the share passes (transfer/) both use it, so a
// disk's and a share's figures count the same operations the same way.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cp::files {

// Timed on their own, in this order (docs/small-files.md "What is measured").
enum class Phase { create, stat, read, remove };
inline constexpr std::array<Phase, 4> kPhases = {Phase::create, Phase::stat, Phase::read,
                                                 Phase::remove};

// "create" | "stat" | "read" | "delete" (the stored op is "files-" + this).
std::string_view phase_name(Phase p);
std::optional<Phase> parse_phase(std::string_view name);

// The tree one pass lays out under its root: `dirs` directories "d0000" ..,
// file i in directory i % dirs named "f000000" .. (zero-padded, so a listing
// sorts as created). Names are plain: no separator, no "..".
struct Tree {
  uint64_t count = 1000;  // files
  uint64_t size = 4096;   // bytes per file
  uint64_t dirs = 10;     // directories the files spread over (>= 1)

  std::string dir_name(uint64_t d) const;
  // "d0003/f000013": relative to the pass's root.
  std::string file_path(uint64_t i) const;
  uint64_t dir_of(uint64_t i) const { return i % dirs; }
};

// The order a phase visits the files: 0 .. n-1 (sequential), or a
// permutation drawn from `seed` (random; the same seed, the same order on
// every host, so a stored seed reproduces it).
std::vector<uint64_t> visit_order(uint64_t n, bool random, uint64_t seed);

// The sequential order that fills and empties one directory at a time: d0000's
// files ascending (0, dirs, 2 x dirs, ..), then d0001's, .., as `cp -r` copies a
// tree and bonnie++ -n fills one. On a local filesystem the directory's blocks
// and its inodes' table stay hot (ext4, measured: about 10 % less kernel CPU
// per create and per delete than moving to the next directory at every file).
std::vector<uint64_t> directory_order(const Tree& tree);
// `files` (indices of `tree`) put in that order.
void sort_directory_major(const Tree& tree, std::vector<uint64_t>& files);

// Per-operation latency in a fixed log-linear histogram of nanoseconds: exact
// below 32 ns, then 16 linear buckets per power of two up to 2^46 ns (~19 h;
// larger values land in the last bucket), a bucket's midpoint within 1/32 of
// any value in it. A million operations cost no memory beyond the 676
// buckets and no per-operation row.
class LatencyHistogram {
 public:
  void add(double seconds);
  void merge(const LatencyHistogram& other);
  uint64_t count() const { return count_; }
  // Microseconds; 0 when empty. percentile_us(50) is the median (the bucket
  // holding the ceil(p% x count)-th value, at its midpoint, never above max).
  double percentile_us(double p) const;
  double max_us() const { return double(max_ns_) / 1e3; }

 private:
  static constexpr int kSubBits = 4;             // 16 buckets per power of two
  static constexpr int kLinear = 2 << kSubBits;  // 32: exact below this
  static constexpr int kTopBit = 46;
  static constexpr int kBuckets = kLinear + (kTopBit - kSubBits) * (1 << kSubBits);
  static int bucket_of(uint64_t ns);
  static double midpoint_ns(int bucket);
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t max_ns_ = 0;
};

struct Latency {
  double median_us = 0;
  double p99_us = 0;
  double max_us = 0;
};
Latency summarize(const LatencyHistogram& h);

// What one phase of one pass did.
struct PhaseStats {
  Phase phase = Phase::create;
  uint64_t ops = 0;    // operations completed (files created, stat-ed, read, deleted)
  uint64_t bytes = 0;  // data moved (create, read); 0 for stat and delete
  double seconds = 0;  // the phase's wall time
  Latency latency;
  double in_flight_mean = 1;  // operations kept in flight, time-weighted mean
  uint64_t in_flight_max = 1;
  bool budget_hit = false;  // stopped at the budget before `count` files
  std::string skipped;      // why the phase did not run ("" when it did)
  // What stopped it midway ("" when nothing did): its figures are those of
  // the `ops` done before.
  std::string error;
  // Of `seconds`: the one syncfs that ends a disk pass's create phase (the
  // journal commit a copy pays; bonnie++ -n and fio's filecreate do not sync),
  // so a peer's figure can be held against the create without it. 0 elsewhere.
  double sync_seconds = 0;
  // Over a share: the network round trips one operation costs (`total`), and
  // how many of them operations in flight cannot overlap (`serial`: they take
  // turns on the connection), as the session makes them (transfer
  // Session::file_round_trips). 0: on a disk, or unknown.
  uint64_t round_trips = 0;
  uint64_t serial_round_trips = 0;

  double ops_per_second() const { return seconds > 0 ? double(ops) / seconds : 0; }
};

}  // namespace cp::files
