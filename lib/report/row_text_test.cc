#include "report/row_text.h"

#include <gtest/gtest.h>

namespace cp::report {
namespace {

using analysis::RowIdentity;

RowIdentity row(std::string layer, std::string where, std::string op, uint64_t size,
                int streams = 1, std::string driver = "") {
  RowIdentity r;
  r.layer = std::move(layer);
  r.where = std::move(where);
  r.op = std::move(op);
  r.size = size;
  r.streams = streams;
  r.driver = std::move(driver);
  return r;
}

// Each kind of row is named from its fields alone, as every report prints it.
TEST(RowText, LabelsEachKindOfRow) {
  EXPECT_EQ(row_label(row("disk", "server", "read", 100'000'000)),
            "server disk read, 100 MB files");
  EXPECT_EQ(row_label(row("disk", "client", "syncwrite", 1'000'000)),
            "client disk synchronous write, 1 MB files");
  EXPECT_EQ(row_label(row("tcp", "server->client", "send", 0)), "TCP server -> client");
  EXPECT_EQ(row_label(row("tcp", "client->server", "send", 0, 2)),
            "TCP client -> server, 2 streams");
  EXPECT_EQ(row_label(row("smb", "ram", "read", 100'000'000)), "SMB from RAM read, 100 MB files");
  EXPECT_EQ(row_label(row("nfs", "disk", "write", 10'000'000)), "NFS from disk write, 10 MB files");
  EXPECT_EQ(row_label(row("smb", "ram", "sweep-seqread", 1 << 20)),
            "SMB from RAM seqread, 1 MiB requests");
  EXPECT_EQ(row_label(row("files", "server", "create", 4096)), "server disk create, 4 KiB (ops/s)");
  EXPECT_EQ(row_label(row("files", "client", "random-read", 4096)),
            "client disk random read, 4 KiB (ops/s)");
  EXPECT_EQ(row_label(row("files", "disk", "random-create", 4096, 1, "smb")),
            "SMB from disk random create, 4 KiB files (ops/s)");
}

TEST(RowText, LabelsTheLinkByItsSource) {
  RowIdentity link = row("link", "", "", 0);
  link.link = {"shaper", "eth0", "server"};
  EXPECT_EQ(row_label(link), "link (nominal, tc rate on eth0 (server))");
  link.link = {"interface", "eth1", "client"};
  EXPECT_EQ(row_label(link), "link (nominal, link speed of eth1 (client))");
  link.link = {"plan", "", ""};
  EXPECT_EQ(row_label(link), "link (nominal, set in the plan)");
  EXPECT_EQ(link_source_text({}), "");
}

TEST(RowText, NamesTheBusiestCoresTopProcess) {
  analysis::Row r;
  EXPECT_EQ(max_core_process_text(r), "");
  r.max_core_top = analysis::Row::TopProcess{"smbd", 99.6};
  EXPECT_EQ(max_core_process_text(r), "smbd at 100 %");
}

// A cited row is named as its rule names it (Cited::named), or by its label,
// and its verb follows its layer and op.
TEST(RowText, CitedRowsAreNamedByTheRuleOrByLabel) {
  using analysis::CitedName;
  analysis::Cited c;
  static_cast<RowIdentity&>(c) = row("disk", "server", "read", 100'000'000);
  c.key = "disk:server:read:100000000";
  EXPECT_EQ(cited_name(c), "");
  c.named = CitedName::kLayer;
  EXPECT_EQ(cited_name(c), "server disk");
  c.named = CitedName::kTheLayer;
  EXPECT_EQ(cited_name(c), "the server disk");
  c.named = CitedName::kLabel;
  EXPECT_EQ(cited_name(c), "server disk read, 100 MB files");
  EXPECT_EQ(cited_verb(c), "reads");
  c.op = "syncwrite";
  EXPECT_EQ(cited_verb(c), "writes synchronously");

  analysis::Cited t;
  static_cast<RowIdentity&>(t) = row("tcp", "server->client", "send", 0);
  t.named = CitedName::kLayer;
  EXPECT_EQ(cited_name(t), "TCP");
  EXPECT_EQ(cited_verb(t), "carries");

  analysis::Cited p;
  static_cast<RowIdentity&>(p) = row("smb", "ram", "read", 100'000'000);
  p.named = CitedName::kMedium;
  EXPECT_EQ(cited_name(p), "SMB from RAM");
  p.named = CitedName::kMediumOp;
  EXPECT_EQ(cited_name(p), "SMB from RAM read");
  EXPECT_EQ(cited_verb(p), "moves");
}

analysis::Cited cited(const RowIdentity& id, double median_mbps, size_t n = 5) {
  analysis::Cited c;
  static_cast<RowIdentity&>(c) = id;
  c.key = "k";
  c.n = n;
  c.median = median_mbps * 1e6;
  return c;
}

// Each kind of cache or anomaly reason names its rows and figures.
TEST(RowText, TrustReasonsNameTheirRowsAndFigures) {
  analysis::TrustReason nd;
  nd.id = "cache.no_direct";
  nd.row = cited(row("disk", "server", "read", 100'000'000), 180);
  nd.cache_possible = 3;
  nd.memory_bytes = 16'000'000'000;
  nd.role = "server";
  EXPECT_EQ(trust_reason_text(nd),
            "3 of 5 samples of server disk read, 100 MB files ran without O_DIRECT (the "
            "filesystem refused it) and the 100 MB files fit in the server's 16 GB of RAM, so "
            "the page cache may have served them");
  analysis::TrustReason agent = nd;
  agent.id = "cache.agent";
  agent.why = "zfs: the ARC keeps them";
  agent.memory_bytes = 0;
  EXPECT_EQ(trust_reason_text(agent),
            "3 of 5 samples of server disk read, 100 MB files: zfs: the ARC keeps them, so a "
            "cache may have served them");
  analysis::TrustReason client;
  client.id = "cache.client";
  client.row = cited(row("nfs", "ram", "read", 100'000'000), 130);
  client.beneath = cited(row("tcp", "server->client", "send", 0), 117);
  EXPECT_EQ(trust_reason_text(client),
            "NFS from RAM read, 100 MB files moves 130 MB/s, faster than TCP carries (117 "
            "MB/s): the client's page cache served part of it");
  analysis::TrustReason anomaly = client;
  anomaly.id = "anomaly.beats_tcp";
  EXPECT_EQ(trust_reason_text(anomaly),
            "NFS from RAM read, 100 MB files moves 130 MB/s, faster than TCP carries (117 "
            "MB/s) beyond both rows' spread: the TCP figure is no ceiling here (noise, or the TCP "
            "probe limited by its own CPU)");
  analysis::TrustReason beats;
  beats.id = "cache.beats_beneath";
  beats.row = cited(row("smb", "disk", "write", 100'000'000), 90);
  beats.beneath = cited(row("disk", "server", "write", 100'000'000), 60);
  EXPECT_EQ(trust_reasons_text({beats, agent}),
            "SMB from disk write, 100 MB files moves 90 MB/s, faster than server disk write, "
            "100 MB files (60 MB/s) beyond both rows' spread: the server's page cache absorbed "
            "the writes (write-back), so the disk's own limit does not show with files of this "
            "size; 3 of 5 samples of server disk read, 100 MB files: zfs: the ARC keeps them, so "
            "a cache may have served them");
}

TEST(RowText, HeadlineCapIsRenderedOrAsStored) {
  analysis::Headline h;
  EXPECT_EQ(cap_label(h), "");
  h.stored_cap = "server disk read, 100 MB files";
  EXPECT_EQ(cap_label(h), "server disk read, 100 MB files");
  h.cap_row = row("tcp", "server->client", "send", 0);
  EXPECT_EQ(cap_label(h), "TCP server -> client");
}

}  // namespace
}  // namespace cp::report
