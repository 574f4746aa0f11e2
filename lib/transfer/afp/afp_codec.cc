#include "transfer/afp/afp_codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace cp::transfer::afp {
namespace {

struct Name {
  int code;
  const char* name;
};

constexpr Name kCommandNames[] = {
    {kFPCloseVol, "FPCloseVol"},
    {kFPCloseFork, "FPCloseFork"},
    {kFPCreateDir, "FPCreateDir"},
    {kFPCreateFile, "FPCreateFile"},
    {kFPDelete, "FPDelete"},
    {kFPFlush, "FPFlush"},
    {kFPFlushFork, "FPFlushFork"},
    {kFPGetSrvrInfo, "FPGetSrvrInfo"},
    {kFPGetSrvrParms, "FPGetSrvrParms"},
    {kFPLogin, "FPLogin"},
    {kFPLoginCont, "FPLoginCont"},
    {kFPLogout, "FPLogout"},
    {kFPOpenVol, "FPOpenVol"},
    {kFPOpenFork, "FPOpenFork"},
    {kFPRead, "FPRead"},
    {kFPWrite, "FPWrite"},
    {kFPGetFileDirParms, "FPGetFileDirParms"},
    {kFPSetFileDirParms, "FPSetFileDirParms"},
    {kFPGetSrvrMsg, "FPGetSrvrMsg"},
    {kFPReadExt, "FPReadExt"},
    {kFPWriteExt, "FPWriteExt"},
    {kFPEnumerateExt2, "FPEnumerateExt2"},
};

constexpr Name kResultNames[] = {
    {kNoErr, "kFPNoErr"},
    {kFPAccessDenied, "kFPAccessDenied"},
    {kFPAuthContinue, "kFPAuthContinue"},
    {kFPBadUAM, "kFPBadUAM"},
    {kFPBadVersNum, "kFPBadVersNum"},
    {kFPBitmapErr, "kFPBitmapErr"},
    {-5005, "kFPCantMove"},
    {kFPDenyConflict, "kFPDenyConflict"},
    {kFPDirNotEmpty, "kFPDirNotEmpty"},
    {kFPDiskFull, "kFPDiskFull"},
    {kFPEOFErr, "kFPEOFErr"},
    {kFPFileBusy, "kFPFileBusy"},
    {-5011, "kFPFlatVol"},
    {kFPItemNotFound, "kFPItemNotFound"},
    {kFPLockErr, "kFPLockErr"},
    {kFPMiscErr, "kFPMiscErr"},
    {-5015, "kFPNoMoreLocks"},
    {-5016, "kFPNoServer"},
    {kFPObjectExists, "kFPObjectExists"},
    {kFPObjectNotFound, "kFPObjectNotFound"},
    {kFPParamErr, "kFPParamErr"},
    {-5020, "kFPRangeNotLocked"},
    {-5021, "kFPRangeOverlap"},
    {kFPSessClosed, "kFPSessClosed"},
    {kFPUserNotAuth, "kFPUserNotAuth"},
    {kFPCallNotSupported, "kFPCallNotSupported"},
    {kFPObjectTypeErr, "kFPObjectTypeErr"},
    {kFPTooManyFilesOpen, "kFPTooManyFilesOpen"},
    {kFPServerGoingDown, "kFPServerGoingDown"},
    {-5028, "kFPCantRename"},
    {kFPDirNotFound, "kFPDirNotFound"},
    {-5030, "kFPIconTypeError"},
    {kFPVolLocked, "kFPVolLocked"},
    {kFPObjectLocked, "kFPObjectLocked"},
    {kFPPwdExpiredErr, "kFPPwdExpiredErr"},
    {kFPPwdNeedsChangeErr, "kFPPwdNeedsChangeErr"},
    {kFPDiskQuotaExceeded, "kFPDiskQuotaExceeded"},
};

}  // namespace

std::string command_name(uint8_t command) {
  for (const auto& n : kCommandNames) {
    if (n.code == command) return n.name;
  }
  return fmt::format("AFP command {}", command);
}

std::string result_name(int32_t code) {
  for (const auto& n : kResultNames) {
    if (n.code == code) return fmt::format("{} ({})", n.name, code);
  }
  return fmt::format("AFP error {}", code);
}

