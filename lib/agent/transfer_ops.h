// The protocol clients' file work: moving one file through a transfer
// driver between a local (tmpfs) file and a share, and the request-size
// size scan. Only the full agent (chokepoint-agent) has it; file_ops.h holds
// what the server end needs. One buffer of `block` bytes each:
// memory does not grow with file size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "agent_server/file_ops.h"
#include "core/clock.h"
#include "transfer/driver.h"

namespace cp::agent {

// share:remote -> local (created, O_EXCL|O_NOFOLLOW). Times open .. close of the remote file.
// `size_hint`: the size the orchestrator expects (0: unknown).
FileResult transfer_read(transfer::Session& session, const std::string& remote,
                         const RunFile& local, uint64_t size_hint, uint32_t block,
                         const CancelToken& cancel, const ProgressFn& progress);

// local (a regular file, not a link) -> share:remote (created). Times open .. close (flushed).
FileResult transfer_write(transfer::Session& session, const RunFile& local,
                          const std::string& remote, uint32_t block, const CancelToken& cancel,
                          const ProgressFn& progress);

// One cell of the transfer-size scan: `total` bytes in requests of
// `request` bytes, sequential or at random request-aligned offsets within
// the first `file_size` bytes. Reads use an existing remote file; writes
// create `remote`.
enum class ScanPattern { kSeqRead, kRandRead, kSeqWrite, kRandWrite };
ScanPattern parse_scan_pattern(const std::string& name);  // "seqread", ...
FileResult scan_cell(transfer::Session& session, const std::string& remote, ScanPattern pattern,
                     uint32_t request, uint64_t total, uint64_t file_size,
                     const CancelToken& cancel);

}  // namespace cp::agent
