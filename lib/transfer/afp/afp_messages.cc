// The AFP codec's messages: requests (client -> server) encoded and
// decoded, and the replies. Declared in afp_codec.h.
#include "transfer/afp/afp_codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace cp::transfer::afp {
namespace {

void put_path(Writer& w, std::string_view path) {
  w.u8(3).u32(kUtf8PathHint).long_string(path, "path");
}

// Reads a type-3 (UTF-8) or type-2 (long name) pathname.
std::string get_path(Reader& r, uint8_t* type) {
  *type = r.u8("path type");
  switch (*type) {
    case 3:
      r.u32("path text encoding hint");
      return r.long_string("path");
    case 1:
    case 2:
      return r.pascal("path");
  }
  r.fail("path type", fmt::format("is {}; expected 1, 2 or 3", *type));
}

// Every field a request needs to decode; missing ones throw in the reader.
Reader request_reader(std::string_view afp, const char* what) {
  return Reader(afp, fmt::format("{} request", what));
}

}  // namespace

// --- Requests -----------------------------------------------------------------------------

std::string encode_login(std::string_view version, std::string_view uam, const std::string* user,
                         std::string_view auth) {
  Writer w;
  w.u8(kFPLogin).pascal(version, "version").pascal(uam, "UAM name");
  if (user) w.pascal(*user, "user name");
  if (!auth.empty()) w.pad_even().bytes(auth);
  return w.take();
}

std::string encode_login_cont(std::string_view data) {
  return Writer().u8(kFPLoginCont).u8(0).bytes(data).take();
}

std::string encode_get_srvr_parms() { return Writer().u8(kFPGetSrvrParms).take(); }

std::string encode_get_srvr_msg(uint16_t type, uint16_t bitmap) {
  return Writer().u8(kFPGetSrvrMsg).u8(0).u16(type).u16(bitmap).take();
}

std::string encode_open_vol(uint16_t bitmap, std::string_view name) {
  return Writer().u8(kFPOpenVol).u8(0).u16(bitmap).pascal(name, "volume name").take();
}

std::string encode_close_vol(uint16_t volume) {
  return Writer().u8(kFPCloseVol).u8(0).u16(volume).take();
}

std::string encode_get_file_dir_parms(uint16_t volume, uint32_t dir, uint16_t file_bitmap,
                                      uint16_t dir_bitmap, std::string_view path) {
  Writer w;
  w.u8(kFPGetFileDirParms).u8(0).u16(volume).u32(dir).u16(file_bitmap).u16(dir_bitmap);
  put_path(w, path);
  return w.take();
}

std::string encode_set_file_dir_parms(uint16_t volume, uint32_t dir, uint16_t bitmap,
                                      std::string_view path, std::string_view params) {
  Writer w;
  w.u8(kFPSetFileDirParms).u8(0).u16(volume).u32(dir).u16(bitmap);
  put_path(w, path);
  w.pad_even().bytes(params);
  return w.take();
}

std::string encode_enumerate_ext2(uint16_t volume, uint32_t dir, uint16_t file_bitmap,
                                  uint16_t dir_bitmap, uint16_t count, uint32_t start_index,
                                  uint32_t max_reply, std::string_view path) {
  Writer w;
  w.u8(kFPEnumerateExt2).u8(0).u16(volume).u32(dir).u16(file_bitmap).u16(dir_bitmap);
  w.u16(count).u32(start_index).u32(max_reply);
  put_path(w, path);
  return w.take();
}

std::string encode_create_file(uint16_t volume, uint32_t dir, bool hard, std::string_view path) {
  Writer w;
  w.u8(kFPCreateFile).u8(hard ? 0x80 : 0x00).u16(volume).u32(dir);
  put_path(w, path);
  return w.take();
}

std::string encode_create_dir(uint16_t volume, uint32_t dir, std::string_view path) {
  Writer w;
  w.u8(kFPCreateDir).u8(0).u16(volume).u32(dir);
  put_path(w, path);
  return w.take();
}

std::string encode_delete(uint16_t volume, uint32_t dir, std::string_view path) {
  Writer w;
  w.u8(kFPDelete).u8(0).u16(volume).u32(dir);
  put_path(w, path);
  return w.take();
}

std::string encode_open_fork(uint16_t volume, uint32_t dir, uint16_t bitmap, uint16_t access,
                             std::string_view path, bool resource_fork) {
  Writer w;
  w.u8(kFPOpenFork).u8(resource_fork ? 0x80 : 0x00).u16(volume).u32(dir).u16(bitmap).u16(access);
  put_path(w, path);
  return w.take();
}

