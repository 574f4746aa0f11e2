#include "app/generate.h"

#include <fmt/format.h>

#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "app/command_table.h"
#include "app/run_status.h"
#include "core/error.h"
#include "core/text.h"
#include "core/version.h"
#include "tune_agent/knobs.h"

namespace cp::embedded {
extern const std::string_view completion_bash;  // lib/app/completion.bash
}  // namespace cp::embedded

namespace cp::app {

namespace {

// std::cout into a string while alive (the commands print --help there).
class CoutToString {
 public:
  CoutToString() : old_(std::cout.rdbuf(buf_.rdbuf())) {}
  ~CoutToString() { std::cout.rdbuf(old_); }
  std::string str() const { return buf_.str(); }

 private:
  std::ostringstream buf_;
  std::streambuf* old_;
};

// Every `--name` a help text mentions, in order of first mention.
std::vector<std::string> long_options_in(const std::string& text) {
  static const std::regex opt("(^|[^\\w-])--([a-z][a-z0-9-]*)");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::sregex_iterator it(text.begin(), text.end(), opt), e; it != e; ++it) {
    if (seen.insert((*it)[2]).second) out.push_back((*it)[2]);
  }
  return out;
}

// roff-safe text: backslashes escaped, every '-' a minus (so options copy
// and paste as typed), a leading '.' or '\'' kept from being a request.
std::string roff(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  return out;
}

std::string roff_line(const std::string& s) {
  const std::string r = roff(s);
  return (!r.empty() && (r[0] == '.' || r[0] == '\'')) ? "\\&" + r : r;
}

// Preformatted text (a command's own help where it has no option table).
std::string roff_block(const std::string& text) {
  std::string out = ".RS\n.nf\n";
  for (std::string_view line : split(text, '\n')) out += roff_line(std::string(line)) + "\n";
  return out + ".fi\n.RE\n";
}

std::string option_flags(const OptionHelp& o) {
  std::string flags;
  if (!o.short_name.empty()) flags = "\\fB\\-" + roff(o.short_name) + "\\fR";
  if (!o.long_name.empty()) {
    flags += (flags.empty() ? "" : ", ") + std::string("\\fB\\-\\-") + roff(o.long_name) + "\\fR";
  }
  if (!o.param.empty()) flags += " \\fI" + roff(o.param) + "\\fR";
  return flags;
}

// A command's section: its summary, the prose of its caption (after the
// usage line), then each option; a command without an option table (lab,
// drivers, version) shows its --help as it prints it.
std::string man_command(const CommandDoc& c) {
  std::string out =
      fmt::format(".SS \"{}\"\n",
                  roff(fmt::format("chokepoint {}{}", c.name, c.args.empty() ? "" : " " + c.args)));
  out += roff_line(c.summary) + ".\n";
  if (c.options.options.empty()) {
    out += ".PP\n" + roff_block(std::string(trim(c.help_text)));
    return out;
  }
  const std::string_view cap = c.options.caption;
  const size_t nl = cap.find('\n');
  if (nl != std::string_view::npos && !trim(cap.substr(nl)).empty()) {
    out += ".PP\n" + roff_line(std::string(trim(cap.substr(nl)))) + "\n";
  }
  for (const OptionHelp& o : c.options.options) {
    out += ".TP\n" + option_flags(o) + "\n" + roff_line(o.text) + "\n";
  }
  return out;
}

constexpr const char* kManTail = R"(.SH EXIT STATUS
.B diagnose
exits with its run's status:
.TP
.B 0
complete: every stage ran and every sample succeeded.
.TP
.B 3
partial: some stages or samples failed, the rest give a verdict; the report names what failed.
.TP
.B 1
failed: no verdict, or the run could not start (SSH, deployment, a plan it cannot use).
.TP
.B 130
interrupted by SIGINT, SIGTERM or SIGHUP; the samples measured so far stay in the database.
.TP
.B 2
a usage error (a bad option or argument, no database at the \-\-db path, no run with that id or
label), or \-\-lab with no lab up; nothing is stored.
.PP
Every other command exits 0 on success, 2 on a usage error and 1 otherwise;
.B lab status
also exits 3 when no lab is up and 4 when it is unhealthy.
.SH FILES
.TP
.I $XDG_DATA_HOME/chokepoint/chokepoint.db
the database of runs and tune sessions (default
.IR ~/.local/share/chokepoint/chokepoint.db ;
\-\-db picks another).
.TP
.I ~/.cache/chokepoint/
on each remote host ($XDG_CACHE_HOME there): the uploaded agents, named after their SHA\-256.
.TP
.I $XDG_STATE_HOME/chokepoint/tune\-journal\-HOST.json
on each host a knob was changed on (default
.IR ~/.local/state/chokepoint/ ):
the original values \fBtune\fR restores, even after a killed session (\fBtune \-\-revert\fR).
.TP
.I PREFIX/libexec/chokepoint/
the agents: chokepoint\-agent (the full agent, run on the client) and
chokepoint\-agent\-server\-ARCH (the static server agents, by the server's uname \-m);
looked for there, then beside the chokepoint binary, then in $CHOKEPOINT_AGENT_DIR.
.TP
.I /var/lib/chokepoint\-lab
the lab's state (instance N: /var/lib/chokepoint\-lab\-N).
.SH ENVIRONMENT
.TP
.B XDG_DATA_HOME
where the database lives (default ~/.local/share).
.TP
.B XDG_STATE_HOME
where the tune journal lives (default ~/.local/state).
.TP
.B CHOKEPOINT_AGENT
the full agent to run and upload instead of the installed one.
.TP
.B CHOKEPOINT_AGENT_DIR
a directory searched last for chokepoint\-agent and chokepoint\-agent\-server\-ARCH.
.TP
.B CHOKEPOINT_LAB_INSTANCE
the lab instance (0\-99) that \fBlab\fR and \fBdiagnose \-\-lab\fR use when no \-\-instance is given.
.TP
.B CHOKEPOINT_LAB_DIR
the lab's state directory instead of /var/lib/chokepoint\-lab.
.SH EXAMPLES
.nf
chokepoint diagnose \-\-server nas \-\-client local \-\-label before
chokepoint diagnose \-\-server nas \-\-client laptop \-\-plan /usr/share/doc/chokepoint/nas.ini
chokepoint diagnose \-\-server nas \-\-client local \-\-dry\-run
chokepoint history \-\-since 7d
chokepoint show latest \-\-html report.html
chokepoint compare before after
chokepoint tune \-\-server nas \-\-client local \-\-knob server.readahead=128K,1M,4M
chokepoint export latest \-\-format json \-o run.json
.fi
.SH SEE ALSO
.BR ssh (1),
.BR ssh_config (5).
The manual: README.md and docs/ in the source (plan file, verdict rules, drivers, tuning, the lab).
)";

}  // namespace

