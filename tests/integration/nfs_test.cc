// End to end with NFS (issue 15): `diagnose --lab` measures the lab's
// NFS-Ganesha shares with the nfs driver, NFSv4 from RAM and NFSv3 from the
// disk, stores what each sample negotiated, and the ladder and the verdict
// treat NFS like the other protocols.
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

// The lab, unshaped unless a test reshapes or throttles it.
class NfsEndToEnd : public LabSuite<NfsEndToEnd> {
 protected:
  // The `servers` part of `lab status --json`.
  static json::object lab_servers() {
    RunResult st = chokepoint({"lab", "status", "--json"}, 120);
    EXPECT_EQ(st.exit_code, 0) << st.err;
    return json::parse(st.out).as_object().at("servers").as_object();
  }
  // The server_dir of the lab's NFS share over `medium` (ram | disk); "" if none.
  static std::string nfs_share_dir(const json::object& servers, const std::string& medium) {
    for (const auto& v : servers.at("shares").as_array()) {
      const json::object& s = v.as_object();
      if (s.at("protocol").as_string() == "nfs" && s.at("medium").as_string() == medium)
        return std::string(s.at("server_dir").as_string());
    }
    return "";
  }
};

TEST_F(NfsEndToEnd, DiagnoseMeasuresNfsV4AndV3SharesWithVerdicts) {
  ASSERT_NO_FATAL_FAILURE(reshape({"--rate", "1gbit"}));
  const json::object servers = lab_servers();
  EXPECT_TRUE(servers.at("nfsd_alive").as_bool());
  const std::string ram = nfs_share_dir(servers, "ram"), disk = nfs_share_dir(servers, "disk");
  ASSERT_FALSE(ram.empty());
  ASSERT_FALSE(disk.empty());
  const std::string addr = lab_names().server_data_address;
  const std::string user = std::string(servers.at("share_user").as_string());

  TempDir t;
  write_file(t.file("plan.ini"),
             share_files_off("[disk]\nsizes = 20MB\ncount = 2\nsettle = 500ms\n[tcp]\ncount = 2\n"
                             "[protocol]\nsizes = 50MB\ncount = 3\n"
                             "[share nfs-ram]\nurl = nfs://" +
                             addr + "/ram\nserver_dir = " + ram + "\nmedium = ram\nuser = " + user +
                             "\n"
                             "[share nfs-disk]\nurl = nfs://" +
                             addr + "/disk\nserver_dir = " + disk +
                             "\nmedium = disk\nuser = " + user + "\noptions = version=3\n"));
  const std::string db = t.file("runs.db");
  RunResult r = chokepoint(
      {"diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"), "--json", "-q"}, 900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object doc = json::parse(r.out).as_object();
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE status != 'complete'"), 0)
      << query_text(db, "SELECT error FROM stages WHERE status != 'complete'");

  // Every sample moved its bytes and says what was negotiated.
  const std::string nfs_samples =
      "FROM sample_details WHERE json_extract(details_json, '$.share') LIKE 'nfs-%'";
  EXPECT_EQ(query_int(db, "SELECT count(*) " + nfs_samples + " AND error = ''"), 2 * 2 * 3);
  EXPECT_EQ(query_int(db,
                      "SELECT count(DISTINCT json_extract(details_json, "
                      "'$.properties.version')) " +
                          nfs_samples),
            2);
  EXPECT_EQ(
      query_text(db, "SELECT json_extract(details_json, '$.properties.version') " + nfs_samples +
                         " AND json_extract(details_json, '$.share') = "
                         "'nfs-disk' LIMIT 1"),
      "3");
  EXPECT_EQ(query_int(db, "SELECT count(*) " + nfs_samples +
                              " AND CAST(json_extract(details_json, "
                              "'$.properties.in_flight_bytes') AS INTEGER) > 0"),
            2 * 2 * 3);
  // depth=auto (the default) was sized from the TCP stage's rate, which the
  // protocol stage passed as path_rate, and the connection's round trip.
  EXPECT_EQ(query_int(db, "SELECT count(*) " + nfs_samples +
                              " AND json_extract(details_json, '$.properties.depth_chosen') = "
                              "'auto' AND CAST(json_extract(details_json, "
                              "'$.properties.path_rate') AS REAL) > 0 AND "
                              "CAST(json_extract(details_json, '$.properties.path_rtt_ms') AS "
                              "REAL) > 0"),
            2 * 2 * 3);

  // Ladder rows and a verdict for each NFS path, as for the other protocols.
  for (const std::string key : {"nfs:ram:read:50000000", "nfs:ram:write:50000000",
                                "nfs:disk:read:50000000", "nfs:disk:write:50000000"}) {
    const json::object* row = ladder_row(doc, key);
    ASSERT_NE(row, nullptr) << key;
    EXPECT_GT(row->at("median_bytes_per_s").to_number<double>(), 1e6) << key;
  }
  for (const std::string path : {"nfs ram read", "nfs ram write", "nfs disk read"}) {
    const json::object* f = verdict_finding(doc, path);
    ASSERT_NE(f, nullptr) << path;
    EXPECT_FALSE(f->at("layer").as_string().empty()) << path;
  }
  // NFSv4 reads and writes from RAM fill the 1 Gbit/s link: the verdict names
  // the network, neither NFS nor the client. NFSv4 writes go out in WRITEs of
  // the full request size (the driver's own COMPOUNDs, not libnfs 4.0's
  // ~3.8 KiB ones), so no client limit is on record.
  for (const std::string path : {"nfs ram read", "nfs ram write"}) {
    const json::object* f = verdict_finding(doc, path);
    ASSERT_NE(f, nullptr) << path;
    EXPECT_NE(f->at("layer").as_string(), "nfs") << f->at("text").as_string();
    EXPECT_NE(f->at("layer").as_string(), "probe") << f->at("text").as_string();
  }
  EXPECT_EQ(query_int(db, "SELECT count(*) " + nfs_samples +
                              " AND json_extract(details_json, '$.share') = 'nfs-ram'"
                              " AND json_extract(details_json, '$.properties.write_size_limit')"
                              " = 'none'"),
            2 * 3);
}

