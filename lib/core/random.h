// Unguessable names and tokens: file names an attacker on a shared server must
// not predict, the TCP probe's sample tokens.
#pragma once

#include <cstddef>
#include <string>

namespace cp {

// `bytes` bytes from the kernel's CSPRNG (getrandom, else /dev/urandom) as
// 2 * bytes lower-case hex digits. Throws Error(kIo) when neither can be read.
std::string random_hex(size_t bytes);

}  // namespace cp
