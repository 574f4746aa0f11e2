// The text a knob edits or parses: Samba's drop-in and include line,
// netatalk's afp.conf, the output of `ip -o`. Pure functions.
#include <fmt/format.h>

#include <cctype>
#include <sstream>

#include "core/text.h"
#include "tune_agent/apply.h"
#include "tune_agent/detail.h"

namespace cp::tune {

std::string parse_addr_ifname(const std::string& out) {
  // "3: cpd-s    inet 198.19.6.1/24 ..." (the name may carry "@peer").
  std::istringstream in(out);
  std::string index, name;
  if (!(in >> index >> name)) return {};
  return name.substr(0, name.find('@'));
}

std::string parse_route_dev(const std::string& out) {
  std::istringstream in(out);
  for (std::string w; in >> w;) {
    if (w == "dev") {
      std::string dev;
      in >> dev;
      return dev;
    }
  }
  return {};
}

int parse_link_mtu(const std::string& out) {
  std::istringstream in(out);
  for (std::string w; in >> w;) {
    if (w == "mtu") {
      int mtu = 0;
      in >> mtu;
      return mtu;
    }
  }
  return 0;
}

std::string ssh_local_address(const char* ssh_connection) {
  if (!ssh_connection) return {};
  std::istringstream in(ssh_connection);
  std::string cip, cport, sip;
  if (!(in >> cip >> cport >> sip)) return {};
  return sip;
}

std::string merge_samba_dropin(const std::string& old, const std::string& param,
                               const std::string& value) {
  static const std::string kHeader = "# written by chokepoint tune; removed when it reverts";
  std::vector<std::pair<std::string, std::string>> params;
  if (old.rfind(kHeader, 0) == 0) {
    std::stringstream in(old);
    for (std::string l; std::getline(in, l);) {
      const size_t eq = l.find('=');
      if (eq == std::string::npos || trim(l).rfind('#', 0) == 0) continue;
      params.emplace_back(trim(l.substr(0, eq)), trim(l.substr(eq + 1)));
    }
  }
  auto same = [](const std::string& a, const std::string& b) {
    std::string x = squeeze_ws(a), y = squeeze_ws(b);
    for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : y) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x == y;
  };
  bool found = false;
  for (auto& [p, v] : params) {
    if (same(p, param)) {
      v = value;
      found = true;
    }
  }
  if (!found) params.emplace_back(param, value);
  std::string out = kHeader + "\n[global]\n";
  for (const auto& [p, v] : params) out += fmt::format("\t{} = {}\n", p, v);
  return out;
}

std::string set_afp_param(const std::string& conf, const std::string& param,
                          const std::string& value, std::string* current) {
  std::vector<std::string> lines;
  std::stringstream in(conf);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  auto lower = [](std::string x) {
    for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return squeeze_ws(x);
  };
  const std::string want = lower(param);
  long global = -1, end = static_cast<long>(lines.size()), at = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t(trim(lines[i]));
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
      if (global >= 0) {
        end = static_cast<long>(i);
        break;
      }
      if (lower(t.substr(1, t.size() - 2)) == "global") global = static_cast<long>(i);
      continue;
    }
    if (global < 0 || t.empty() || t.front() == '#' || t.front() == ';') continue;
    const size_t eq = t.find('=');
    if (eq != std::string::npos && lower(t.substr(0, eq)) == want) {
      at = static_cast<long>(i);
      if (current) *current = trim(t.substr(eq + 1));
    }
  }
  if (at < 0 && current) current->clear();
  const std::string line = param + " = " + value;
  if (at >= 0) {
    lines[static_cast<size_t>(at)] = line;
  } else if (global < 0) {
    lines.insert(lines.begin(), {"[Global]", line});
  } else {
    long pos = end;
    while (pos - 1 > global && trim(lines[static_cast<size_t>(pos - 1)]).empty()) --pos;
    lines.insert(lines.begin() + pos, line);
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string add_samba_include(const std::string& conf, const std::string& dropin) {
  const std::string line = "include = " + dropin;
  // Split into lines, keeping whether the text ended with a newline.
  std::vector<std::string> lines;
  std::stringstream in(conf);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (const auto& l : lines) {
    if (squeeze_ws(l) == squeeze_ws(line)) return conf;
  }
  auto section_of = [](const std::string& l) -> std::string {
    const std::string t(trim(l));
    if (t.size() < 2 || t.front() != '[' || t.back() != ']') return {};
    std::string name = t.substr(1, t.size() - 2);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return std::string(trim(name));
  };
  // The include goes last in [global], so it overrides earlier global lines.
  long global = -1, end = static_cast<long>(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string s = section_of(lines[i]);
    if (s.empty()) continue;
    if (global < 0 && s == "global") {
      global = static_cast<long>(i);
    } else if (global >= 0) {
      end = static_cast<long>(i);
      break;
    }
  }
  if (global < 0) {
    lines.insert(lines.begin(), {"[global]", "\t" + line});
  } else {
    // Before the blank lines that close the section.
    long at = end;
    while (at - 1 > global && trim(lines[static_cast<size_t>(at - 1)]).empty()) --at;
    lines.insert(lines.begin() + at, "\t" + line);
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace cp::tune
