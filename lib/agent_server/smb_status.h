// The smb_status request (agent.cc's table): what smbd negotiated with each
// connected client, read from `smbstatus --json` on the server, since
// libsmbclient does not tell its caller.
#pragma once

#include "core/messages.h"

namespace cp::agent {

// Throws Error(kUnsupported) when smbstatus is missing, too old (no --json:
// Samba < 4.16) or may not read smbd's state.
msg::SmbStatusResult smb_status_op(const msg::SmbStatusRequest& q);

}  // namespace cp::agent
