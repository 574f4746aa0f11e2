#include "support.h"

#include <algorithm>

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

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

std::vector<int> pids_matching(const std::string& needle) {
  std::vector<int> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string cmd = ss.str();
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos && std::stoi(name) != getpid()) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

std::vector<int> children_matching(int parent, const std::string& needle) {
  std::vector<std::pair<int64_t, int>> found;  // (start ticks, pid)
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(e.path() / "stat");
    std::stringstream ss;
    ss << st.rdbuf();
    const std::string stat = ss.str();
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent || state == "Z") continue;
    std::ifstream in(e.path() / "cmdline");
    std::stringstream cs;
    cs << in.rdbuf();
    if (cs.str().find(needle) == std::string::npos) continue;
    const int pid = std::stoi(name);
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

}  // namespace cp::itest
