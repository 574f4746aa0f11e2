// Messages with every common field told, for the codec tests (not part of the
// library): core's round trips and the schema check of tests/schema.
#pragma once

#include <string>

#include "core/facts_message.h"
#include "core/messages.h"

namespace cp::msg::testing {

// Two cores, smbd busiest on the server.
inline CpuSummary sample_cpu() {
  CpuSummary c;
  c.seconds = 2.5;
  c.core_busy_pct = {80, 5};
  c.core_busy_max_pct = {90, 20};
  ProcLoad p;
  p.pid = 7;
  p.comm = "smbd";
  p.role = "server";
  p.cpu_pct = 99;
  p.top_thread_pct = 35;
  p.threads = 2;
  c.top.push_back(p);
  return c;
}

// A NAS's facts as its agent reports them, every part told: a ZFS dataset on
// a partition of a two-disk device, Samba read with testparm, two instances
// of one FTP server (the host's, a container's) and knfsd without a pid.
inline Facts sample_facts() {
  Facts f;
  f.hostname = "nas";
  f.os = "TrueNAS";
  f.kernel = "6.6.44";
  f.arch = "aarch64";
  f.cpu_model = "Cortex-A72";
  f.cpu_cores = 4;
  f.boot_id = "b-1";
  f.memory_bytes = 8ull << 30;
  f.net = NetFacts{"198.18.0.2", "eth0", "198.18.0.1", 9000, 2500, 1000000000, ""};
  f.ram_dir = DirFacts{"/ram", "tmpfs", 1u << 30, 1u << 29, false, {}, {}, {}};
  DirFacts disk{"/tank/share", "zfs", 4ull << 40, 1ull << 40, true, "tank/share", {}, {}};
  disk.device = BlockDeviceFacts{"sda1", "sda", true, 128, "mq-deadline", true, {}, {"sdb"}};
  disk.zfs = ZfsFacts{8ull << 30, std::nullopt};
  f.disk_dir = disk;
  f.tcp_sysctls = {{"net.ipv4.tcp_rmem", "4096 131072 6291456"}, {"net.core.rmem_max", {}}};
  f.samba = SambaFacts{0,
                       "/etc/smb.conf",
                       "",
                       "running smbd (pid 7)",
                       "testparm",
                       std::string(64, 'a'),
                       {{"smb2 max read", "65536"}, {"aio read size", "1"}}};
  f.euid = 1000;
  f.degraded = {{"process_netns", "assumed local", "root"}};
  f.file_servers = {{"vsftpd", 812, "/etc/vsftpd.conf", "running vsftpd (pid 812)", "", {}},
                    {"vsftpd",
                     4410,
                     "/ct/vsftpd.conf",
                     "running vsftpd (pid 4410)",
                     "",
                     {{"local_max_rate", std::string("20000000")}}},
                    {"knfsd", 0, "/proc/fs/nfs/exports", "kernel", "", {}}};
  return f;
}

// A sender's tcp_info with each figure set.
inline TcpInfo sample_tcp_info() {
  TcpInfo t;
  t.available = true;
  t.retransmits = 12;
  t.rtt_us = 250;
  t.rttvar_us = 30;
  t.snd_cwnd = 40;
  t.snd_mss = 1448;
  t.pmtu = 1500;
  t.busy_s = 1.25;
  t.rwnd_limited_s = 0.5;
  t.sndbuf_limited_s = 0.25;
  t.delivery_rate = 117000000;
  t.rtt_idle_us = 90;
  return t;
}

}  // namespace cp::msg::testing
