#include "lab/servers.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "lab/ganesha.h"
#include "lab/layout.h"
#include "lab/sys.h"

namespace cp::lab::servers {
namespace {

namespace fs = std::filesystem;

constexpr double kStartWait = 20;  // seconds for a server to accept connections
constexpr double kStopWait = 5;    // seconds after TERM before KILL
constexpr size_t kPasswordLength = 24;

void require_programs() {
  for (const char* p : {"vsftpd", "smbd", "smbpasswd", "useradd", "chpasswd", "nsenter"}) {
    if (find_program(p).empty()) {
      throw Error(ErrorKind::kUnsupported,
                  fmt::format("the lab's FTP and SMB servers need '{}', which is not installed", p),
                  "install vsftpd and samba (scripts/install-deps.sh installs what chokepoint "
                  "needs)");
    }
  }
}

// Letters and digits from /dev/urandom (rejection sampling keeps it uniform).
std::string random_password() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string out;
  FILE* f = std::fopen("/dev/urandom", "rb");
  if (!f) throw Error(ErrorKind::kIo, "cannot open /dev/urandom: " + errno_text(errno));
  while (out.size() < kPasswordLength) {
    const int c = std::fgetc(f);
    if (c == EOF) break;
    if (c < 62 * 4) out += kChars[c % 62];  // 248 of 256 values: no bias
  }
  std::fclose(f);
  if (out.size() < kPasswordLength) throw Error(ErrorKind::kIo, "short read from /dev/urandom");
  return out;
}

void ensure_user(LabState& s, const ServerFiles& f, const std::function<void()>& save) {
  // A share user that logs in over SSH (--server-login user) needs a shell and a
  // home of its own; otherwise it has neither.
  const bool login = server_login_is_user(s);
  const std::string home = login ? server_home(s) : f.ftp_root;
  const std::string shell = login ? "/bin/sh" : "/usr/sbin/nologin";
  if (const std::optional<sys::User> user = sys::find_user(s.share_user)) {
    const std::string& gecos = user->comment;
    if (gecos.rfind(kShareUserComment, 0) != 0) {
      throw Error(ErrorKind::kIo,
                  fmt::format("user {} exists and is not the lab's (its comment is '{}')",
                              s.share_user, gecos),
                  fmt::format("the lab needs that name for its share user: remove or rename the "
                              "user ({}), or point diagnose at real hosts",
                              s.share_user));
    }
    // Left by a lab that did not come down: the lab's own, so adopt it.
    run_checked({"usermod", "--home", home, "--shell", shell, s.share_user});
  } else {
    run_checked({"useradd", "--system", "--user-group", "--no-create-home", "--home-dir", home,
                 "--shell", shell, "--comment", kShareUserComment, s.share_user});
  }
  if (login) run_checked({"chown", s.share_user + ":" + s.share_user, home});
  s.share_user_created = true;
  save();
}

void set_password(const LabState& s, const ServerFiles& f) {
  // The lab's password stays what it is across restarts of the servers (clients
  // may hold it); a new lab gets a fresh one.
  std::string password;
  if (std::optional<std::string> old = sys::read_file(s.share_password_file)) {
    password = old->substr(0, old->find('\n'));
  }
  if (password.size() != kPasswordLength ||
      password.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != std::string::npos) {
    password = random_password();
  }
  sys::write_file(s.share_password_file, password + "\n", 0600);
  // On stdin only: never in argv, where ps would show it.
  run_checked({"chpasswd"}, s.share_user + ":" + password + "\n");
  run_checked({"smbpasswd", "-c", f.smb_conf, "-a", "-s", s.share_user},
              password + "\n" + password + "\n");
}

// A self-signed certificate for vsftpd, made once per lab dir: its subject and IP SAN
// are the data address, so a client given it as CA (ca_file=) verifies the server fully.
void make_ftps_certificate(const LabState& s, const ServerFiles& f) {
  if (fs::exists(f.ftps_cert) && fs::exists(f.ftps_key)) return;
  const std::string addr = s.server.data_address;
  run_checked({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days",
               "3650", "-subj", "/CN=" + addr + "/O=chokepoint lab", "-addext",
               "subjectAltName=IP:" + addr, "-keyout", f.ftps_key, "-out", f.ftps_cert});
  chmod(f.ftps_key.c_str(), 0600);
  chmod(f.ftps_cert.c_str(), 0644);
}

void write_configs(const LabState& s, const ServerFiles& f) {
  sys::make_dirs(f.ftp_root, 0755);
  sys::make_dirs(f.ftp_empty, 0755);
  for (const std::string& d : samba_dirs(f)) sys::make_dirs(d, 0755);
  chmod((f.samba_dir + "/private").c_str(), 0700);
  sys::write_file(f.vsftpd_conf, vsftpd_conf_text(s), 0644);
  make_ftps_certificate(s, f);
  sys::write_file(f.pam_file, kVsftpdPam, 0644);
  sys::write_file(f.smb_conf, smb_conf_text(s), 0644);
  // The login dir's entries lead to the shares (resolved inside the host,
  // where the tmpfs and the ext4 are mounted).
  const std::pair<const char*, std::string> links[] = {
      {"ram", f.ram_share}, {"disk", f.disk_share}, {kReadOnlyShare, f.ro_share}};
  for (const auto& [name, target] : links) {
    const fs::path link = fs::path(f.ftp_root) / name;
    std::error_code ec;
    fs::remove(link, ec);
    fs::create_symlink(target, link, ec);
    if (ec) {
      throw Error(ErrorKind::kIo,
                  fmt::format("cannot link {} to {}: {}", link.string(), target, ec.message()));
    }
  }
}

void stop_pid(int pid) { sys::stop_process(pid, kStopWait); }

}  // namespace