std::vector<CommandDoc> command_docs() {
  std::vector<CommandDoc> docs;
  for (const Command& c : command_table()) {
    CommandDoc d{c.name, c.args, c.help, "", {}, {}};
    {
      CoutToString out;
      HelpCapture capture(&d.options);
      c.run({"--help"});
      d.help_text = out.str();
    }
    if (d.args.find('|') != std::string::npos) {
      for (std::string_view s : split(d.args, '|')) d.subcommands.emplace_back(s);
    }
    docs.push_back(std::move(d));
  }
  return docs;
}

std::string man_page() {
  const std::vector<CommandDoc> docs = command_docs();
  std::string out = fmt::format(
      ".TH CHOKEPOINT 1 \"\" \"chokepoint {}\" \"User Commands\"\n"
      ".SH NAME\nchokepoint \\- which layer caps file\\-transfer throughput: disk, network, TCP, "
      "the file\\-sharing protocol or a CPU\n"
      ".SH SYNOPSIS\n.B chokepoint\n.I command\n[\\fIoptions\\fR]\n.br\n"
      ".B chokepoint\n\\fIcommand\\fR \\fB\\-\\-help\\fR\n"
      ".SH DESCRIPTION\n"
      "\\fBchokepoint diagnose\\fR SSHes into a file server and its client, deploys a small agent "
      "on each, and measures bottom layer first: each end's local disk, RAM\\-to\\-RAM TCP both "
      "ways, then each file\\-sharing protocol (FTP, SMB, AFP, NFS, or a mounted filesystem) from "
      "the server's RAM and from its disk to the client's RAM. Every sample goes into SQLite as it "
      "completes; the report holds each layer against the layer beneath it and names the layer "
      "that caps each path.\n"
      ".SH COMMANDS\n",
      roff(kVersion));
  for (const CommandDoc& c : docs) out += man_command(c);
  return out + kManTail;
}

std::string bash_completion() {
  const std::vector<CommandDoc> docs = command_docs();
  std::string commands, cases, subs;
  for (const CommandDoc& c : docs) {
    commands += (commands.empty() ? "" : " ") + c.name;
    std::vector<std::string> opts;
    if (c.options.options.empty()) {
      // A hand-written help (lab's): its usage block, up to the first blank
      // line, names every option of every subcommand.
      opts = long_options_in(c.help_text.substr(0, c.help_text.find("\n\n")));
    } else {
      for (const OptionHelp& o : c.options.options) opts.push_back(o.long_name);
    }
    std::string words;
    for (const auto& o : opts) words += (words.empty() ? "--" : " --") + o;
    for (const OptionHelp& o : c.options.options) {
      if (!o.short_name.empty()) words += " -" + o.short_name;
    }
    cases += fmt::format("    {}) opts='{}' ;;\n", c.name, words);
    if (!c.subcommands.empty()) {
      std::string s;
      for (const auto& x : c.subcommands) s += (s.empty() ? "" : " ") + x;
      subs += fmt::format("    {}) subs='{}' ;;\n", c.name, s);
    }
  }
  std::string knobs;
  for (const tune::Knob& k : tune::knob_table()) knobs += (knobs.empty() ? "" : " ") + k.name;
  std::string out(embedded::completion_bash);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"@VERSION@", kVersion},
                                   {"@COMMANDS@", commands},
                                   {"@OPTIONS@", cases},
                                   {"@SUBCOMMANDS@", subs},
                                   {"@KNOBS@", knobs}}) {
    const size_t at = out.find(key);
    if (at != std::string::npos) out.replace(at, key.size(), value);
  }
  return out;
}

int generate_command(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "man") {
    std::cout << man_page();
    return 0;
  }
  if (args.size() == 1 && args[0] == "bash-completion") {
    std::cout << bash_completion();
    return 0;
  }
  throw Error(ErrorKind::kUsage, "--generate takes one of: man, bash-completion",
              "the build runs `chokepoint --generate man` and `--generate bash-completion`");
}

}  // namespace cp::app
