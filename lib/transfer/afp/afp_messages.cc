// The AFP codec's messages: requests (client -> server) encoded and
// decoded, and the replies. Declared in afp_codec.h.
#include "transfer/afp/afp_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

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

// The pathname of a request: decoded of any type, encoded as UTF-8 (type 3).
void path(Get& io, Request& q) { q.name = get_path(io.r, &q.path_type); }
void path(Put& io, const Request& q) { put_path(io.w, q.name); }
// Where a request's trailing bytes start (the data of a write; FPLoginCont's
// UAM bytes): noted when decoding.
void mark(Get& io, size_t& at) { at = io.r.pos(); }
void mark(Put&, size_t) {}
// FPSetFileDirParms' parameter block, at an even offset, to the end.
void even_rest(Get& io, Request& q) {
  io.r.align2("parameters pad");
  q.params = io.r.rest();
}
void even_rest(Put& io, const Request& q) { io.w.pad_even().bytes(q.params); }

// The flag byte, volume and directory that start a request naming a path.
template <class IO, class Q>
void volume_dir(IO& io, Q& q, const char* flag) {
  io(q.flag, flag);
  io(q.volume, "volume ID");
  io(q.dir, "directory ID");
}

// The flag byte, fork, offset and count of a read or write, N wide.
template <class N, class IO, class Q>
void fork_range(IO& io, Q& q, const char* flag) {
  io(q.flag, flag);
  io(q.fork, "fork");
  io.template as<N>(q.offset, "offset");
  io.template as<N>(q.count, "count");
}

// The fields after the command byte of every request but the logins, in
// wire order: written once, read by decode_request (Get) and written by the
// encoders (Put). An unknown command has none.
template <class IO, class Q>
void request_fields(IO& io, Q& q) {
  switch (q.command) {
    case kFPGetSrvrMsg:
      io(q.flag, "pad");
      io(q.msg_type, "message type");
      io(q.bitmap, "bitmap");
      break;
    case kFPOpenVol:
      io(q.flag, "pad");
      io(q.bitmap, "bitmap");
      io.pascal(q.name, "volume name");
      break;
    case kFPCloseVol:
    case kFPFlush:
      io(q.flag, "pad");
      io(q.volume, "volume ID");
      break;
    case kFPGetFileDirParms:
    case kFPEnumerateExt2:
      volume_dir(io, q, "pad");
      io(q.file_bitmap, "file bitmap");
      io(q.dir_bitmap, "directory bitmap");
      if (q.command == kFPEnumerateExt2) {
        io(q.req_count, "request count");
        io(q.start_index, "start index");
        io(q.max_reply, "max reply size");
      }
      path(io, q);
      break;
    case kFPSetFileDirParms:
      volume_dir(io, q, "pad");
      io(q.bitmap, "bitmap");
      path(io, q);
      even_rest(io, q);
      break;
    case kFPCreateFile:
    case kFPCreateDir:
    case kFPDelete:
      volume_dir(io, q, q.command == kFPCreateFile ? "create flag" : "pad");
      path(io, q);
      break;
    case kFPOpenFork:
      volume_dir(io, q, "fork flag");
      io(q.bitmap, "bitmap");
      io(q.access, "access mode");
      path(io, q);
      break;
    case kFPReadExt:
    case kFPWriteExt:
      fork_range<uint64_t>(io, q, q.command == kFPWriteExt ? "start/end flag" : "pad");
      mark(io, q.data_offset);
      break;
    case kFPRead: {
      fork_range<uint32_t>(io, q, "pad");
      // Newline mask and character 0: no newline-terminated reads.
      uint8_t none = 0;
      io(none, "newline mask");
      io(none, "newline character");
      break;
    }
    case kFPWrite:
      fork_range<uint32_t>(io, q, "start/end flag");
      mark(io, q.data_offset);
      break;
    case kFPFlushFork:
    case kFPCloseFork:
      io(q.flag, "pad");
      io(q.fork, "fork");
      break;
    case kFPLogout:
      io(q.flag, "pad");
      break;
    default:
      break;
  }
}

