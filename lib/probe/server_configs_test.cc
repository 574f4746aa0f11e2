#include "probe/server_configs.h"

#include <gtest/gtest.h>

#include <string>

namespace cp::probe {
namespace {

using namespace std::string_literals;

std::string value(const msg::NamedValues& v, const char* name) {
  const std::string* found = msg::find_value(v, name);
  return found ? *found : std::string("(absent)");
}

// Debian's vsftpd.conf shape: comments, settings the verdict does not read,
// a setting given twice (the later wins); a -o option on the command line
// overrides the file.
TEST(ServerConfigs, VsftpdConfAndCommandLine) {
  const msg::NamedValues conf = parse_vsftpd_conf(
      "# Example config file /etc/vsftpd.conf\n"
      "listen=NO\n"
      "local_max_rate=5000000\n"
      "#use_sendfile=YES\n"
      "use_sendfile=NO\n"
      "ssl_enable=NO\n"
      "local_max_rate=2500000\n"
      "not a setting\n");
  EXPECT_EQ(value(conf, "local_max_rate"), "2500000");
  EXPECT_EQ(value(conf, "use_sendfile"), "NO");
  EXPECT_EQ(value(conf, "ssl_enable"), "NO");
  EXPECT_EQ(value(conf, "listen"), "(absent)");  // not one the verdict reads
  msg::NamedValues overrides;
  const std::string cmd = "vsftpd\0-olocal_max_rate=0\0/srv/ftp/vsftpd.conf\0"s;
  EXPECT_EQ(vsftpd_config_from_cmdline(cmd, &overrides), "/srv/ftp/vsftpd.conf");
  EXPECT_EQ(value(overrides, "local_max_rate"), "0");
  EXPECT_EQ(vsftpd_config_from_cmdline("vsftpd\0"s, &overrides), "");
}

// Ganesha's config: blocks, comments, MaxWrite set in EXPORT_DEFAULTS and
// smaller in one EXPORT (the smallest caps that export's clients).
TEST(ServerConfigs, GaneshaMaxReadAndMaxWrite) {
  const msg::NamedValues conf = parse_ganesha_conf(
      "NFS_CORE_PARAM { Protocols = 4; MaxRPCRecvBufferSize = 65536; }\n"
      "EXPORT_DEFAULTS {\n  MaxWrite = 1048576; # the default\n}\n"
      "EXPORT {\n  Export_Id = 1;\n  Path = \"/srv/a\";\n  MaxWrite = 65536;\n"
      "  # MaxRead = 4096;\n  FSAL { Name = VFS; }\n}\n");
  EXPECT_EQ(value(conf, "maxwrite"), "65536");
  EXPECT_EQ(value(conf, "maxread"), "(absent)");  // a comment sets nothing
  // After an inner block, as the lab's `--ganesha` lines sit in its exports.
  EXPECT_EQ(value(parse_ganesha_conf("EXPORT {\n  FSAL { Name = VFS; }\n  MaxRead = 131072;\n}\n"),
                  "maxread"),
            "131072");
  EXPECT_EQ(ganesha_config_from_cmdline("ganesha.nfsd\0-f\0/l/ganesha.conf\0-L\0x\0"s),
            "/l/ganesha.conf");
  EXPECT_EQ(ganesha_config_from_cmdline("ganesha.nfsd\0"s), "");
}

// /proc/fs/nfs/exports as the kernel prints it: sync everywhere, then one
// export async (mixed).
TEST(ServerConfigs, KernelNfsExportsSyncOrAsync) {
  const std::string header = "# Version 1.1\n# Path Client(Flags) # IPs\n";
  const msg::NamedValues sync = parse_nfs_exports(
      header + "/srv/disk\t192.168.1.0/24(rw,root_squash,sync,wdelay,no_subtree_check,sec=1)\n");
  EXPECT_EQ(value(sync, "sync"), "sync");
  EXPECT_EQ(value(sync, "export:/srv/disk"), "rw,root_squash,sync,wdelay,no_subtree_check,sec=1");
  const msg::NamedValues mixed =
      parse_nfs_exports(header + "/srv/disk\t*(rw,sync)\n/srv/scratch\t*(rw,async)\n");
  EXPECT_EQ(value(mixed, "sync"), "mixed");
  EXPECT_EQ(value(parse_nfs_exports(header + "/a\t*(rw,async)\n"), "sync"), "async");
  EXPECT_TRUE(parse_nfs_exports(header).empty());
}

}  // namespace
}  // namespace cp::probe
