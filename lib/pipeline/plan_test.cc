#include "pipeline/plan.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace cp::pipeline {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_plan(text, "plan.ini");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    return describe(e);
  }
  return "";
}

TEST(Plan, DefaultsFollowTheHandMethod) {
  Plan p = parse_plan("", "empty");
  EXPECT_EQ(p.disk_sizes, (std::vector<uint64_t>{10'000'000, 100'000'000}));
  EXPECT_EQ(p.disk_count, 10);
  EXPECT_EQ(p.disk_block, 1u << 20);
  EXPECT_GE(p.tcp_seconds, 2.0);
}

TEST(Plan, ParsesEverySection) {
  Plan p = parse_plan(R"(# a comment
[server]
ram_dir = /mnt/ram   # trailing comment
disk_dir = /srv/data
[client]
disk_dir = /home/me/tmp
[disk]
sizes = 4MiB, 1GB
count = 3
block = 256k
[tcp]
seconds = 2500ms
count = 4
buffer = 1MiB
data_address = 10.0.0.5
[link]
nominal = 10gbit
)",
                      "plan.ini");
  EXPECT_EQ(p.server.ram_dir, "/mnt/ram");
  EXPECT_EQ(p.server.disk_dir, "/srv/data");
  EXPECT_EQ(p.client.ram_dir, "/dev/shm");
  EXPECT_EQ(p.client.disk_dir, "/home/me/tmp");
  EXPECT_EQ(p.disk_sizes, (std::vector<uint64_t>{4u << 20, 1'000'000'000}));
  EXPECT_EQ(p.disk_count, 3);
  EXPECT_EQ(p.disk_block, 256u << 10);
  EXPECT_DOUBLE_EQ(p.tcp_seconds, 2.5);
  EXPECT_EQ(p.tcp_count, 4);
  EXPECT_EQ(p.tcp_buffer, 1u << 20);
  EXPECT_EQ(p.data_address, "10.0.0.5");
  EXPECT_EQ(p.link_bits, 10'000'000'000u);
}

TEST(Plan, BaseIsOverriddenOnlyWhereSet) {
  Plan base;
  base.server.ram_dir = "/lab/ram";
  base.data_address = "198.18.0.1";
  Plan p = parse_plan("[disk]\ncount = 2\n", "p", base);
  EXPECT_EQ(p.server.ram_dir, "/lab/ram");
  EXPECT_EQ(p.data_address, "198.18.0.1");
  EXPECT_EQ(p.disk_count, 2);
}

TEST(Plan, ErrorsNameLineAndKey) {
  EXPECT_NE(error_of("[disk]\n\nsizez = 1MB\n").find("plan.ini:3: unknown key 'sizez' in [disk]"),
            std::string::npos);
  EXPECT_NE(error_of("[disk]\nsizez = 1MB\n").find("[disk] takes: block, count, enabled, sizes"),
            std::string::npos);
  EXPECT_NE(error_of("[disks]\n").find("plan.ini:1: unknown section [disks]"), std::string::npos);
  EXPECT_NE(error_of("count = 3\n").find("before any [section]"), std::string::npos);
  EXPECT_NE(error_of("[disk]\ncount three\n").find("expected 'key = value'"), std::string::npos);
  EXPECT_NE(error_of("[disk]\ncount = 0\n").find("plan.ini:2: disk.count"), std::string::npos);
  EXPECT_NE(error_of("[disk]\nblock = 1000\n").find("multiple of 4 KiB"), std::string::npos);
  EXPECT_NE(error_of("[tcp]\nseconds = fast\n").find("plan.ini:2: tcp.seconds"), std::string::npos);
  EXPECT_NE(error_of("[server]\nram_dir = relative/dir\n").find("not an absolute path"),
            std::string::npos);
  EXPECT_NE(error_of("[disk]\ncount = 2\ncount = 3\n").find("set twice"), std::string::npos);
  EXPECT_NE(error_of("[link]\nnominal = 1GB\n").find("unknown rate unit"), std::string::npos);
  EXPECT_NE(error_of("[disk\n").find("lacks ']'"), std::string::npos);
}

TEST(Plan, JsonCarriesEffectiveValues) {
  Plan p = parse_plan("[tcp]\ncount = 7\n", "x");
  std::string j = plan_to_json(p);
  EXPECT_NE(j.find("\"count\":7"), std::string::npos);
  EXPECT_NE(j.find("\"source\":\"x\""), std::string::npos);
}

}  // namespace
}  // namespace cp::pipeline