std::string encode_read_ext(uint16_t fork, uint64_t offset, uint64_t count) {
  return Writer().u8(kFPReadExt).u8(0).u16(fork).u64(offset).u64(count).take();
}

std::string encode_read(uint16_t fork, uint32_t offset, uint32_t count) {
  // Newline mask and character 0: no newline-terminated reads.
  return Writer().u8(kFPRead).u8(0).u16(fork).u32(offset).u32(count).u8(0).u8(0).take();
}

std::string encode_write_ext_header(uint16_t fork, uint64_t offset, uint64_t count) {
  // Flag 0: the offset counts from the start of the fork.
  return Writer().u8(kFPWriteExt).u8(0).u16(fork).u64(offset).u64(count).take();
}

std::string encode_write_header(uint16_t fork, uint32_t offset, uint32_t count) {
  return Writer().u8(kFPWrite).u8(0).u16(fork).u32(offset).u32(count).take();
}

std::string encode_flush_fork(uint16_t fork) {
  return Writer().u8(kFPFlushFork).u8(0).u16(fork).take();
}

std::string encode_close_fork(uint16_t fork) {
  return Writer().u8(kFPCloseFork).u8(0).u16(fork).take();
}

std::string encode_flush(uint16_t volume) { return Writer().u8(kFPFlush).u8(0).u16(volume).take(); }

std::string encode_logout() { return Writer().u8(kFPLogout).u8(0).take(); }

Request decode_request(std::string_view afp) {
  Request q;
  if (afp.empty()) {
    throw Error(ErrorKind::kPeer, "malformed AFP request: empty",
                "a DSICommand must carry at least the AFP command byte");
  }
  q.command = static_cast<uint8_t>(afp[0]);
  Reader r = request_reader(afp, command_name(q.command).c_str());
  r.u8("command");
  switch (q.command) {
    case kFPLogin:
      q.version = r.pascal("version");
      q.uam = r.pascal("UAM name");
      q.auth_offset = r.pos();
      q.auth = r.rest();
      break;
    case kFPLoginCont:
      q.flag = r.u8("pad");
      q.auth_offset = r.pos();
      q.auth = r.rest();
      break;
    case kFPGetSrvrParms:
      break;
    case kFPLogout:
      // Some clients (netatalk's testsuite) send no pad byte.
      if (r.remaining()) q.flag = r.u8("pad");
      break;
    case kFPGetSrvrMsg:
      q.flag = r.u8("pad");
      q.msg_type = r.u16("message type");
      q.bitmap = r.u16("bitmap");
      break;
    case kFPOpenVol:
      q.flag = r.u8("pad");
      q.bitmap = r.u16("bitmap");
      q.name = r.pascal("volume name");
      break;
    case kFPCloseVol:
    case kFPFlush:
      q.flag = r.u8("pad");
      q.volume = r.u16("volume ID");
      break;
    case kFPGetFileDirParms:
      q.flag = r.u8("pad");
      q.volume = r.u16("volume ID");
      q.dir = r.u32("directory ID");
      q.file_bitmap = r.u16("file bitmap");
      q.dir_bitmap = r.u16("directory bitmap");
      q.name = get_path(r, &q.path_type);
      break;
    case kFPSetFileDirParms:
      q.flag = r.u8("pad");
      q.volume = r.u16("volume ID");
      q.dir = r.u32("directory ID");
      q.bitmap = r.u16("bitmap");
      q.name = get_path(r, &q.path_type);
      r.align2("parameters pad");
      q.params = r.rest();
      break;
    case kFPEnumerateExt2:
      q.flag = r.u8("pad");
      q.volume = r.u16("volume ID");
      q.dir = r.u32("directory ID");
      q.file_bitmap = r.u16("file bitmap");
      q.dir_bitmap = r.u16("directory bitmap");
      q.req_count = r.u16("request count");
      q.start_index = r.u32("start index");
      q.max_reply = r.u32("max reply size");
      q.name = get_path(r, &q.path_type);
      break;
    case kFPCreateFile:
    case kFPCreateDir:
    case kFPDelete:
      q.flag = r.u8(q.command == kFPCreateFile ? "create flag" : "pad");
      q.volume = r.u16("volume ID");
      q.dir = r.u32("directory ID");
      q.name = get_path(r, &q.path_type);
      break;
    case kFPOpenFork:
      q.flag = r.u8("fork flag");
      q.volume = r.u16("volume ID");
      q.dir = r.u32("directory ID");
      q.bitmap = r.u16("bitmap");
      q.access = r.u16("access mode");
      q.name = get_path(r, &q.path_type);
      break;
    case kFPReadExt:
    case kFPWriteExt:
      q.flag = r.u8(q.command == kFPWriteExt ? "start/end flag" : "pad");
      q.fork = r.u16("fork");
      q.offset = r.u64("offset");
      q.count = r.u64("count");
      q.data_offset = r.pos();
      break;
    case kFPRead:
      q.flag = r.u8("pad");
      q.fork = r.u16("fork");
      q.offset = r.u32("offset");
      q.count = r.u32("count");
      r.u8("newline mask");
      r.u8("newline character");
      break;
    case kFPWrite:
      q.flag = r.u8("start/end flag");
      q.fork = r.u16("fork");
      q.offset = r.u32("offset");
      q.count = r.u32("count");
      q.data_offset = r.pos();
      break;
    case kFPFlushFork:
    case kFPCloseFork:
      q.flag = r.u8("pad");
      q.fork = r.u16("fork");
      break;
    default:
      break;
  }
  return q;
}

