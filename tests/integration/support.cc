#include "support.h"

#include <algorithm>

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <boost/json.hpp>

#include "core/text.h"
#include "lab/lab.h"
#include "lab/sys.h"

namespace cp::itest {

int lab_instance() {
  static const int n = lab::test_instance();
  return n;
}

const lab::InstanceNames& lab_names() {
  static const lab::InstanceNames n = lab::instance_names(lab_instance());
  return n;
}

std::string lab_dir() { return lab_names().dir; }

RunResult chokepoint(const std::vector<std::string>& args, double timeout_s) {
  return chokepoint_on(lab_instance(), args, timeout_s);
}

RunResult chokepoint_on(int instance, const std::vector<std::string>& args, double timeout_s) {
  if (instance == 0) throw std::logic_error("tests never use lab instance 0, the user's");
  // The child inherits these: the instance, in its default dir.
  setenv(lab::kInstanceEnv, std::to_string(instance).c_str(), 1);
  unsetenv(lab::kDirEnv);
  std::vector<std::string> argv{CHOKEPOINT_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, "", timeout_s);
}

TempDir::TempDir() {
  std::string t = (std::filesystem::temp_directory_path() / "chokepoint-test-XXXXXX").string();
  if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
  path_ = t;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string slurp(const std::string& path) { return read_file(path).value_or(""); }

namespace {
template <typename F>
void query(const std::string& db, const std::string& sql, F&& row) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string err = h ? sqlite3_errmsg(h) : "open failed";
    sqlite3_close(h);
    throw std::runtime_error(db + ": " + err);
  }
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string err = sqlite3_errmsg(h);
    sqlite3_close(h);
    throw std::runtime_error(sql + ": " + err);
  }
  if (sqlite3_step(st) == SQLITE_ROW) row(st);
  sqlite3_finalize(st);
  sqlite3_close(h);
}
}  // namespace

int64_t query_int(const std::string& db, const std::string& sql) {
  int64_t v = -1;
  query(db, sql, [&](sqlite3_stmt* st) { v = sqlite3_column_int64(st, 0); });
  return v;
}

std::string query_text(const std::string& db, const std::string& sql) {
  std::string v;
  query(db, sql, [&](sqlite3_stmt* st) {
    if (auto* t = sqlite3_column_text(st, 0)) v = reinterpret_cast<const char*>(t);
  });
  return v;
}

std::string local_dirs(const TempDir& t) {
  return "[server]\nram_dir = " + t.path() + "\ndisk_dir = " + t.path() +
         "\n[client]\nram_dir = " + t.path() + "\ndisk_dir = " + t.path() + "\n";
}

RunResult diagnose_locally(const TempDir& dir, const std::string& sections, const std::string& db,
                           const std::vector<std::string>& extra) {
  write_file(dir.file("plan.ini"), local_dirs(dir) + sections);
  std::vector<std::string> args{"diagnose", "--server", "local",  "--client",           "local",
                                "--db",     db,         "--plan", dir.file("plan.ini"), "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return chokepoint(args);
}

int64_t complete_stages(const std::string& db, const std::string& layers) {
  return query_int(
      db, "SELECT count(*) FROM stages WHERE status = 'complete' AND layer IN (" + layers + ")");
}

void exec_sql(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << "\n" << sql;
  sqlite3_free(err);
  sqlite3_close(h);
}

namespace {

// Each live process's pid and its /proc directory.
std::vector<std::pair<int, std::filesystem::path>> processes() {
  std::vector<std::pair<int, std::filesystem::path>> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") == std::string::npos)
      out.emplace_back(std::stoi(name), e.path());
  }
  return out;
}

// A /proc file's whole text ("" once the process is gone).
std::string proc_text(const std::filesystem::path& path) { return slurp(path.string()); }

}  // namespace

std::vector<int> pids_matching(const std::string& needle) {
  std::vector<int> out;
  for (const auto& [pid, dir] : processes()) {
    std::string cmd = proc_text(dir / "cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos && pid != getpid()) out.push_back(pid);
  }
  return out;
}

std::vector<int> children_matching(int parent, const std::string& needle) {
  std::vector<std::pair<int64_t, int>> found;  // (start ticks, pid)
  for (const auto& [pid, dir] : processes()) {
    const std::string stat = proc_text(dir / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent || state == "Z") continue;
    if (proc_text(dir / "cmdline").find(needle) == std::string::npos) continue;
    found.push_back({process_start_ticks(pid).value_or(0), pid});
  }
  std::sort(found.begin(), found.end());
  std::vector<int> out;
  for (const auto& [ticks, pid] : found) out.push_back(pid);
  return out;
}

bool alive(int pid) { return process_start_ticks(pid).has_value(); }

int run_dirs_in(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("chokepoint-run-", 0) == 0) ++n;
  }
  return n;
}

std::vector<int> lab_pids_matching(const std::string& needle) {
  std::vector<int> out;
  for (int pid : pids_matching(needle)) {
    if (lab::sys::process_in_netns(pid, lab_names().server_netns) ||
        lab::sys::process_in_netns(pid, lab_names().client_netns)) {
      out.push_back(pid);
    }
  }
  return out;
}

namespace {
namespace json = boost::json;

std::string at_string(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_string())
    throw std::runtime_error("lab status --json: no string field '" + std::string(key) + "'");
  return std::string(v->as_string());
}
}  // namespace

