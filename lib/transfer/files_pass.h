// One small-file pass over a share (docs/small-files.md, "Over each
// share"): a files::Tree created, stat-ed, read whole and deleted through a
// driver's Session, each phase timed with its per-operation latency and the
// operations it kept in flight. The client agent runs it; the pipeline's
// `files` stage will.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/files_pass.h"
#include "transfer/driver.h"

namespace cp::transfer {

struct FilesPassOptions {
  files::Tree tree;
  // The pass's own directory, relative to the share ("chokepoint-run-x/files"):
  // made at the start (it must not exist), removed at the end.
  std::string root;
  // The visit order: files::visit_order(count, true, seed) when random, else
  // files::directory_order (a directory at a time).
  bool random = false;
  uint64_t seed = 0;
  // Seconds the create, stat and read phases may each take once a tenth of
  // the files are in (0: no budget); the delete phase always runs to the end,
  // so nothing is left on the server.
  double budget_s = 30;
  // Operations in flight asked for; capped at the driver's max_in_flight.
  unsigned in_flight = 1;
  // The tree is on the share already (the server agent laid it out: its
  // files_tree request): no create phase, and `root` is not made here. The
  // delete phase still removes it.
  bool laid_out = false;
  // One phase alone, on a tree the requests before it left (the pipeline
  // asks phase by phase, so the server can drop the files from its cache
  // before the read and measure its CPU over each phase): create makes the
  // tree and keeps it; stat and read visit the `existing` files the create
  // made (the first `existing` of its visit order) and keep them; delete
  // removes them and the tree. A failed create, or any cancelled phase,
  // removes everything. nullopt: the four phases in one go.
  std::optional<files::Phase> only;
  uint64_t existing = 0;
  // Called on the pass's thread before each phase starts (the server agent
  // drops the files from its cache before the read phase).
  std::function<void(files::Phase)> before_phase;
};

struct FilesPassResult {
  std::array<files::PhaseStats, 4> phases;  // in files::kPhases order
  // Operations it kept in flight at most: on one session's own calls
  // (Capabilities::file_ops_in_flight), else a session (a thread) each.
  unsigned in_flight = 1;
  // How the operations were kept in flight, or why one at a time.
  std::string in_flight_note;
  uint64_t created = 0;  // files the create phase made (the other phases' count)
  // The tree is still on the share (a single create, stat or read phase that
  // went well): the next phase's request finds it there.
  bool kept = false;
  // What could not be removed at the end ("" when everything was).
  std::string leftover;
};

// More sessions to the same share, one per operation in flight beyond the
// first (each its own connection); null: one session only.
using SessionSource = std::function<std::unique_ptr<Session>()>;

// Runs the pass on `session`. Several in flight: on that one session when
// its driver keeps them itself (Capabilities::file_ops_in_flight), else on
// sessions from `more`, in threads (or helper processes) of their own. A
// phase the driver cannot do is skipped with the reason; one that fails
// midway keeps its figures so far and the error, and the others still run.
// Throws only for a cancelled run (Error kCancelled, after removing what it
// made) or when the root cannot be made.
FilesPassResult run_files_pass(Session& session, const SessionSource& more,
                               const DriverSpec& driver, const FilesPassOptions& opts,
                               const CancelToken& cancel);

}  // namespace cp::transfer