// --- Replies ----------------------------------------------------------------------------

SrvrParms decode_srvr_parms(std::string_view reply) {
  Reader r(reply, "FPGetSrvrParms reply");
  SrvrParms p;
  p.server_time = r.u32("server time");
  for (int n = r.u8("volume count"); n > 0; --n) {
    SrvrParms::Volume v;
    v.flags = r.u8("volume flags");
    v.name = r.pascal("volume name");
    p.volumes.push_back(std::move(v));
  }
  return p;
}

std::string encode_srvr_parms(const SrvrParms& p) {
  Writer w;
  w.u32(p.server_time).u8(static_cast<uint8_t>(p.volumes.size()));
  for (const auto& v : p.volumes) w.u8(v.flags).pascal(v.name, "volume name");
  return w.take();
}

namespace {

// A volume parameter's fixed field (bits 0-11 but the name's offset, 8), read
// or written by `io` (Get or Put, afp_codec.h); false for a bit volumes do not have.
template <class IO, class V>
bool vol_field(IO& io, int bit, V& v) {
  switch (bit) {
    case 0:
      io(v.attributes, "attributes");
      return true;
    case 1:
      io(v.signature, "signature");
      return true;
    case 2:
      io(v.create_date, "creation date");
      return true;
    case 3:
      io(v.mod_date, "modification date");
      return true;
    case 4:
      io(v.backup_date, "backup date");
      return true;
    case 5:
      io(v.volume_id, "volume ID");
      return true;
    case 6:
      io(v.bytes_free, "bytes free");
      return true;
    case 7:
      io(v.bytes_total, "bytes total");
      return true;
    case 9:
      io(v.ext_bytes_free, "extended bytes free");
      return true;
    case 10:
      io(v.ext_bytes_total, "extended bytes total");
      return true;
    case 11:
      io(v.block_size, "block size");
      return true;
  }
  return false;
}

constexpr int kVolNameBit = 8;

}  // namespace

VolParams decode_open_vol(std::string_view reply) {
  Reader r(reply, "FPOpenVol reply");
  VolParams v;
  v.bitmap = r.u16("bitmap");
  const size_t start = r.pos();
  Get get{r};
  for (int bit = 0; bit < 16; ++bit) {
    if (!(v.bitmap & (1u << bit))) continue;
    if (bit == kVolNameBit) {
      const uint16_t off = r.u16("volume name offset");
      v.name = r.at(start + off, "volume name").pascal("volume name");
    } else if (!vol_field(get, bit, v)) {
      r.fail("bitmap",
             fmt::format("has bit {} (0x{:04x}), which volumes do not have", bit, v.bitmap));
    }
  }
  return v;
}

std::string encode_vol_params(const VolParams& v) {
  Writer w;
  w.u16(v.bitmap);
  const size_t start = w.size();
  size_t name_at = 0;
  Put put{w};
  for (int bit = 0; bit < 12; ++bit) {
    if (!(v.bitmap & (1u << bit))) continue;
    if (bit == kVolNameBit) {
      name_at = w.size();
      w.u16(0);
    } else {
      vol_field(put, bit, v);
    }
  }
  if (v.bitmap & kVolName) {
    const size_t off = w.size() - start;
    w.str()[name_at] = static_cast<char>(off >> 8);
    w.str()[name_at + 1] = static_cast<char>(off & 0xff);
    w.pascal(v.name, "volume name");
  }
  return w.take();
}

FileDirParms decode_file_dir_parms(std::string_view reply) {
  Reader r(reply, "FPGetFileDirParms reply");
  FileDirParms f;
  f.file_bitmap = r.u16("file bitmap");
  f.dir_bitmap = r.u16("directory bitmap");
  const uint8_t kind = r.u8("file/directory flag");
  r.u8("pad");
  const bool is_dir = kind & 0x80;
  f.params = decode_params(r, is_dir ? f.dir_bitmap : f.file_bitmap, is_dir);
  return f;
}

