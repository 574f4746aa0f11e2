// File work for the protocol stages: pattern files laid out for a protocol
// to move, their checksums, and moving one file through a transfer driver
// between a local (tmpfs) file and a share. One buffer of `block` bytes each:
// memory does not grow with file size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/clock.h"
#include "transfer/driver.h"

namespace cp::agent {

using ProgressFn = std::function<void(uint64_t bytes, double seconds)>;

struct FileResult {
  uint64_t bytes = 0;
  double seconds = 0;
  std::string checksum;  // XXH3-64 hex of the bytes
};

// Creates `path` (never overwrites) with `size` bytes of pattern content,
// fsyncs it, and with `evict` drops it from the page cache so a protocol
// server reading it later reads the disk.
// `mode`: 0600, or 0644 when a protocol server's user must read it.
FileResult make_pattern_file(const std::string& path, uint64_t size, uint32_t block, bool evict,
                             unsigned mode, const CancelToken& cancel);

// Size and checksum of a file; `evict` drops it from the page cache after.
FileResult checksum_file(const std::string& path, uint32_t block, bool evict,
                         const CancelToken& cancel);

// share:remote -> local_path (created). Times open .. close of the remote file.
// `size_hint`: the size the orchestrator expects (0: unknown).
FileResult transfer_read(transfer::Session& session, const std::string& remote,
                         const std::string& local_path, uint64_t size_hint, uint32_t block,
                         const CancelToken& cancel, const ProgressFn& progress);

// local_path -> share:remote (created). Times open .. close (flushed).
FileResult transfer_write(transfer::Session& session, const std::string& local_path,
                          const std::string& remote, uint32_t block, const CancelToken& cancel,
                          const ProgressFn& progress);

// One cell of the transfer-size sweep: `total` bytes in requests of
// `request` bytes, sequential or at random request-aligned offsets within
// the first `file_size` bytes. Reads use an existing remote file; writes
// create `remote`.
enum class SweepPattern { kSeqRead, kRandRead, kSeqWrite, kRandWrite };
SweepPattern parse_sweep_pattern(const std::string& name);  // "seqread", ...
FileResult sweep_cell(transfer::Session& session, const std::string& remote, SweepPattern pattern,
                      uint32_t request, uint64_t total, uint64_t file_size,
                      const CancelToken& cancel);

}  // namespace cp::agent
