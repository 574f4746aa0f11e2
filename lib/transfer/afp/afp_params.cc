// The AFP codec's file and directory parameters (FPGetFileDirParms and
// the replies that carry them): which fields a bitmap holds, decoded and
// encoded. Declared in afp_codec.h.
#include "transfer/afp/afp_codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace cp::transfer::afp {
namespace {

// Fixed-size parameter fields by bit, for files and directories (0: a name
// offset or a bit that does not exist for that kind).
struct Field {
  int size;         // bytes in the fixed part; 0 = no such bit
  bool name_field;  // an offset to a name (plus 4 pad bytes for kUTF8Name)
};

// By bit, 0 to 15 (AFP 3.x: FPGetFileDirParms' file and directory bitmaps).
constexpr Field kFileFields[16] = {{2, false}, {4, false},  {4, false}, {4, false},
                                   {4, false}, {32, false}, {2, true},  {2, true},
                                   {4, false}, {4, false},  {4, false}, {8, false},
                                   {2, false}, {6, true},   {8, false}, {16, false}};
constexpr Field kDirFields[16] = {{2, false}, {4, false},  {4, false}, {4, false},
                                  {4, false}, {32, false}, {2, true},  {2, true},
                                  {4, false}, {2, false},  {4, false}, {4, false},
                                  {4, false}, {6, true},   {0, false}, {16, false}};

Field field(bool is_dir, int bit) { return (is_dir ? kDirFields : kFileFields)[bit & 15]; }

// The fixed field of `bit` (not a name offset: 6, 7, 13), read or written by
// `io` (Get or Put, afp_codec.h).
template <class IO, class P>
void fixed_field(IO& io, int bit, P& p) {
  switch (bit) {
    case 0:
      return io(p.attributes, "attributes");
    case 1:
      return io(p.parent_id, "parent directory ID");
    case 2:
      return io(p.create_date, "creation date");
    case 3:
      return io(p.mod_date, "modification date");
    case 4:
      return io(p.backup_date, "backup date");
    case 5:
      return io(p.finder_info, "Finder info");
    case 8:
      return io(p.node_id, p.is_dir ? "directory ID" : "file ID");
    case 9:
      return p.is_dir ? io(p.offspring_count, "offspring count")
                      : io(p.data_fork_len, "data fork length");
    case 10:
      return p.is_dir ? io(p.owner_id, "owner ID") : io(p.rsrc_fork_len, "resource fork length");
    case 11:
      return p.is_dir ? io(p.group_id, "group ID")
                      : io(p.ext_data_fork_len, "extended data fork length");
    case 12:
      return p.is_dir ? io(p.access_rights, "access rights") : io(p.launch_limit, "launch limit");
    case 14:
      return io(p.ext_rsrc_fork_len, "extended resource fork length");
    case 15:
      io(p.unix_privs.uid, "unix uid");
      io(p.unix_privs.gid, "unix gid");
      io(p.unix_privs.mode, "unix mode");
      return io(p.unix_privs.access_rights, "unix access rights");
  }
}

}  // namespace

// --- Parameters -------------------------------------------------------------------------

Params decode_params(Reader& r, uint16_t bitmap, bool is_dir) {
  // Names sit at offsets from the start of this block.
  const size_t start = r.pos();
  Params p;
  p.is_dir = is_dir;
  Get get{r};
  for (int bit = 0; bit < 16; ++bit) {
    if (!(bitmap & (1u << bit))) continue;
    const Field f = field(is_dir, bit);
    if (f.size == 0) {
      r.fail("bitmap", fmt::format("has bit {} (0x{:04x}), which a {} does not have", bit, bitmap,
                                   is_dir ? "directory" : "file"));
    }
    if (bit == 6 || bit == 7) {
      const char* what = bit == 6 ? "long name" : "short name";
      const uint16_t off = r.u16(what);
      Reader n = r.at(start + off, what);
      (bit == 6 ? p.long_name : p.short_name) = n.pascal(what);
    } else if (bit == 13) {
      const uint16_t off = r.u16("UTF-8 name offset");
      r.skip(4, "UTF-8 name pad");
      Reader n = r.at(start + off, "UTF-8 name");
      n.u32("UTF-8 name text encoding hint");
      p.utf8_name = n.long_string("UTF-8 name");
    } else {
      fixed_field(get, bit, p);
    }
  }
  return p;
}

void encode_params(Writer& w, uint16_t bitmap, const Params& p) {
  const size_t start = w.size();
  struct Pending {
    size_t at;
    int bit;
  };
  std::vector<Pending> names;
  Put put{w};
  for (int bit = 0; bit < 16; ++bit) {
    if (!(bitmap & (1u << bit))) continue;
    const Field f = field(p.is_dir, bit);
    CP_CHECK(f.size != 0);
    if (f.name_field) {
      names.push_back({w.size(), bit});
      w.u16(0);
      if (bit == 13) w.u32(0);  // the UTF-8 name's pad
    } else {
      fixed_field(put, bit, p);
    }
  }
  for (const auto& n : names) {
    const size_t off = w.size() - start;
    w.str()[n.at] = static_cast<char>(off >> 8);
    w.str()[n.at + 1] = static_cast<char>(off & 0xff);
    if (n.bit == 13) {
      w.u32(0).long_string(p.utf8_name, "UTF-8 name");
    } else {
      w.pascal(n.bit == 6 ? p.long_name : p.short_name, "name");
    }
  }
}

}  // namespace cp::transfer::afp