// `lab throttle --nfsd-cpu 10%`: Ganesha at a tenth of a core; the verdict
// names its CPU quota on the server, as it does smbd's.
TEST_F(NfsEndToEnd, StarvedGaneshaIsNamedByItsCpuQuota) {
  ASSERT_NO_FATAL_FAILURE(throttle({"--nfsd-cpu", "10%"}));
  const json::object servers = lab_servers();
  EXPECT_DOUBLE_EQ(servers.at("throttle").at("nfsd_cpu").to_number<double>(), 0.1);
  const std::string ram = nfs_share_dir(servers, "ram");
  ASSERT_FALSE(ram.empty());
  TempDir t;
  // 400 MB files: each transfer lasts over a second at the quota, longer
  // than the verdict's minimum CPU window.
  write_file(t.file("plan.ini"),
             share_files_off(
                 "[disk]\nenabled = no\n[tcp]\ncount = 2\n[protocol]\nsizes = 400MB\ncount = 3\n"
                 "[share nfs-ram]\nurl = nfs://" +
                 lab_names().server_data_address + "/ram\nserver_dir = " + ram +
                 "\nmedium = ram\nuser = " + std::string(servers.at("share_user").as_string()) +
                 "\noptions = version=3\n"));
  RunResult r = chokepoint({"diagnose", "--lab", "--db", t.file("runs.db"), "--plan",
                            t.file("plan.ini"), "--json", "-q"},
                           900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object doc = json::parse(r.out).as_object();
  const json::object* f = verdict_finding(doc, "nfs ram read");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->at("layer").as_string(), "cpu") << f->at("text").as_string();
  ASSERT_TRUE(f->contains("cpu")) << f->at("text").as_string();
  const json::object& cpu = f->at("cpu").as_object();
  EXPECT_EQ(cpu.at("kind").as_string(), "quota");
  EXPECT_EQ(cpu.at("host").as_string(), "server");
  EXPECT_EQ(cpu.at("process").as_string(), "ganesha.nfsd");
  EXPECT_NEAR(cpu.at("limit_pct").to_number<double>(), 10, 0.5);
}

}  // namespace
}  // namespace cp::itest
