// The drivers' specs; each driver's file defines its own (its URL prefixes,
// capabilities, options and factory) and registry.cc lists them. Internal to
// lib/transfer.
#pragma once

#include "transfer/driver.h"

namespace cp::transfer {

extern const DriverSpec kNullDriver;
extern const DriverSpec kFtpDriver;
extern const DriverSpec kSmbDriver;
extern const DriverSpec kPathDriver;
extern const DriverSpec kAfpDriver;
extern const DriverSpec kNfsDriver;

}  // namespace cp::transfer
