#include "core/files_pass.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "core/enum_names.h"
#include "core/error.h"

namespace cp::files {

namespace {

constexpr EnumName<Phase> kPhaseNames[] = {{Phase::create, "create"},
                                           {Phase::stat, "stat"},
                                           {Phase::read, "read"},
                                           {Phase::remove, "delete"}};

}  // namespace

std::string_view phase_name(Phase p) {
  if (const char* name = name_in(kPhaseNames, p)) return name;
  ::cp::check_failed("unknown phase", __FILE__, __LINE__);
}

std::optional<Phase> parse_phase(std::string_view name) { return value_in(kPhaseNames, name); }

std::string Tree::dir_name(uint64_t d) const { return fmt::format("d{:04d}", d); }

std::string Tree::file_path(uint64_t i) const {
  return fmt::format("{}/f{:06d}", dir_name(dir_of(i)), i);
}

std::vector<uint64_t> visit_order(uint64_t n, bool random, uint64_t seed) {
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), uint64_t{0});
  if (random) {
    // mt19937_64 and a hand-rolled Fisher-Yates: std::shuffle's draws are
    // implementation-defined, and two hosts' libraries must agree.
    std::mt19937_64 gen(seed);
    for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[gen() % i]);
  }
  return order;
}

std::vector<uint64_t> directory_order(const Tree& tree) {
  std::vector<uint64_t> order;
  order.reserve(tree.count);
  for (uint64_t d = 0; d < tree.dirs; ++d)
    for (uint64_t i = d; i < tree.count; i += tree.dirs) order.push_back(i);
  return order;
}

void sort_directory_major(const Tree& tree, std::vector<uint64_t>& files) {
  std::sort(files.begin(), files.end(), [&](uint64_t a, uint64_t b) {
    const uint64_t da = tree.dir_of(a), db = tree.dir_of(b);
    return da != db ? da < db : a < b;
  });
}

int LatencyHistogram::bucket_of(uint64_t ns) {
  if (ns < uint64_t(kLinear)) return int(ns);
  int top = std::bit_width(ns) - 1;  // >= kSubBits + 1
  if (top >= kTopBit) return kBuckets - 1;
  int shift = top - kSubBits;
  int mantissa = int(ns >> shift) - (1 << kSubBits);  // 0 .. 15
  return kLinear + (top - kSubBits - 1) * (1 << kSubBits) + mantissa;
}

double LatencyHistogram::midpoint_ns(int bucket) {
  if (bucket < kLinear) return bucket;
  int rel = bucket - kLinear;
  int top = rel / (1 << kSubBits) + kSubBits + 1;
  int shift = top - kSubBits;
  uint64_t low = uint64_t((1 << kSubBits) + rel % (1 << kSubBits)) << shift;
  return double(low) + double(uint64_t{1} << shift) / 2;
}

void LatencyHistogram::add(double seconds) {
  uint64_t ns = seconds <= 0 ? 0 : uint64_t(std::llround(std::min(seconds, 1e9) * 1e9));
  ++buckets_[size_t(bucket_of(ns))];
  ++count_;
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

double LatencyHistogram::percentile_us(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  auto rank = std::max<uint64_t>(1, uint64_t(std::ceil(p / 100.0 * double(count_))));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[size_t(b)];
    if (seen >= rank) return std::min(midpoint_ns(b), double(max_ns_)) / 1e3;
  }
  return max_us();
}

Latency summarize(const LatencyHistogram& h) {
  return {h.percentile_us(50), h.percentile_us(99), h.max_us()};
}

}  // namespace cp::files
