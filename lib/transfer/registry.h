// Factories of the drivers; registry.cc lists them. Internal to lib/transfer.
#pragma once

#include <memory>

#include "transfer/driver.h"

namespace cp::transfer {

std::unique_ptr<Driver> make_null_driver();
std::unique_ptr<Driver> make_ftp_driver();
std::unique_ptr<Driver> make_smb_driver();
std::unique_ptr<Driver> make_path_driver();
std::unique_ptr<Driver> make_afp_driver();
std::unique_ptr<Driver> make_nfs_driver();

}  // namespace cp::transfer