std::string encode_request(const Request& q) {
  return write_fields(q, [](Put& put, const Request& r) {
    put(r.command, "command");
    request_fields(put, r);
  });
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

std::string encode_get_srvr_parms() { return encode_request({.command = kFPGetSrvrParms}); }

std::string encode_get_srvr_msg(uint16_t type, uint16_t bitmap) {
  return encode_request({.command = kFPGetSrvrMsg, .bitmap = bitmap, .msg_type = type});
}

std::string encode_open_vol(uint16_t bitmap, std::string_view name) {
  return encode_request({.command = kFPOpenVol, .bitmap = bitmap, .name = std::string(name)});
}

std::string encode_close_vol(uint16_t volume) {
  return encode_request({.command = kFPCloseVol, .volume = volume});
}

std::string encode_get_file_dir_parms(uint16_t volume, uint32_t dir, uint16_t file_bitmap,
                                      uint16_t dir_bitmap, std::string_view path) {
  return encode_request({.command = kFPGetFileDirParms,
                         .volume = volume,
                         .dir = dir,
                         .file_bitmap = file_bitmap,
                         .dir_bitmap = dir_bitmap,
                         .name = std::string(path)});
}

std::string encode_set_file_dir_parms(uint16_t volume, uint32_t dir, uint16_t bitmap,
                                      std::string_view path, std::string_view params) {
  return encode_request({.command = kFPSetFileDirParms,
                         .volume = volume,
                         .dir = dir,
                         .bitmap = bitmap,
                         .name = std::string(path),
                         .params = params});
}

std::string encode_enumerate_ext2(uint16_t volume, uint32_t dir, uint16_t file_bitmap,
                                  uint16_t dir_bitmap, uint16_t count, uint32_t start_index,
                                  uint32_t max_reply, std::string_view path) {
  return encode_request({.command = kFPEnumerateExt2,
                         .volume = volume,
                         .dir = dir,
                         .file_bitmap = file_bitmap,
                         .dir_bitmap = dir_bitmap,
                         .req_count = count,
                         .start_index = start_index,
                         .max_reply = max_reply,
                         .name = std::string(path)});
}

std::string encode_create_file(uint16_t volume, uint32_t dir, bool hard, std::string_view path) {
  return encode_request({.command = kFPCreateFile,
                         .flag = uint8_t(hard ? 0x80 : 0x00),
                         .volume = volume,
                         .dir = dir,
                         .name = std::string(path)});
}

std::string encode_create_dir(uint16_t volume, uint32_t dir, std::string_view path) {
  return encode_request(
      {.command = kFPCreateDir, .volume = volume, .dir = dir, .name = std::string(path)});
}

std::string encode_delete(uint16_t volume, uint32_t dir, std::string_view path) {
  return encode_request(
      {.command = kFPDelete, .volume = volume, .dir = dir, .name = std::string(path)});
}

std::string encode_open_fork(uint16_t volume, uint32_t dir, uint16_t bitmap, uint16_t access,
                             std::string_view path, bool resource_fork) {
  return encode_request({.command = kFPOpenFork,
                         .flag = uint8_t(resource_fork ? 0x80 : 0x00),
                         .volume = volume,
                         .dir = dir,
                         .bitmap = bitmap,
                         .access = access,
                         .name = std::string(path)});
}

std::string encode_read_ext(uint16_t fork, uint64_t offset, uint64_t count) {
  return encode_request({.command = kFPReadExt, .fork = fork, .offset = offset, .count = count});
}

std::string encode_read(uint16_t fork, uint32_t offset, uint32_t count) {
  return encode_request({.command = kFPRead, .fork = fork, .offset = offset, .count = count});
}

std::string encode_write_ext_header(uint16_t fork, uint64_t offset, uint64_t count) {
  // Flag 0: the offset counts from the start of the fork.
  return encode_request({.command = kFPWriteExt, .fork = fork, .offset = offset, .count = count});
}

std::string encode_write_header(uint16_t fork, uint32_t offset, uint32_t count) {
  return encode_request({.command = kFPWrite, .fork = fork, .offset = offset, .count = count});
}

std::string encode_flush_fork(uint16_t fork) {
  return encode_request({.command = kFPFlushFork, .fork = fork});
}

std::string encode_close_fork(uint16_t fork) {
  return encode_request({.command = kFPCloseFork, .fork = fork});
}

std::string encode_flush(uint16_t volume) {
  return encode_request({.command = kFPFlush, .volume = volume});
}

std::string encode_logout() { return encode_request({.command = kFPLogout}); }

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
    case kFPLogout:
      // Some clients (netatalk's testsuite) send no pad byte.
      if (!r.remaining()) break;
      [[fallthrough]];
    default: {
      Get get{r};
      request_fields(get, q);
      break;
    }
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

namespace {

// A parameter block laid out by `bitmap` (decode_params, encode_params).
void params(Get& io, Params& p, uint16_t bitmap, bool is_dir) {
  p = decode_params(io.r, bitmap, is_dir);
}
void params(Put& io, const Params& p, uint16_t bitmap, bool) { encode_params(io.w, bitmap, p); }

// The replies that carry a parameter block, field by field for both
// directions. FPGetFileDirParms: a flag byte says whether it is a
// directory's, whose bitmap then applies.
constexpr auto kFileDirParmsFields = [](auto& io, auto& f) {
  io(f.file_bitmap, "file bitmap");
  io(f.dir_bitmap, "directory bitmap");
  uint8_t kind = f.params.is_dir ? 0x80 : 0x00, pad = 0;
  io(kind, "file/directory flag");
  io(pad, "pad");
  const bool is_dir = kind & 0x80;
  params(io, f.params, is_dir ? f.dir_bitmap : f.file_bitmap, is_dir);
};

// FPOpenFork: a fork reference of 0 is no fork (refused when decoding).
constexpr auto kOpenForkFields = [](auto& io, auto& o) {
  io(o.bitmap, "bitmap");
  io(o.fork, "fork reference");
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(io)>, Get>) {
    if (o.fork == 0) io.r.fail("fork reference", "is 0, which is not a valid fork");
  }
  params(io, o.params, o.bitmap, false);
};

}  // namespace

FileDirParms decode_file_dir_parms(std::string_view reply) {
  return read_fields<FileDirParms>(reply, "FPGetFileDirParms reply", kFileDirParmsFields);
}

std::string encode_file_dir_parms(uint16_t file_bitmap, uint16_t dir_bitmap, const Params& p) {
  return write_fields(FileDirParms{file_bitmap, dir_bitmap, p}, kFileDirParmsFields);
}

OpenForkReply decode_open_fork(std::string_view reply) {
  return read_fields<OpenForkReply>(reply, "FPOpenFork reply", kOpenForkFields);
}

std::string encode_open_fork_reply(uint16_t bitmap, uint16_t fork, const Params& p) {
  return write_fields(OpenForkReply{bitmap, fork, p}, kOpenForkFields);
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
