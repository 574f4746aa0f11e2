#!/usr/bin/env bash
# Installs what chokepoint needs to build, test and run its lab on Debian 12.
# Idempotent: only missing packages are installed. Needs root (apt-get).
set -euo pipefail

pkgs=(
  # build
  build-essential cmake pkg-config ninja-build clang-format
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libboost-filesystem1.81-dev libssh-dev libsqlite3-dev libfmt-dev
  libgtest-dev libgmock-dev libssl-dev libxxhash-dev
  # lab: namespaces, shaping, per-host disks, sshd
  iproute2 util-linux e2fsprogs openssh-server openssh-client procps iputils-ping
  # benchmarks: the peer tools we are held against
  iperf3 fio time python3 bonnie++
  # bench/history.sh: times with bc, checkpoints the WAL with the sqlite3 shell
  bc sqlite3
  # the agent message schema test (tests/schema)
  python3-jsonschema
  # protocol drivers (ftp: libcurl, smb: libsmbclient), the lab's FTP/SMB servers,
  # and the peer clients the protocol benchmark is held against
  libcurl4-openssl-dev libsmbclient-dev vsftpd samba smbclient curl
  # bench/files-shares.sh: lftp's mirror is the FTP small-file peer; tcpdump
  # captures the SMB2 requests bench/smb2_count.py counts
  lftp tcpdump
  # the libraries of ProFTPD and Pure-FTPd, which the servers lab test runs
  # (their binaries are unpacked below: Debian lets only one ftp-server in)
  libmemcached11 libmemcachedutil2 libpcre2-posix3 libhiredis0.14 libsodium23
  # nfs driver (libnfs), the lab's NFS server (NFS-Ganesha, user space; rpcbind
  # for NFSv3) and libnfs's own nfs-cp that the protocol benchmark holds it against
  libnfs-dev libnfs-utils nfs-ganesha nfs-ganesha-vfs rpcbind
  # the lab's FTPS certificate
  openssl
  # tune: knobs that need root run through `sudo -n` for a non-root user with a rule
  sudo
  # HTML reports: the test renders them in headless Chromium
  chromium
  # diagnose --push / export --format openmetrics: the test pushes to a real
  # Pushgateway on loopback and lints the text with promtool (from prometheus)
  prometheus-pushgateway prometheus
  # afp driver: libFuzzer + sanitizers for scripts/fuzz-afp.sh (libssl-dev above
  # gives libcrypto; CAST5 comes from libssl3's legacy provider)
  clang libclang-rt-14-dev
  # the static server agent (scripts/build-agents.sh): `file` checks it is static;
  # qemu-user runs the aarch64 build's tests; BusyBox fills the lab's nas profile
  file qemu-user-static busybox-static
  # its aarch64 build: Debian's cross compiler (arm64 libraries below)
  g++-aarch64-linux-gnu binutils-aarch64-linux-gnu
)
# The arm64 -dev packages the aarch64 server agent links statically, through
# multiarch (dpkg --add-architecture arm64 below).
arm64_pkgs=(
  libboost-json1.81-dev:arm64 libfmt-dev:arm64 libxxhash-dev:arm64 libssl-dev:arm64
  libgtest-dev:arm64 libgmock-dev:arm64
)

missing=()
for p in "${pkgs[@]}" "${arm64_pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ProFTPD (with mod_tls from proftpd-mod-crypto) and Pure-FTPd for
# lib/transfer/servers_lab_test: both Conflict with
# vsftpd (all Provide ftp-server) and the lab needs vsftpd, so their Debian 12
# packages are unpacked (not installed) into $ftpd_root; the test runs the
# binaries from there with its own configuration. Their libraries are above.
ftpd_root=/opt/chokepoint/ftpd
if [ ! -x "$ftpd_root/usr/sbin/proftpd" ] || [ ! -x "$ftpd_root/usr/sbin/pure-ftpd" ] ||
  [ ! -f "$ftpd_root/usr/lib/proftpd/mod_tls.so" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: $ftpd_root missing; run this script as root" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  chmod 755 "$tmp"  # apt's _apt user downloads into it
  (cd "$tmp" && apt-get -o DPkg::Lock::Timeout=600 download -qq proftpd-core proftpd-mod-crypto pure-ftpd)
  mkdir -p "$ftpd_root"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$ftpd_root"; done
  rm -rf "$tmp"
fi
