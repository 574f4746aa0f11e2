// The path chain, the hand method's paths: disk to disk each way, capped by
// the slowest of the source disk, TCP and the destination disk.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/judge.h"
#include "core/bootstrap.h"
#include "core/error.h"

namespace cp::analysis {

// What the path rules read: the path's layers, slowest first, and the ratio of
// the two slowest.
struct PathCase {
  struct Layer {
    const Row* row;
    std::string name;  // "server disk", "TCP", ...: the layer a verdict names
  };
  std::string name;  // "server -> client"
  const Row* src_disk = nullptr;
  const Row* dst_disk = nullptr;
  std::vector<Layer> layers;
  RatioInterval ri;  // layers[0] / layers[1]; zero with one layer
};

namespace rules {

// A "disk" row that measured RAM: the real disk is unmeasured and may be
// slower than any layer here, so the path cannot tell.
bool path_medium(const Case& c, Finding& f) {
  for (const Row* r : {c.path->src_disk, c.path->dst_disk}) {
    if (!r || !r->medium_reason) continue;
    f.layer = "undecided";
    f.undecided_reason = "medium";
    f.candidates = {r->where + " disk"};
    f.reasons = {*r->medium_reason};
    return true;
  }
  return false;
}

// The two slowest within each other's noise: either may cap the path.
bool path_noise(const Case& c, Finding& f) {
  const PathCase& p = *c.path;
  if (p.layers.size() < 2) return false;
  const PathCase::Layer &cap = p.layers[0], &next = p.layers[1];
  if (!(p.ri.hi >= 1 && p.ri.lo < 1 && cap.row->rate.n > 1 && next.row->rate.n > 1)) {
    return false;
  }
  f.layer = "undecided";
  f.undecided_reason = "noise";
  f.candidates = {cap.row->layer == "tcp" ? "tcp" : cap.name,
                  next.row->layer == "tcp" ? "tcp" : next.name};
  Row tmp = *cap.row;
  tmp.ratio = p.ri.ratio;
  tmp.ratio_lo = p.ri.lo;
  tmp.ratio_hi = p.ri.hi;
  f.suggested_count = suggested_count(tmp);
  return true;
}

// TCP is the slowest: its explanation names what caps it.
bool path_tcp(const Case& c, Finding& f) {
  const Row& cap = *c.path->layers[0].row;
  if (cap.layer != "tcp") return false;
  if (f.ratio == 0) f.ratio = cap.ratio;
  adopt_tcp_explanation(cap, c.a, f);
  return true;
}

bool path_cpu(const Case& c, Finding& f) {
  const Row& cap = *c.path->layers[0].row;
  if (cap.cpu_bound.empty()) return false;
  set_cpu(f, cap, c.a);
  return true;
}

// The slowest layer is a disk at its bus's effective ceiling: the link beneath
// the disk caps it, not the disk itself.
bool path_bus(const Case& c, Finding& f) {
  const Row& cap = *c.path->layers[0].row;
  if (cap.layer != "disk" || !at_bus_ceiling(cap)) return false;
  set_bus(f, cap);
  return true;
}

bool path_slowest(const Case& c, Finding& f) {
  const PathCase::Layer& cap = c.path->layers[0];
  f.layer = cap.name;
  f.cap = cap.row->key;
  return true;
}

}  // namespace rules

std::optional<Finding> path_finding(const Analysis& a, Judged& judged, const std::string& name,
                                    const Row* src_disk, const Row* tcp, const Row* dst_disk) {
  PathCase p;
  p.name = name;
  p.src_disk = src_disk;
  p.dst_disk = dst_disk;
  const bool down = name == "server -> client";
  if (src_disk) p.layers.push_back({src_disk, down ? "server disk" : "client disk"});
  if (tcp) p.layers.push_back({tcp, "TCP"});
  if (dst_disk) p.layers.push_back({dst_disk, down ? "client disk" : "server disk"});
  if (p.layers.empty()) return std::nullopt;
  std::stable_sort(p.layers.begin(), p.layers.end(),
                   [](const PathCase::Layer& x, const PathCase::Layer& y) {
                     return x.row->rate.median < y.row->rate.median;
                   });
  Finding f;
  f.path = name;
  for (const Row* r : {src_disk, tcp, dst_disk}) {
    if (!r) continue;
    if (r == tcp && find_row(a, "link")) f.rows.push_back("link");
    f.rows.push_back(r->key);
  }
  const PathCase::Layer& cap = p.layers[0];
  f.subject = cite(*cap.row, CitedName::kLayer);
  for (size_t i = 1; i < p.layers.size(); ++i) {
    f.context.push_back(cite(*p.layers[i].row, CitedName::kLayer));
  }
  if (p.layers.size() > 1) {
    p.ri = bootstrap_median_ratio(cap.row->samples, p.layers[1].row->samples);
    f.ratio = p.ri.ratio;
    f.ratio_lo = p.ri.lo;
    f.ratio_hi = p.ri.hi;
  }
  const bool judged_one = run_chain(kPathChain, Case{a, nullptr, &p}, f);
  CP_CHECK(judged_one);  // path.slowest applies to every path the others leave
  if (f.rule == "path.tcp") judged.tcp.insert(cap.row->key);
  if (f.layer == "cpu") judged.cpu.insert(cap.row->key);
  if (f.layer != "undecided" && p.layers.size() > 1 && f.ratio >= kAtCeiling) {
    f.words["near"] = p.layers[1].name;  // both are near their ceiling
  }
  return f;
}

}  // namespace cp::analysis
