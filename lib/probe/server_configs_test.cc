#include "probe/server_configs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

// A proftpd config tree as Debian lays it out: proftpd.conf includes a file
// and a directory (conf.d/, its files in name order); TransferRate set for
// two commands with free bytes, then tighter for downloads in an included
// file inside a <Directory> block; UseSendfile off there too. Each
// setting's value is as written (KiB/s), the tightest per command.
TEST(ServerConfigs, ProftpdConfWithIncludesResolved) {
  const std::string dir = ::testing::TempDir() + "proftpd-conf-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/conf.d");
  auto put = [](const std::string& path, const std::string& text) { std::ofstream(path) << text; };
  put(dir + "/proftpd.conf",
      "# /etc/proftpd/proftpd.conf\nServerName \"NAS\"\nInclude " + dir +
          "/modules.conf\nTransferRate RETR,STOR 50000:1048576\nPidFile /run/x.pid\n"
          "Include " +
          dir + "/conf.d/\n");
  put(dir + "/modules.conf", "LoadModule mod_ctrls_admin.c\n");
  put(dir + "/conf.d/10-rate.conf",
      "<Directory /srv/ftp>\n  TransferRate retr 20000 user alice\n  UseSendfile off\n"
      "</Directory>\n#TransferRate STOR 10\n");
  put(dir + "/conf.d/20-other.conf", "  transferrate APPE 5\n");
  std::string text, error;
  ASSERT_TRUE(read_proftpd_conf(dir + "/proftpd.conf", &text, &error)) << error;
  const msg::NamedValues conf = parse_proftpd_conf(text);
  EXPECT_EQ(value(conf, "transferrate retr"), "20000");
  EXPECT_EQ(value(conf, "transferrate stor"), "50000");
  EXPECT_EQ(value(conf, "usesendfile"), "off");
  EXPECT_EQ(value(conf, "pidfile"), "/run/x.pid");
  // An Include naming a file that is not there: the config cannot be read.
  put(dir + "/broken.conf", "Include " + dir + "/missing.conf\n");
  EXPECT_FALSE(read_proftpd_conf(dir + "/broken.conf", &text, &error));
  EXPECT_FALSE(error.empty());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(proftpd_config_from_cmdline("proftpd\0-n\0-c\0/l/proftpd.conf\0"s), "/l/proftpd.conf");
  EXPECT_EQ(proftpd_config_from_cmdline("proftpd\0--config=/x.conf\0"s), "/x.conf");
  // As proftpd rewrites it once it runs.
  EXPECT_EQ(proftpd_config_from_cmdline("proftpd: (accepting connections)\0\0\0"s), "");
}

}  // namespace
}  // namespace cp::probe
