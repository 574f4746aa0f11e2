// AFP 3.x requests and replies as bytes (Apple's "Apple Filing Protocol
// Reference"; the DSI framing around them is in dsi.h): pure functions over
// byte strings, used by the afp driver, its tests and test peers, and the
// fuzz target. Every decoder is bounds-checked and throws Error(kPeer)
// naming the message and the field on malformed input. Internal to
// lib/transfer.
//
// Conventions: integers are big-endian on the wire; AFP dates are seconds
// since 2000-01-01 UTC; a "path" is an AFP UTF-8 pathname (type 3) whose
// components are separated by NUL bytes, relative to a directory ID.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cp::transfer::afp {

// --- Commands: the first byte of every AFP request ---------------------------
enum Command : uint8_t {
  kFPCloseVol = 2,
  kFPCloseFork = 4,
  kFPCreateDir = 6,
  kFPCreateFile = 7,
  kFPDelete = 8,
  kFPFlush = 10,
  kFPFlushFork = 11,
  kFPGetSrvrInfo = 15,
  kFPGetSrvrParms = 16,
  kFPLogin = 18,
  kFPLoginCont = 19,
  kFPLogout = 20,
  kFPOpenVol = 24,
  kFPOpenFork = 26,
  kFPRead = 27,
  kFPWrite = 33,
  kFPGetFileDirParms = 34,
  kFPSetFileDirParms = 35,
  kFPGetSrvrMsg = 38,
  kFPReadExt = 60,
  kFPWriteExt = 61,
  kFPEnumerateExt2 = 68,
};
// "FPReadExt"; "AFP command 99" for one this codec does not know.
std::string command_name(uint8_t command);

// --- Result codes: the DSI error code of a reply -----------------------------
constexpr int32_t kNoErr = 0;
constexpr int32_t kFPAccessDenied = -5000;
constexpr int32_t kFPAuthContinue = -5001;
constexpr int32_t kFPBadUAM = -5002;
constexpr int32_t kFPBadVersNum = -5003;
constexpr int32_t kFPBitmapErr = -5004;
constexpr int32_t kFPDenyConflict = -5006;
constexpr int32_t kFPDirNotEmpty = -5007;
constexpr int32_t kFPDiskFull = -5008;
constexpr int32_t kFPEOFErr = -5009;
constexpr int32_t kFPFileBusy = -5010;
constexpr int32_t kFPItemNotFound = -5012;
constexpr int32_t kFPLockErr = -5013;
constexpr int32_t kFPMiscErr = -5014;
constexpr int32_t kFPObjectExists = -5017;
constexpr int32_t kFPObjectNotFound = -5018;
constexpr int32_t kFPParamErr = -5019;
constexpr int32_t kFPSessClosed = -5022;
constexpr int32_t kFPUserNotAuth = -5023;
constexpr int32_t kFPCallNotSupported = -5024;
constexpr int32_t kFPObjectTypeErr = -5025;
constexpr int32_t kFPTooManyFilesOpen = -5026;
constexpr int32_t kFPServerGoingDown = -5027;
constexpr int32_t kFPDirNotFound = -5029;
constexpr int32_t kFPVolLocked = -5031;
constexpr int32_t kFPObjectLocked = -5032;
constexpr int32_t kFPPwdExpiredErr = -5042;
constexpr int32_t kFPPwdNeedsChangeErr = -5045;
constexpr int32_t kFPDiskQuotaExceeded = -5047;
// "kFPObjectNotFound (-5018)"; "AFP error -4999" for an unknown code.
std::string result_name(int32_t code);