std::string encode_file_dir_parms(uint16_t file_bitmap, uint16_t dir_bitmap, const Params& p) {
  Writer w;
  w.u16(file_bitmap).u16(dir_bitmap).u8(p.is_dir ? 0x80 : 0x00).u8(0);
  encode_params(w, p.is_dir ? dir_bitmap : file_bitmap, p);
  return w.take();
}

OpenForkReply decode_open_fork(std::string_view reply) {
  Reader r(reply, "FPOpenFork reply");
  OpenForkReply o;
  o.bitmap = r.u16("bitmap");
  o.fork = r.u16("fork reference");
  if (o.fork == 0) r.fail("fork reference", "is 0, which is not a valid fork");
  o.params = decode_params(r, o.bitmap, false);
  return o;
}

std::string encode_open_fork_reply(uint16_t bitmap, uint16_t fork, const Params& p) {
  Writer w;
  w.u16(bitmap).u16(fork);
  encode_params(w, bitmap, p);
  return w.take();
}

uint64_t decode_write_ext(std::string_view reply) {
  Reader r(reply, "FPWriteExt reply");
  return r.u64("last written");
}

uint32_t decode_create_dir(std::string_view reply) {
  Reader r(reply, "FPCreateDir reply");
  return r.u32("new directory ID");
}

uint32_t decode_write(std::string_view reply) {
  Reader r(reply, "FPWrite reply");
  return r.u32("last written");
}

EnumerateReply decode_enumerate_ext2(std::string_view reply) {
  Reader r(reply, "FPEnumerateExt2 reply");
  EnumerateReply e;
  e.file_bitmap = r.u16("file bitmap");
  e.dir_bitmap = r.u16("directory bitmap");
  for (int n = r.u16("actual count"); n > 0; --n) {
    const uint16_t len = r.u16("entry length");
    if (len < 4) r.fail("entry length", fmt::format("is {}; minimum 4", len));
    Reader entry(r.bytes(len - 2, "entry"), r.what() + " entry");
    const bool is_dir = entry.u8("file/directory flag") & 0x80;
    entry.u8("pad");
    e.entries.push_back(decode_params(entry, is_dir ? e.dir_bitmap : e.file_bitmap, is_dir));
  }
  return e;
}

SrvrMsg decode_srvr_msg(std::string_view reply) {
  Reader r(reply, "FPGetSrvrMsg reply");
  SrvrMsg m;
  m.type = r.u16("message type");
  m.bitmap = r.u16("bitmap");
  // Bit 1: the message is UTF-8 with a 2-byte length; else a Pascal string.
  m.message = (m.bitmap & 0x2) ? r.long_string("message") : r.pascal("message");
  return m;
}

Attention decode_attention(std::string_view payload) {
  Reader r(payload, "DSIAttention");
  const uint16_t code = r.u16("attention code");
  Attention a;
  a.shutdown = code & 0x8000;
  a.crashed = code & 0x4000;
  a.message = code & 0x2000;
  a.no_reconnect = code & 0x1000;
  a.minutes = code & 0x0fff;
  return a;
}

void decode_reply(uint8_t command, std::string_view reply) {
  switch (command) {
    case kFPGetSrvrInfo:
      decode_server_info(reply);
      break;
    case kFPGetSrvrParms:
      decode_srvr_parms(reply);
      break;
    case kFPOpenVol:
      decode_open_vol(reply);
      break;
    case kFPGetFileDirParms:
      decode_file_dir_parms(reply);
      break;
    case kFPOpenFork:
      decode_open_fork(reply);
      break;
    case kFPWriteExt:
      decode_write_ext(reply);
      break;
    case kFPCreateDir:
      decode_create_dir(reply);
      break;
    case kFPWrite:
      decode_write(reply);
      break;
    case kFPEnumerateExt2:
      decode_enumerate_ext2(reply);
      break;
    case kFPGetSrvrMsg:
      decode_srvr_msg(reply);
      break;
    case kFPCloseVol:
    case kFPCloseFork:
    case kFPCreateFile:
    case kFPDelete:
    case kFPFlush:
    case kFPFlushFork:
    case kFPLogout:
    case kFPSetFileDirParms:
      if (!reply.empty()) {
        Reader(reply, command_name(command) + " reply")
            .fail("reply", fmt::format("has {} bytes; expected none", reply.size()));
      }
      break;
    default:
      break;  // data (reads) or UAM-specific (logins): no structure here
  }
}

}  // namespace cp::transfer::afp