const LabShare* LabStatus::share(std::string_view protocol, std::string_view medium) const {
  for (const LabShare& s : shares)
    if (s.protocol == protocol && s.medium == medium) return &s;
  return nullptr;
}

std::string LabStatus::plan_section(const std::string& name, std::string_view protocol,
                                    std::string_view medium, const std::string& extra) const {
  const LabShare* s = share(protocol, medium);
  if (!s) return "";
  return "[share " + name + "]\nurl = " + s->url + "\nserver_dir = " + s->server_dir +
         "\nmedium = " + s->medium + "\nuser = " + share_user +
         "\npassword_file = " + share_password_file + "\n" + extra;
}

LabStatus lab_status() {
  RunResult st = chokepoint({"lab", "status", "--json"}, 120);
  if (st.exit_code != 0) throw std::runtime_error("lab status --json failed: " + st.err);
  const json::object doc = json::parse(st.out).as_object();
  LabStatus out;
  out.dir = at_string(doc, "dir");
  out.ssh_config = at_string(doc, "ssh_config");
  for (auto [key, h] : {std::pair{"server", &out.server}, std::pair{"client", &out.client}}) {
    const json::object& o = doc.at(key).as_object();
    h->netns = at_string(o, "netns");
    h->alias = at_string(o, "alias");
    h->hostname = at_string(o, "hostname");
    h->ram_dir = at_string(o.at("ram").as_object(), "dir");
    h->disk_dir = at_string(o.at("disk").as_object(), "dir");
    if (const json::value* loop = o.if_contains("loop_device"); loop && loop->is_string())
      h->loop_device = std::string(loop->as_string());
    if (const json::value* pid = o.if_contains("sshd_pid"); pid && pid->is_number())
      h->sshd_pid = static_cast<int>(pid->to_number<int64_t>());
  }
  const json::object& servers = doc.at("servers").as_object();
  for (const auto& v : servers.at("shares").as_array()) {
    const json::object& s = v.as_object();
    out.shares.push_back({at_string(s, "protocol"), at_string(s, "medium"), at_string(s, "url"),
                          at_string(s, "server_dir")});
  }
  out.share_user = at_string(servers, "share_user");
  out.share_password_file = at_string(servers, "share_password_file");
  if (const json::value* pid = servers.if_contains("smbd_pid"); pid && pid->is_number())
    out.smbd_pid = static_cast<int>(pid->to_number<int64_t>());
  if (const json::value* a = servers.if_contains("nfsd_alive"); a && a->is_bool())
    out.nfsd_alive = a->as_bool();
  return out;
}

RunResult on_lab_host(const std::string& alias, const std::string& command, double timeout_s) {
  return run_command(
      {"ssh", "-F", lab_dir() + "/ssh_config", "-o", "BatchMode=yes", alias, command}, "",
      timeout_s);
}

std::string share_files_off(const std::string& plan) {
  if (plan.find("shares =") != std::string::npos) return plan;
  const size_t at = plan.find("[files]\n");
  if (at == std::string::npos) return plan + "\n[files]\nshares = no\n";
  std::string out = plan;
  out.insert(at + 8, "shares = no\n");
  return out;
}

RunResult diagnose_lab(const TempDir& dir, const std::string& plan, const std::string& db,
                       const std::vector<std::string>& extra) {
  write_file(dir.file("plan.ini"), share_files_off(plan));
  std::vector<std::string> args{"diagnose",           "--lab",  "--db", db, "--plan",
                                dir.file("plan.ini"), "--json", "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  return chokepoint(args, 900);
}

json::object diagnose_lab_report(const std::string& plan) {
  TempDir t;
  RunResult r = diagnose_lab(t, plan, t.file("runs.db"));
  EXPECT_FALSE(r.out.empty()) << r.err;
  if (r.out.empty()) return {};
  return json::parse(r.out).as_object();
}

const json::object* ladder_row(const json::object& report, std::string_view key) {
  const json::value* ladder = report.if_contains("ladder");
  if (!ladder || !ladder->is_array()) return nullptr;
  for (const auto& r : ladder->as_array())
    if (r.as_object().at("key").as_string() == key) return &r.as_object();
  return nullptr;
}

const json::object* verdict_finding(const json::object& report, std::string_view path) {
  const json::value* verdict = report.if_contains("verdict");
  if (!verdict || !verdict->is_object()) return nullptr;
  for (const auto& f : verdict->as_object().at("findings").as_array())
    if (f.as_object().at("path").as_string() == path) return &f.as_object();
  return nullptr;
}

std::string run_errors(const json::object& report) {
  std::string out;
  const json::value* stages = report.if_contains("stages");
  if (!stages || !stages->is_array()) return "no stages in the report";
  for (const auto& v : stages->as_array()) {
    const json::object& st = v.as_object();
    const std::string where = text_field(st, "layer") + " " + text_field(st, "where");
    if (!text_field(st, "error").empty()) out += where + ": " + text_field(st, "error") + "\n";
    for (const auto& sv : st.at("samples").as_array()) {
      const json::object& s = sv.as_object();
      if (text_field(s, "error").empty()) continue;
      out +=
          where + " sample " + json::serialize(s.at("id")) + ": " + text_field(s, "error") + "\n";
    }
  }
  return out.empty() ? "no stage or sample failed" : out;
}

std::string text_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

}  // namespace cp::itest
