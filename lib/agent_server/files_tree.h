// The server agent's part of the small-file pass over a share
// (docs/small-files.md): a files::Tree laid out in a run directory for a
// share whose client did not create the files, its files dropped from the
// page cache before the read phase (so a protocol server reads the disk),
// and the tree removed. Every name is reached from the run directory's fd
// without following a link, as file_ops.h does.
#pragma once

#include "agent_server/file_ops.h"
#include "core/clock.h"
#include "core/files_pass.h"
#include "core/messages.h"

namespace cp::agent {

// `at` names the tree's root (a new directory in the run directory): its
// directories 0755 and files 0644 of `size` pattern bytes, synced, dropped
// from the cache.
msg::FilesTreeResult lay_out_tree(const RunFile& at, const files::Tree& tree,
                                  const CancelToken& cancel);
// Drops each file of the tree from the page cache (those a client made, or
// laid out above); `files` counts those dropped, `cache_reason` says what
// may still serve them.
msg::FilesTreeResult drop_tree(const RunFile& at, const files::Tree& tree,
                               const CancelToken& cancel);
// Removes what is left of the tree (missing entries are fine); `files`
// counts the files removed.
msg::FilesTreeResult remove_tree(const RunFile& at, const files::Tree& tree);

}  // namespace cp::agent
