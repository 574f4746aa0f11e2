// The settings of the file servers a host runs that cost throughput, read
// from the config each running server was started with (never running
// anything the config names): vsftpd, proftpd, NFS-Ganesha, and the kernel
// NFS server's exports. The verdict's table of costly settings
// (analysis/costly_settings.h) names them with the evidence that fits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/facts_message.h"

namespace cp::probe {

// A command line as /proc/PID/cmdline holds it: its NUL-separated arguments
// (views into `cmdline`).
std::vector<std::string_view> cmdline_args(std::string_view cmdline);

// vsftpd.conf text: `key=value` lines ('#' comments; vsftpd allows no space
// around '='), keys lower-cased, a later line winning; only the settings the
// verdict reads (kVsftpdSettings in the .cc).
msg::NamedValues parse_vsftpd_conf(std::string_view text);
// The config file on vsftpd's command line (NUL-separated: its first
// argument not starting with '-'; "" = its default /etc/vsftpd.conf), and the
// `-oKEY=VALUE` settings that override the file's, into `overrides`.
std::string vsftpd_config_from_cmdline(std::string_view cmdline, msg::NamedValues* overrides);

// ganesha.conf text: the smallest `MaxRead` and `MaxWrite` any block sets
// (EXPORT, EXPORT_DEFAULTS), as "maxread" and "maxwrite"; '#' comments.
msg::NamedValues parse_ganesha_conf(std::string_view text);
// `-f FILE` on ganesha.nfsd's command line; "" = its default.
std::string ganesha_config_from_cmdline(std::string_view cmdline);

// proftpd.conf text (its Includes expanded: read_proftpd_conf): the settings
// the verdict reads, directives case-insensitive, '#' lines comments:
// "transferrate retr" / "transferrate stor" (KiB/s as written, free bytes
// left out: the tightest any context or user sets for the command),
// "usesendfile" (the last, lower-cased) and "pidfile".
msg::NamedValues parse_proftpd_conf(std::string_view text);
// `path`'s text with each `Include` (a file, a directory's files or a glob;
// relative to the including file's directory) replaced by the text it
// names, up to 8 deep; false with `error` set when one cannot be read.
bool read_proftpd_conf(const std::string& path, std::string* text, std::string* error);
// `-c FILE`, `-cFILE`, `--config FILE` or `--config=FILE` on proftpd's
// command line; "" when it names none (or proftpd rewrote its command line).
std::string proftpd_config_from_cmdline(std::string_view cmdline);

// /proc/fs/nfs/exports text: "sync" = "sync" | "async" (every export the
// same) | "mixed", and "export:PATH" = that export's options.
msg::NamedValues parse_nfs_exports(std::string_view text);

// Each running instance of those servers (in this network namespace first,
// then any other: a server in a container), with its pid, or the kernel's
// exports (knfsd). Several instances of one server are each listed: the
// verdict reads the one serving a sample's connection (CpuSummary::server_pid).
std::vector<msg::ServerConfigFacts> server_config_facts(const std::string& proc_root = "/proc");

}  // namespace cp::probe
