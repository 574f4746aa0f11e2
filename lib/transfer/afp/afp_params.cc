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

}  // namespace

// --- Parameters -------------------------------------------------------------------------

Params decode_params(Reader& r, uint16_t bitmap, bool is_dir) {
  // Names sit at offsets from the start of this block.
  const size_t start = r.pos();
  Params p;
  p.is_dir = is_dir;
  for (int bit = 0; bit < 16; ++bit) {
    if (!(bitmap & (1u << bit))) continue;
    const Field f = field(is_dir, bit);
    if (f.size == 0) {
      r.fail("bitmap", fmt::format("has bit {} (0x{:04x}), which a {} does not have", bit, bitmap,
                                   is_dir ? "directory" : "file"));
    }
    switch (bit) {
      case 0:
        p.attributes = r.u16("attributes");
        break;
      case 1:
        p.parent_id = r.u32("parent directory ID");
        break;
      case 2:
        p.create_date = r.u32("creation date");
        break;
      case 3:
        p.mod_date = r.u32("modification date");
        break;
      case 4:
        p.backup_date = r.u32("backup date");
        break;
      case 5: {
        auto fi = r.bytes(32, "Finder info");
        std::copy(fi.begin(), fi.end(), p.finder_info.begin());
        break;
      }
      case 6:
      case 7: {
        const char* what = bit == 6 ? "long name" : "short name";
        const uint16_t off = r.u16(what);
        Reader n = r.at(start + off, what);
        (bit == 6 ? p.long_name : p.short_name) = n.pascal(what);
        break;
      }
      case 8:
        p.node_id = r.u32(is_dir ? "directory ID" : "file ID");
        break;
      case 9:
        if (is_dir) {
          p.offspring_count = r.u16("offspring count");
        } else {
          p.data_fork_len = r.u32("data fork length");
        }
        break;
      case 10:
        if (is_dir) {
          p.owner_id = r.u32("owner ID");
        } else {
          p.rsrc_fork_len = r.u32("resource fork length");
        }
        break;
      case 11:
        if (is_dir) {
          p.group_id = r.u32("group ID");
        } else {
          p.ext_data_fork_len = r.u64("extended data fork length");
        }
        break;
      case 12:
        if (is_dir) {
          p.access_rights = r.u32("access rights");
        } else {
          p.launch_limit = r.u16("launch limit");
        }
        break;
      case 13: {
        const uint16_t off = r.u16("UTF-8 name offset");
        r.skip(4, "UTF-8 name pad");
        Reader n = r.at(start + off, "UTF-8 name");
        n.u32("UTF-8 name text encoding hint");
        p.utf8_name = n.long_string("UTF-8 name");
        break;
      }
      case 14:
        p.ext_rsrc_fork_len = r.u64("extended resource fork length");
        break;
      case 15:
        p.unix_privs.uid = r.u32("unix uid");
        p.unix_privs.gid = r.u32("unix gid");
        p.unix_privs.mode = r.u32("unix mode");
        p.unix_privs.access_rights = r.u32("unix access rights");
        break;
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
  for (int bit = 0; bit < 16; ++bit) {
    if (!(bitmap & (1u << bit))) continue;
    const Field f = field(p.is_dir, bit);
    CP_CHECK(f.size != 0);
    switch (bit) {
      case 0:
        w.u16(p.attributes);
        break;
      case 1:
        w.u32(p.parent_id);
        break;
      case 2:
        w.u32(p.create_date);
        break;
      case 3:
        w.u32(p.mod_date);
        break;
      case 4:
        w.u32(p.backup_date);
        break;
      case 5:
        w.bytes(std::string_view(reinterpret_cast<const char*>(p.finder_info.data()), 32));
        break;
      case 6:
      case 7:
        names.push_back({w.size(), bit});
        w.u16(0);
        break;
      case 8:
        w.u32(p.node_id);
        break;
      case 9:
        p.is_dir ? w.u16(p.offspring_count) : w.u32(p.data_fork_len);
        break;
      case 10:
        w.u32(p.is_dir ? p.owner_id : p.rsrc_fork_len);
        break;
      case 11:
        p.is_dir ? w.u32(p.group_id) : w.u64(p.ext_data_fork_len);
        break;
      case 12:
        p.is_dir ? w.u32(p.access_rights) : w.u16(p.launch_limit);
        break;
      case 13:
        names.push_back({w.size(), bit});
        w.u16(0).u32(0);
        break;
      case 14:
        w.u64(p.ext_rsrc_fork_len);
        break;
      case 15:
        w.u32(p.unix_privs.uid).u32(p.unix_privs.gid).u32(p.unix_privs.mode);
        w.u32(p.unix_privs.access_rights);
        break;
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