// --- Reader / Writer ----------------------------------------------------------

void Reader::fail(const char* field, std::string_view why) const {
  throw Error(ErrorKind::kPeer, fmt::format("malformed AFP {}: field '{}' {}", what_, field, why),
              "the AFP server sent a message chokepoint cannot parse; if the server is a "
              "real AFP server, report it with a packet capture");
}

std::string_view Reader::bytes(size_t n, const char* field) {
  if (n > remaining()) {
    fail(field, fmt::format("needs {} bytes at offset {}, only {} left", n, pos_, remaining()));
  }
  std::string_view v = data_.substr(pos_, n);
  pos_ += n;
  return v;
}

uint8_t Reader::u8(const char* field) { return static_cast<uint8_t>(bytes(1, field)[0]); }

uint16_t Reader::u16(const char* field) {
  auto b = bytes(2, field);
  return static_cast<uint16_t>((uint8_t(b[0]) << 8) | uint8_t(b[1]));
}

uint32_t Reader::u32(const char* field) {
  auto b = bytes(4, field);
  uint32_t v = 0;
  for (char c : b) v = (v << 8) | uint8_t(c);
  return v;
}

uint64_t Reader::u64(const char* field) {
  auto b = bytes(8, field);
  uint64_t v = 0;
  for (char c : b) v = (v << 8) | uint8_t(c);
  return v;
}

std::string Reader::pascal(const char* field) {
  const uint8_t n = u8(field);
  return std::string(bytes(n, field));
}

std::string Reader::long_string(const char* field) {
  const uint16_t n = u16(field);
  return std::string(bytes(n, field));
}

void Reader::align2(const char* field) {
  if (pos_ % 2) skip(1, field);
}

Reader Reader::at(size_t offset, const char* field) const {
  if (offset > data_.size()) {
    fail(field, fmt::format("offset {} is past the end ({} bytes)", offset, data_.size()));
  }
  Reader r(data_, what_);
  r.pos_ = offset;
  return r;
}

Writer& Writer::u8(uint8_t v) {
  out_ += static_cast<char>(v);
  return *this;
}
Writer& Writer::u16(uint16_t v) { return u8(v >> 8).u8(v & 0xff); }
Writer& Writer::u32(uint32_t v) { return u16(v >> 16).u16(v & 0xffff); }
Writer& Writer::u64(uint64_t v) { return u32(v >> 32).u32(v & 0xffffffff); }
Writer& Writer::bytes(std::string_view b) {
  out_ += b;
  return *this;
}
namespace {
// A string whose length field holds at most `max` (bytes); longer is the
// user's (a name in the plan) to shorten.
void check_length(std::string_view s, size_t max, const char* field) {
  if (s.size() > max) {
    throw Error(ErrorKind::kConfig,
                fmt::format("AFP {} is {} bytes long; AFP allows at most {}", field, s.size(), max),
                fmt::format("use a shorter {}", field));
  }
}
}  // namespace
Writer& Writer::pascal(std::string_view s, const char* field) {
  check_length(s, 255, field);
  return u8(static_cast<uint8_t>(s.size())).bytes(s);
}
Writer& Writer::long_string(std::string_view s, const char* field) {
  check_length(s, 0xffff, field);
  return u16(static_cast<uint16_t>(s.size())).bytes(s);
}
Writer& Writer::pad_even() {
  if (out_.size() % 2) u8(0);
  return *this;
}

// --- Versions -------------------------------------------------------------------

const std::vector<std::string>& supported_versions() {
  static const std::vector<std::string> v = {"AFP3.4", "AFP3.3", "AFP3.2", "AFP3.1", "AFPX03"};
  return v;
}

std::optional<std::string> choose_version(const std::vector<std::string>& server_versions) {
  for (const auto& v : supported_versions()) {
    if (std::find(server_versions.begin(), server_versions.end(), v) != server_versions.end()) {
      return v;
    }
  }
  return std::nullopt;
}

// --- Server info ------------------------------------------------------------------

