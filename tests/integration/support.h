// Helpers for end-to-end tests: run the built chokepoint, read its database.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/process.h"
#include "lab/layout.h"

namespace cp::itest {

// Runs the built chokepoint with `args`; output and exit code. Its lab
// commands and `diagnose --lab` act on the tests' own lab instance
// (lab_instance()), never on a user's lab.
RunResult chokepoint(const std::vector<std::string>& args, double timeout_s = 600);
// The same on lab instance `instance` (another test instance, never 0).
RunResult chokepoint_on(int instance, const std::vector<std::string>& args, double timeout_s = 600);

// The tests' lab instance: $CHOKEPOINT_TEST_LAB_INSTANCE, else 9 (never 0),
// its names and addresses, and its dir.
int lab_instance();
const lab::InstanceNames& lab_names();
std::string lab_dir();

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& text);

// One integer from an SQL query on the database file (read-only, its own connection).
int64_t query_int(const std::string& db, const std::string& sql);
std::string query_text(const std::string& db, const std::string& sql);

// PIDs of running processes whose command line contains `needle`.
std::vector<int> pids_matching(const std::string& needle);
// The same, only those inside the tests' lab hosts (not a user's lab beside them).
std::vector<int> lab_pids_matching(const std::string& needle);

// PIDs of the live (not zombie) children of `parent` whose command line
// contains `needle`, oldest first.
std::vector<int> children_matching(int parent, const std::string& needle);

// Whether `pid` still runs (a zombie does not).
bool alive(int pid);

// Entries of `dir` named chokepoint-run-* (what agents leave behind).
int run_dirs_in(const std::string& dir);

}  // namespace cp::itest
