// Linux's struct tcp_info, behind os::read_tcp_info (platform.h; its
// implementation is probe/linux/tcp_info.cc). Kept apart from tcp.cc because
// the kernel's <linux/tcp.h> (which has the newer fields) clashes with
// <netinet/tcp.h>, which Asio includes.
#pragma once

#include <cstddef>

#include "probe/tcp.h"

namespace cp::probe {

// Summary of the first `len` bytes of a kernel struct tcp_info, as getsockopt
// returned them: older kernels return fewer bytes, and fields beyond `len` stay 0;
// available = false when even tcpi_rtt is missing.
TcpInfoSummary summarize_tcp_info(const void* data, size_t len);

// sizeof(struct tcp_info) in the kernel headers this was built with, and the
// offset of tcpi_busy_time (the first field of kernel 4.9+), for tests.
size_t tcp_info_struct_size();
size_t tcp_info_busy_time_offset();

}  // namespace cp::probe