ServerInfo decode_server_info(std::string_view reply) {
  Reader r(reply, "FPGetSrvrInfo reply");
  ServerInfo info;
  const uint16_t machine_off = r.u16("machine type offset");
  const uint16_t versions_off = r.u16("AFP versions offset");
  const uint16_t uams_off = r.u16("UAMs offset");
  r.u16("volume icon offset");
  info.flags = r.u16("flags");
  info.server_name = r.pascal("server name");
  r.align2("server name pad");
  // netatalk always writes these four offsets; Apple's servers write those
  // their flags announce, in this order.
  uint16_t sig_off = 0, addr_off = 0, utf8_off = 0;
  if (info.flags & (kSrvrSupportsSrvrSig | kSrvrSupportsTCP | kSrvrSupportsDirServices |
                    kSrvrSupportsUTF8Name)) {
    sig_off = r.u16("server signature offset");
  }
  if (info.flags & (kSrvrSupportsTCP | kSrvrSupportsDirServices | kSrvrSupportsUTF8Name)) {
    addr_off = r.u16("network addresses offset");
  }
  if (info.flags & (kSrvrSupportsDirServices | kSrvrSupportsUTF8Name)) {
    r.u16("directory names offset");
  }
  if (info.flags & kSrvrSupportsUTF8Name) utf8_off = r.u16("UTF-8 server name offset");

  info.machine_type = r.at(machine_off, "machine type").pascal("machine type");
  Reader v = r.at(versions_off, "AFP versions");
  for (int n = v.u8("AFP version count"); n > 0; --n)
    info.versions.push_back(v.pascal("AFP version"));
  Reader u = r.at(uams_off, "UAMs");
  for (int n = u.u8("UAM count"); n > 0; --n) info.uams.push_back(u.pascal("UAM name"));
  if ((info.flags & kSrvrSupportsSrvrSig) && sig_off) {
    auto sig = r.at(sig_off, "server signature").bytes(16, "server signature");
    std::copy(sig.begin(), sig.end(), info.signature.begin());
  }
  if ((info.flags & kSrvrSupportsTCP) && addr_off) {
    Reader a = r.at(addr_off, "network addresses");
    for (int n = a.u8("network address count"); n > 0; --n) {
      const uint8_t len = a.u8("network address length");
      if (len < 2) a.fail("network address length", fmt::format("is {}; minimum 2", len));
      info.addresses.emplace_back(a.bytes(len - 1, "network address"));
    }
  }
  if ((info.flags & kSrvrSupportsUTF8Name) && utf8_off) {
    info.utf8_server_name = r.at(utf8_off, "UTF-8 server name").long_string("UTF-8 server name");
  }
  return info;
}

std::string encode_server_info(const ServerInfo& info) {
  // Offsets block and name first, then the variable parts in netatalk's order.
  Writer w;
  w.u16(0).u16(0).u16(0).u16(0).u16(info.flags);
  w.pascal(info.server_name, "server name").pad_even();
  const size_t post = w.size();
  w.u16(0).u16(0).u16(0).u16(0);  // signature, addresses, directory names, UTF-8 name
  auto patch = [&](size_t at, size_t value) {
    w.str()[at] = static_cast<char>(value >> 8);
    w.str()[at + 1] = static_cast<char>(value & 0xff);
  };
  patch(0, w.size());
  w.pascal(info.machine_type, "machine type");
  patch(2, w.size());
  w.u8(static_cast<uint8_t>(info.versions.size()));
  for (const auto& v : info.versions) w.pascal(v, "AFP version");
  patch(4, w.size());
  w.u8(static_cast<uint8_t>(info.uams.size()));
  for (const auto& u : info.uams) w.pascal(u, "UAM name");
  w.pad_even();
  patch(post, w.size());
  w.bytes(std::string_view(reinterpret_cast<const char*>(info.signature.data()), 16));
  patch(post + 2, w.size());
  w.u8(static_cast<uint8_t>(info.addresses.size()));
  for (const auto& a : info.addresses) w.u8(static_cast<uint8_t>(a.size() + 1)).bytes(a);
  patch(post + 4, w.size());
  w.u8(0);  // no directory names
  patch(post + 6, w.size());
  w.long_string(info.utf8_server_name.empty() ? info.server_name : info.utf8_server_name,
                "UTF-8 server name");
  return w.take();
}

// --- Paths ----------------------------------------------------------------------------

std::string to_afp_path(std::string_view rel) {
  std::string out(rel);
  std::replace(out.begin(), out.end(), '/', '\0');
  return out;
}

}  // namespace cp::transfer::afp