void server_failed(const std::string& what, const std::vector<std::string>& logs) {
  std::string text;
  for (const std::string& log : logs) {
    const std::string t = sys::tail(log, 10);
    if (!t.empty()) text += fmt::format("\n{}:\n{}", log, t);
  }
  throw Error(ErrorKind::kIo, what + (text.empty() ? " (its logs are empty)" : text),
              "fix what the log names, then `chokepoint lab down` and `lab up`");
}

int wait_for(const LabState& s, const std::string& name, const char* comm,
             const std::string& pid_file, const std::string& conf, int port,
             const std::vector<std::string>& logs, double wait_s) {
  const double deadline = monotonic_seconds() + wait_s;
  int pid = 0;
  while (monotonic_seconds() < deadline) {
    if (pid == 0) pid = sys::read_pid_file(pid_file);
    if (pid > 0 && !sys::process_alive(pid)) {
      server_failed(fmt::format("{} of {} exited at start", name, s.server.hostname), logs);
    }
    if (pid > 0 && sys::process_is(pid, comm, conf) &&
        sys::tcp_accepts_in_netns(s.server.netns, s.server.data_address, port, 0.5)) {
      return pid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  server_failed(fmt::format("{} of {} did not accept connections on {}:{} within {:.0f} s", name,
                            s.server.hostname, s.server.data_address, port, wait_s),
                logs);
}

bool ftpd_alive(const LabState& s) {
  return sys::process_is(s.server.ftpd_pid, "vsftpd", server_files(s).vsftpd_conf);
}

bool smbd_alive(const LabState& s) {
  return sys::process_is(s.server.smbd_pid, "smbd", server_files(s).smb_conf);
}

void start(LabState& s, const std::function<void()>& save) {
  require_programs();
  CP_CHECK(s.server.sshd_pid > 0);
  if (s.share_user.empty()) {
    // A lab from before the servers: fill in what plan() gives a new one.
    const LabState fresh = plan(s.options, s.dir);
    s.share_user = fresh.share_user;
    s.share_password_file = fresh.share_password_file;
    s.server.shares = fresh.server.shares;
  }
  const ServerFiles f = server_files(s);
  const bool ftp_up = ftpd_alive(s);
  const bool smb_up = smbd_alive(s);
  if (ftp_up && smb_up) {
    ganesha::start(s, save);
    return;
  }
  write_configs(s, f);
  ensure_user(s, f, save);
  set_password(s, f);
  std::string which;
  if (!ftp_up) {
    ::unlink(f.vsftpd_pid.c_str());
    which += "ftp";
  }
  if (!smb_up) {
    ::unlink(f.smbd_pid.c_str());
    which += which.empty() ? "smb" : " smb";
  }
  run_checked(server_start_argv(s, which));
  if (!ftp_up) {
    s.server.ftpd_pid = wait_for(s, "vsftpd", "vsftpd", f.vsftpd_pid, f.vsftpd_conf, kFtpPort,
                                 {f.vsftpd_out, f.vsftpd_log}, kStartWait);
    save();
  }
  if (!smb_up) {
    s.server.smbd_pid = wait_for(s, "smbd", "smbd", f.smbd_pid, f.smb_conf, kSmbPort,
                                 {f.smbd_out, f.samba_dir + "/log.smbd"}, kStartWait);
    save();
  }
  ganesha::start(s, save);
}

void stop(LabState& s) {
  if (ftpd_alive(s)) stop_pid(s.server.ftpd_pid);
  if (smbd_alive(s)) stop_pid(s.server.smbd_pid);
  s.server.ftpd_pid = 0;
  s.server.smbd_pid = 0;
  ganesha::stop(s);
}

void stop_smbd(LabState& s) {
  if (smbd_alive(s)) stop_pid(s.server.smbd_pid);
  s.server.smbd_pid = 0;
}

void stop_ftpd(LabState& s) {
  if (ftpd_alive(s)) stop_pid(s.server.ftpd_pid);
  s.server.ftpd_pid = 0;
}

void delete_user(const LabState& s) {
  if (!s.share_user_created || s.share_user.empty()) return;
  const std::optional<sys::User> user = sys::find_user(s.share_user);
  if (!user) return;
  if (user->comment.rfind(kShareUserComment, 0) != 0) return;  // not ours after all: leave it
  run_checked({"userdel", s.share_user});
}

}  // namespace cp::lab::servers