// --- Bounds-checked big-endian reader and writer ------------------------------
// Reads fields of one message; any read past the end throws Error(kPeer)
// "<what>: field '<field>' ... ".
class Reader {
 public:
  Reader(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}
  uint8_t u8(const char* field);
  uint16_t u16(const char* field);
  uint32_t u32(const char* field);
  uint64_t u64(const char* field);
  std::string_view bytes(size_t n, const char* field);
  // A 1-byte length then that many bytes.
  std::string pascal(const char* field);
  // A 2-byte length then that many bytes (AFP UTF-8 names, server messages).
  std::string long_string(const char* field);
  void skip(size_t n, const char* field) { bytes(n, field); }
  // Skips a pad byte when the position is odd (AFP aligns some fields to
  // even offsets from the start of the message).
  void align2(const char* field);
  // A reader over data[offset..] for offset fields (names inside a
  // parameter block); throws when offset is past the end.
  Reader at(size_t offset, const char* field) const;
  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  std::string_view rest() const { return data_.substr(pos_); }
  const std::string& what() const { return what_; }
  [[noreturn]] void fail(const char* field, std::string_view why) const;

 private:
  std::string_view data_;
  size_t pos_ = 0;
  std::string what_;
};

class Writer {
 public:
  Writer& u8(uint8_t v);
  Writer& u16(uint16_t v);
  Writer& u32(uint32_t v);
  Writer& u64(uint64_t v);
  Writer& bytes(std::string_view b);
  // Throws Error(kConfig) naming `field` when longer than 255 bytes.
  Writer& pascal(std::string_view s, const char* field);
  Writer& long_string(std::string_view s, const char* field);
  // Appends a zero byte when the size is odd.
  Writer& pad_even();
  size_t size() const { return out_.size(); }
  std::string& str() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// A field list written once for both directions: `template <class IO>
// void fields(IO& io, T& t)` calls io(t.x, "field") per fixed field; Get
// reads each into t, Put appends each from t.
// as<N>(x, f): a field N wide on the wire held in a wider x (FPRead's 32-bit
// offset in a 64-bit one); pascal: a Pascal string.
struct Get {
  Reader& r;
  void operator()(uint8_t& x, const char* field) { x = r.u8(field); }
  void operator()(uint16_t& x, const char* field) { x = r.u16(field); }
  void operator()(uint32_t& x, const char* field) { x = r.u32(field); }
  void operator()(uint64_t& x, const char* field) { x = r.u64(field); }
  template <size_t N>
  void operator()(std::array<uint8_t, N>& x, const char* field) {
    const std::string_view b = r.bytes(N, field);
    std::copy(b.begin(), b.end(), x.begin());
  }
  template <class N, class X>
  void as(X& x, const char* field) {
    N n{};
    (*this)(n, field);
    x = n;
  }
  void pascal(std::string& s, const char* field) { s = r.pascal(field); }
};
struct Put {
  Writer& w;
  void operator()(uint8_t x, const char*) { w.u8(x); }
  void operator()(uint16_t x, const char*) { w.u16(x); }
  void operator()(uint32_t x, const char*) { w.u32(x); }
  void operator()(uint64_t x, const char*) { w.u64(x); }
  template <size_t N>
  void operator()(const std::array<uint8_t, N>& x, const char*) {
    w.bytes(std::string_view(reinterpret_cast<const char*>(x.data()), N));
  }
  template <class N, class X>
  void as(X x, const char* field) {
    (*this)(static_cast<N>(x), field);
  }
  void pascal(std::string_view s, const char* field) { w.pascal(s, field); }
};
// A message decoded (`what` names it in errors) or encoded through its field
// list `fields(io, t)`, a generic lambda or function object.
template <class T, class Fields>
T read_fields(std::string_view bytes, std::string what, Fields fields) {
  Reader r(bytes, std::move(what));
  Get get{r};
  T t;
  fields(get, t);
  return t;
}
template <class T, class Fields>
std::string write_fields(const T& t, Fields fields) {
  Writer w;
  Put put{w};
  fields(put, t);
  return w.take();
}

// --- Versions ---------------------------------------------------------------
// AFP version strings chokepoint speaks, best first: "AFP3.4" .. "AFPX03" (3.0).
const std::vector<std::string>& supported_versions();
// The best version in both lists, or nullopt (the server speaks only AFP 2.x).
std::optional<std::string> choose_version(const std::vector<std::string>& server_versions);

// --- FPGetSrvrInfo (the DSIGetStatus reply) ---------------------------------
// Server flag bits.
constexpr uint16_t kSrvrSupportsSrvrSig = 1 << 4;
constexpr uint16_t kSrvrSupportsTCP = 1 << 5;
constexpr uint16_t kSrvrSupportsDirServices = 1 << 8;
constexpr uint16_t kSrvrSupportsUTF8Name = 1 << 9;

struct ServerInfo {
  std::string machine_type;  // "Netatalk4.4.0"
  std::vector<std::string> versions;
  std::vector<std::string> uams;
  uint16_t flags = 0;
  std::string server_name;       // Mac Roman name, ASCII in practice
  std::string utf8_server_name;  // when flags has kSrvrSupportsUTF8Name
  std::array<uint8_t, 16> signature{};
  std::vector<std::string> addresses;  // raw network address entries (type byte + address)
};
ServerInfo decode_server_info(std::string_view reply);
// The layout netatalk writes (offsets block, name, machine type, versions,
// UAMs, signature, addresses, UTF-8 name); for test peers.
std::string encode_server_info(const ServerInfo& info);

// --- Paths --------------------------------------------------------------------
// "run-1/a.dat" -> "run-1\0a.dat". The path must have passed
// check_relative_path (share_url.h); an empty string is the directory itself.
std::string to_afp_path(std::string_view rel);
// The text-encoding hint clients send with UTF-8 pathnames (as afpcmd does).
constexpr uint32_t kUtf8PathHint = 0x08000103;

// --- Bitmaps ----------------------------------------------------------------
// Volume parameters (FPOpenVol).
constexpr uint16_t kVolAttributes = 1 << 0, kVolSignature = 1 << 1, kVolCreateDate = 1 << 2,
                   kVolModDate = 1 << 3, kVolBackupDate = 1 << 4, kVolID = 1 << 5,
                   kVolBytesFree = 1 << 6, kVolBytesTotal = 1 << 7, kVolName = 1 << 8,
                   kVolExtBytesFree = 1 << 9, kVolExtBytesTotal = 1 << 10, kVolBlockSize = 1 << 11;
// File and directory parameters (FPGetFileDirParms, FPOpenFork, FPEnumerateExt2).
constexpr uint16_t kAttributes = 1 << 0, kParentDirID = 1 << 1, kCreateDate = 1 << 2,
                   kModDate = 1 << 3, kBackupDate = 1 << 4, kFinderInfo = 1 << 5,
                   kLongName = 1 << 6, kShortName = 1 << 7, kNodeID = 1 << 8, kUTF8Name = 1 << 13,
                   kUnixPrivs = 1 << 15;
// File only.
constexpr uint16_t kDataForkLen = 1 << 9, kRsrcForkLen = 1 << 10, kExtDataForkLen = 1 << 11,
                   kLaunchLimit = 1 << 12, kExtRsrcForkLen = 1 << 14;
// Directory only (bit 8, kNodeID, is the directory ID).
constexpr uint16_t kOffspringCount = 1 << 9, kOwnerID = 1 << 10, kGroupID = 1 << 11,
                   kAccessRights = 1 << 12;

// FPOpenFork access modes.
constexpr uint16_t kAccessRead = 0x01, kAccessWrite = 0x02, kDenyRead = 0x10, kDenyWrite = 0x20;
// The root directory's ID on every volume.
constexpr uint32_t kRootDirID = 2;

struct UnixPrivs {
  uint32_t uid = 0, gid = 0, mode = 0, access_rights = 0;
};

// File or directory parameters; which fields are meaningful is given by the
// bitmap they were decoded with.
struct Params {
  bool is_dir = false;
  uint16_t attributes = 0;
  uint32_t parent_id = 0;
  uint32_t create_date = 0, mod_date = 0, backup_date = 0;
  std::array<uint8_t, 32> finder_info{};
  std::string long_name, short_name, utf8_name;
  uint32_t node_id = 0;  // file ID, or the directory ID
  uint32_t data_fork_len = 0, rsrc_fork_len = 0;
  uint64_t ext_data_fork_len = 0, ext_rsrc_fork_len = 0;
  uint16_t launch_limit = 0;
  uint16_t offspring_count = 0;
  uint32_t owner_id = 0, group_id = 0, access_rights = 0;
  UnixPrivs unix_privs;
};
// Reads a parameter block laid out by `bitmap` (file or directory bits);
// names are at offsets from the block's start. Throws on bits that do not
// exist for that kind.
Params decode_params(Reader& r, uint16_t bitmap, bool is_dir);
// Appends a parameter block for `bitmap` (names after the fixed part).
void encode_params(Writer& w, uint16_t bitmap, const Params& p);

struct VolParams {
  uint16_t bitmap = 0;
  uint16_t attributes = 0, signature = 0;
  uint32_t create_date = 0, mod_date = 0, backup_date = 0;
  uint16_t volume_id = 0;
  uint32_t bytes_free = 0, bytes_total = 0;
  std::string name;
  uint64_t ext_bytes_free = 0, ext_bytes_total = 0;
  uint32_t block_size = 0;
};

// --- Requests (client -> server) ---------------------------------------------
// FPLogin: version, UAM, then the UAM's bytes: when `user` is set, a
// Pascal user name; when `auth` follows, a pad to an even offset then
// `auth` (the even-offset rule netatalk's UAMs apply).
std::string encode_login(std::string_view version, std::string_view uam, const std::string* user,
                         std::string_view auth);
std::string encode_login_cont(std::string_view data);
std::string encode_get_srvr_parms();
std::string encode_get_srvr_msg(uint16_t type, uint16_t bitmap);
std::string encode_open_vol(uint16_t bitmap, std::string_view name);
std::string encode_close_vol(uint16_t volume);
std::string encode_get_file_dir_parms(uint16_t volume, uint32_t dir, uint16_t file_bitmap,
                                      uint16_t dir_bitmap, std::string_view path);
std::string encode_set_file_dir_parms(uint16_t volume, uint32_t dir, uint16_t bitmap,
                                      std::string_view path, std::string_view params);
std::string encode_enumerate_ext2(uint16_t volume, uint32_t dir, uint16_t file_bitmap,
                                  uint16_t dir_bitmap, uint16_t count, uint32_t start_index,
                                  uint32_t max_reply, std::string_view path);
// hard: replace an existing file (truncate); soft: fail with kFPObjectExists.
std::string encode_create_file(uint16_t volume, uint32_t dir, bool hard, std::string_view path);
std::string encode_delete(uint16_t volume, uint32_t dir, std::string_view path);
// FPCreateDir: a directory `path` below `dir`; its reply is the new
// directory's ID (decode_create_dir).
std::string encode_create_dir(uint16_t volume, uint32_t dir, std::string_view path);
std::string encode_open_fork(uint16_t volume, uint32_t dir, uint16_t bitmap, uint16_t access,
                             std::string_view path, bool resource_fork = false);
std::string encode_read_ext(uint16_t fork, uint64_t offset, uint64_t count);
std::string encode_read(uint16_t fork, uint32_t offset, uint32_t count);
// The 20-byte FPWriteExt header sent with DSIWrite (the data follows it).
std::string encode_write_ext_header(uint16_t fork, uint64_t offset, uint64_t count);
std::string encode_write_header(uint16_t fork, uint32_t offset, uint32_t count);
std::string encode_flush_fork(uint16_t fork);
std::string encode_close_fork(uint16_t fork);
std::string encode_flush(uint16_t volume);
std::string encode_logout();

// A decoded request, flat: which fields are set depends on `command`.
struct Request {
  uint8_t command = 0;
  uint8_t flag = 0;  // the byte after the command: pad, or a flag (hard create, resource fork)
  uint16_t volume = 0;
  uint32_t dir = 0;
  uint16_t fork = 0;
  uint16_t bitmap = 0;       // volume/fork bitmap; FPSetFileDirParms' bitmap
  uint16_t file_bitmap = 0;  // FPGetFileDirParms, FPEnumerateExt2
  uint16_t dir_bitmap = 0;
  uint16_t access = 0;  // FPOpenFork
  uint64_t offset = 0, count = 0;
  uint16_t req_count = 0;  // FPEnumerateExt2
  uint32_t start_index = 0, max_reply = 0;
  uint16_t msg_type = 0;
  std::string name{};  // volume name, or the path (NUL-separated components)
  uint8_t path_type = 0;
  std::string version{}, uam{};  // FPLogin
  size_t auth_offset = 0;        // FPLogin: where the UAM's bytes start; FPLoginCont: 2
  std::string_view auth{};       // FPLogin/FPLoginCont: the UAM's bytes (into the input)
  std::string_view params{};     // FPSetFileDirParms: the parameter block (into the input)
  size_t data_offset = 0;        // FPWriteExt/FPWrite: where the data starts
};
// Decodes the AFP part of a DSICommand or DSIWrite payload. The views in
// the result point into `afp`. Unknown commands decode to just `command`.
Request decode_request(std::string_view afp);

// --- Replies (server -> client) ---------------------------------------------
struct SrvrParms {
  uint32_t server_time = 0;
  struct Volume {
    uint8_t flags = 0;  // bit 7: has a password; bit 6: has Apple II config info
    std::string name;
  };
  std::vector<Volume> volumes;
};
SrvrParms decode_srvr_parms(std::string_view reply);
std::string encode_srvr_parms(const SrvrParms& p);

VolParams decode_open_vol(std::string_view reply);
std::string encode_vol_params(const VolParams& p);

struct FileDirParms {
  uint16_t file_bitmap = 0, dir_bitmap = 0;
  Params params;  // params.is_dir says which bitmap applied
};
FileDirParms decode_file_dir_parms(std::string_view reply);
std::string encode_file_dir_parms(uint16_t file_bitmap, uint16_t dir_bitmap, const Params& p);

struct OpenForkReply {
  uint16_t bitmap = 0;
  uint16_t fork = 0;
  Params params;
};
OpenForkReply decode_open_fork(std::string_view reply);
std::string encode_open_fork_reply(uint16_t bitmap, uint16_t fork, const Params& p);

// FPWriteExt: the offset just past the last byte written.
uint64_t decode_write_ext(std::string_view reply);
uint32_t decode_create_dir(std::string_view reply);
uint32_t decode_write(std::string_view reply);

struct EnumerateReply {
  uint16_t file_bitmap = 0, dir_bitmap = 0;
  std::vector<Params> entries;
};
EnumerateReply decode_enumerate_ext2(std::string_view reply);

struct SrvrMsg {
  uint16_t type = 0, bitmap = 0;
  std::string message;
};
SrvrMsg decode_srvr_msg(std::string_view reply);

// The user bytes of a DSIAttention (the 2-byte AFP attention code).
struct Attention {
  bool shutdown = false;      // bit 15: the server is shutting down
  bool crashed = false;       // bit 14: the server crashed
  bool message = false;       // bit 13: a server message waits (FPGetSrvrMsg)
  bool no_reconnect = false;  // bit 12
  uint16_t minutes = 0;       // low 12 bits: minutes until shutdown
};
Attention decode_attention(std::string_view payload);

// Decodes the reply to `command` (any of the above; commands with empty
// replies check emptiness). For the fuzz target and capture tests.
void decode_reply(uint8_t command, std::string_view reply);

}  // namespace cp::transfer::afp
