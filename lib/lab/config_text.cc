// The lab's configuration files as text: sshd, vsftpd, Samba, the server
// start script, the orchestrator's ssh_config and known_hosts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/mountinfo.h"
#include "lab/layout.h"

namespace cp::lab {

std::string sshd_config_text(const LabState& s, const LabHost& h) {
  const HostFiles f = host_files(s, h);
  return fmt::format(
      "# {host}: sshd of the chokepoint lab (`chokepoint lab up` writes it, `lab down` removes "
      "it)\n"
      "ListenAddress {addr}\n"
      "Port 22\n"
      "HostKey {key}\n"
      "PidFile {pid}\n"
      // The lab's key (root); a user's own ~/.ssh/authorized_keys too, read as
      // that user (the tune tests log in as a non-root user).
      "AuthorizedKeysFile {auth} .ssh/authorized_keys\n"
      "PermitRootLogin prohibit-password\n"
      "PubkeyAuthentication yes\n"
      "PasswordAuthentication no\n"
      "KbdInteractiveAuthentication no\n"
      "UsePAM no\n"
      "StrictModes no\n"
      "UseDNS no\n"
      "PrintMotd no\n"
      "PrintLastLog no\n"
      "X11Forwarding no\n"
      // diagnose opens several channels and connections at once.
      "MaxSessions 32\n"
      "MaxStartups 32:30:64\n"
      "Subsystem sftp internal-sftp\n"
      "{chroot}",
      fmt::arg("host", h.hostname), fmt::arg("addr", h.mgmt_address), fmt::arg("key", f.host_key),
      fmt::arg("pid", f.pid_file), fmt::arg("auth", s.dir + "/authorized_keys"),
      // The nas profile: every session in the BusyBox-only root (nas_root.h).
      fmt::arg("chroot", h.role == "server" && s.options.server_profile == "nas"
                             ? "ChrootDirectory " + f.dir + "/nasroot\n"
                             : std::string()));
}

std::string vsftpd_conf_text(const LabState& s) {
  const ServerFiles f = server_files(s);
  std::string extra;
  for (const std::string& p : s.options.vsftpd_params) extra += p + "\n";
  if (!extra.empty()) extra = "# lab up --vsftpd\n" + extra;
  return fmt::format(
      "# {host}: vsftpd of the chokepoint lab (`chokepoint lab up` writes it, `lab down` "
      "removes it)\n"
      "listen=YES\n"
      "listen_ipv6=NO\n"
      "listen_address={addr}\n"
      "listen_port={port}\n"
      "background=NO\n"
      "anonymous_enable=NO\n"
      "local_enable=YES\n"
      "write_enable=YES\n"
      "local_umask=022\n"
      "chroot_local_user=NO\n"
      "local_root={root}\n"
      "userlist_enable=NO\n"
      "pam_service_name=vsftpd\n"
      // Its default lives under /run, which each lab host replaces.
      "secure_chroot_dir={empty}\n"
      // vsftpd's seccomp filter refuses a syscall the lab's kernel makes. Its
      // defaults isolate=YES and isolate_network=YES stay (each session in
      // namespaces of its own, as on a stock Debian server): the verdict
      // must know such a session for the file server it is.
      "seccomp_sandbox=NO\n"
      "pasv_enable=YES\n"
      "pasv_min_port={pmin}\n"
      "pasv_max_port={pmax}\n"
      "connect_from_port_20=NO\n"
      // Explicit TLS offered, not required: ftp:// and ftps:// on the same port.
      "ssl_enable=YES\n"
      "rsa_cert_file={cert}\n"
      "rsa_private_key_file={key}\n"
      "allow_anon_ssl=NO\n"
      "force_local_logins_ssl=NO\n"
      "force_local_data_ssl=NO\n"
      // vsftpd 3.0.3's default (DES-CBC3-SHA) is refused by OpenSSL 3.
      "ssl_ciphers=HIGH\n"
      // libcurl resumes the control connection's TLS session on data connections, but
      // not always in the way vsftpd's check expects under TLS 1.3 ("522 ... session
      // reuse required"); the lab does not need that check.
      "require_ssl_reuse=NO\n"
      "xferlog_enable=YES\n"
      "vsftpd_log_file={log}\n"
      "syslog_enable=NO\n"
      "max_clients=0\n"
      "max_per_ip=0\n"
      "ftpd_banner=chokepoint lab FTP on {host}\n{extra}",
      fmt::arg("host", s.server.hostname), fmt::arg("addr", s.server.data_address),
      fmt::arg("port", kFtpPort), fmt::arg("root", f.ftp_root), fmt::arg("empty", f.ftp_empty),
      fmt::arg("pmin", kPasvMinPort), fmt::arg("pmax", kPasvMaxPort), fmt::arg("log", f.vsftpd_log),
      fmt::arg("cert", f.ftps_cert), fmt::arg("key", f.ftps_key), fmt::arg("extra", extra));
}

const char* const kVsftpdPam =
    "# chokepoint lab: vsftpd's PAM service inside cp-server only\n"
    "auth required pam_unix.so\n"
    "account required pam_unix.so\n"
    "session required pam_permit.so\n";

std::string smb_conf_text(const LabState& s) {
  const ServerFiles f = server_files(s);
  const std::vector<std::string> d = samba_dirs(f);
  std::string out = fmt::format(
      "# {host}: smbd of the chokepoint lab (`chokepoint lab up` writes it, `lab down` removes "
      "it)\n"
      "[global]\n"
      "  server role = standalone server\n"
      "  workgroup = CHOKEPOINT\n"
      "  netbios name = CP-SERVER\n"
      "  interfaces = {addr}\n"
      "  bind interfaces only = yes\n"
      "  smb ports = {port}\n"
      "  disable netbios = yes\n"
      "  server min protocol = SMB2_02\n"
      "  private dir = {private}\n"
      "  lock directory = {lock}\n"
      "  state directory = {state}\n"
      "  cache directory = {cache}\n"
      "  pid directory = {run}\n"
      "  ncalrpc dir = {ncalrpc}\n"
      "  passdb backend = tdbsam:{private}/passdb.tdb\n"
      "  log file = {samba}/log.%m\n"
      "  max log size = 1000\n"
      "  log level = 1\n"
      "  map to guest = never\n"
      "  load printers = no\n"
      "  printing = bsd\n"
      "  printcap name = /dev/null\n"
      "  disable spoolss = yes\n"
      "  usershare path =\n"
      "  obey pam restrictions = no\n",
      fmt::arg("host", s.server.hostname), fmt::arg("addr", s.server.data_address),
      fmt::arg("port", kSmbPort), fmt::arg("private", d[0]), fmt::arg("lock", d[1]),
      fmt::arg("state", d[2]), fmt::arg("cache", d[3]), fmt::arg("run", d[4]),
      fmt::arg("ncalrpc", d[5]), fmt::arg("samba", f.samba_dir));
  // `lab up --samba` lines of `section` ("": [global]).
  auto params_of = [&](const std::string& section) {
    std::string lines;
    for (const std::string& p : s.options.samba_params) {
      const auto [sec, param] = samba_param_section(p);
      if (sec == section) lines += "  " + param + "\n";
    }
    return lines.empty() ? lines : "  # lab up --samba\n" + lines;
  };
  auto share = [&](const std::string& name, const std::string& path, bool read_only) {
    out += fmt::format(
        "\n[{}]\n"
        "  path = {}\n"
        "  read only = {}\n"
        "  valid users = {}\n",
        name, path, read_only ? "yes" : "no", s.share_user);
    out += params_of(name);
  };
  out += params_of("");
  share("ram", f.ram_share, false);
  share("disk", f.disk_share, false);
  share(kReadOnlyShare, f.ro_share, true);
  return out;
}

// $0 is a name for ps; $1 share user, $2 ram share, $3 disk share, $4 ro
// share, $5 PAM file, $6 vsftpd.conf, $7 vsftpd output, $8 vsftpd pid file,
// $9 smb.conf, $10 smbd output, $11 smbd pid file, $12 which to start
// ("ftp smb", "ftp" or "smb"). Runs inside the server host's namespaces.
const char* const kServerStartScript =
    "set -e\n"
    "install -d -o \"$1\" -g \"$1\" -m 0755 \"$2\" \"$3\"\n"
    "install -d -o root -g root -m 0755 \"$4\"\n"
    // Only in this host's mount namespace; once.
    "grep -q ' /etc/pam.d/vsftpd ' /proc/self/mountinfo || mount --bind \"$5\" "
    "/etc/pam.d/vsftpd\n"
    "for what in ${12}; do\n"
    "  case \"$what\" in\n"
    "  ftp) setsid -f sh -c 'exec </dev/null >>\"$1\" 2>&1; echo $$ >\"$2\"; exec vsftpd "
    "\"$3\"' cp-lab-ftp \"$7\" \"$8\" \"$6\" ;;\n"
    "  smb) setsid -f sh -c 'exec </dev/null >>\"$1\" 2>&1; echo $$ >\"$2\"; exec smbd "
    "--foreground --no-process-group -s \"$3\"' cp-lab-smb \"${10}\" \"${11}\" \"$9\" "
    ";;\n"
    "  esac\n"
    "done\n";

std::vector<std::string> server_start_argv(const LabState& state, const std::string& which) {
  const ServerFiles f = server_files(state);
  CP_CHECK(state.server.sshd_pid > 0);
  return {"nsenter",
          "-t",
          std::to_string(state.server.sshd_pid),
          "-m",
          "-u",
          "-n",
          "--",
          "sh",
          "-c",
          kServerStartScript,
          "cp-lab-servers",
          state.share_user,
          f.ram_share,
          f.disk_share,
          f.ro_share,
          f.pam_file,
          f.vsftpd_conf,
          f.vsftpd_out,
          f.vsftpd_pid,
          f.smb_conf,
          f.smbd_out,
          f.smbd_pid,
          which};
}

std::string ssh_config_text(const LabState& s) {
  std::string out = fmt::format("# chokepoint lab: ssh -F {} {} (or {})\n", s.ssh_config,
                                s.server.alias, s.client.alias);
  for (const LabHost* h : {&s.server, &s.client}) {
    out += fmt::format(
        "\nHost {}\n"
        "  HostName {}\n"
        "  User {}\n"
        "  IdentityFile {}\n"
        "  IdentitiesOnly yes\n"
        "  UserKnownHostsFile {}\n"
        "  StrictHostKeyChecking yes\n",
        h->alias, h->mgmt_address,
        h == &s.server && server_login_is_user(s) ? s.share_user : std::string("root"), s.identity,
        s.known_hosts);
  }
  return out;
}

std::string known_hosts_text(const LabState& s, std::string_view server_pub,
                             std::string_view client_pub) {
  // "ssh-ed25519 AAAA... comment\n" -> "ssh-ed25519 AAAA..."
  auto key_of = [](std::string_view pub) {
    std::string_view k = pub;
    while (!k.empty() && (k.front() == ' ' || k.front() == '\n')) k.remove_prefix(1);
    const size_t type_end = k.find(' ');
    if (type_end == std::string_view::npos) {
      throw Error(ErrorKind::kIo, fmt::format("'{}' is not an SSH public key", pub),
                  "run `chokepoint lab down` and `lab up` again to regenerate the lab's keys");
    }
    const size_t key_end = k.find_first_of(" \n", type_end + 1);
    return std::string(k.substr(0, key_end));
  };
  return fmt::format("{} {}\n{} {}\n", s.server.mgmt_address, key_of(server_pub),
                     s.client.mgmt_address, key_of(client_pub));
}

}  // namespace cp::lab
