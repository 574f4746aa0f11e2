// The nfs driver's NFSv3 small-file calls by handle, as a kernel client
// makes them (docs/small-files.md, "Round trips"): each directory's handle
// looked up once (NfsSession::dir_handle3), then per file the raw RPC on the
// session's connection: create = CREATE (GUARDED, mode 0644: an existing
// file is refused, never truncated; its answer holds the new handle), WRITE
// (UNSTABLE), COMMIT; stat = LOOKUP (its answer holds the attributes); read
// = LOOKUP (the size), READ (its answer says end of file); delete = REMOVE.
// libnfs's path calls would look every component up again and add ACCESS,
// GETATTR, SETATTR and a second COMMIT.
#include <nfsc/libnfs.h>
// After libnfs.h: the raw headers use its types.
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "transfer/nfs/nfs_chain.h"

namespace cp::transfer::nfs {
namespace {

nfs_fh3 handle(const std::string& fh) {
  nfs_fh3 h{};
  h.data.data_len = static_cast<u_int>(fh.size());
  h.data.data_val = const_cast<char*>(fh.data());  // encoding only reads it
  return h;
}

std::string handle_bytes(const nfs_fh3& h) { return {h.data.data_val, h.data.data_len}; }

// A refused call: its nfsstat3 as -errno and in words ("NFS3ERR_EXIST").
void refused(Chain& c, int status, const char* op) {
  const int e = nfsstat3_to_errno(status);
  c.status = e < 0 ? e : -EIO;
  c.detail = fmt::format("NFS3 {} failed with {}", op, nfsstat3_to_str(status));
}

void take_size(Chain& c, const post_op_attr& a) {
  if (a.attributes_follow) c.size = a.post_op_attr_u.attributes.size;
}

void take_create(Chain& c, const CREATE3res& r) {
  const CREATE3resok& ok = r.CREATE3res_u.resok;
  // A server may leave the handle out: the chain looks the file up then.
  if (ok.obj.handle_follows) c.fh3 = handle_bytes(ok.obj.post_op_fh3_u.handle);
}

void take_lookup(Chain& c, const LOOKUP3res& r) {
  const LOOKUP3resok& ok = r.LOOKUP3res_u.resok;
  c.fh3 = handle_bytes(ok.object);
  if (!ok.obj_attributes.attributes_follow) {
    // Its size is what a read needs (a stat, the attributes): a server that
    // leaves them out is not one this driver can time.
    c.status = -EIO;
    c.detail = "the server's LOOKUP answer holds no attributes";
    return;
  }
  take_size(c, ok.obj_attributes);
}

void take_write(Chain& c, const WRITE3res& r) {
  c.status = static_cast<int>(std::min<uint64_t>(r.WRITE3res_u.resok.count, INT32_MAX));
}

void take_read(Chain& c, const READ3res& r) {
  const READ3resok& ok = r.READ3res_u.resok;
  const uint64_t n = std::min<uint64_t>(ok.data.data_len, c.want - c.done);
  if (n > 0) std::memcpy(c.buf.data() + c.done, ok.data.data_val, n);
  c.status = static_cast<int>(n);
  c.eof = ok.eof != 0;
}

template <class Res>
void take_nothing(Chain&, const Res&) {}

// A procedure's answer (Res: its result) for the chain behind it: the RPC's
// failure, the server's refusal, or what Take reads from its result.
template <class Res, void (*Take)(Chain&, const Res&)>
void on_answer(rpc_context*, int status, void* data, void* priv) {
  std::unique_ptr<ChainCall> call(static_cast<ChainCall*>(priv));
  Chain& c = *call->chain;
  c.answered = true;
  c.status = 0;
  if (status != RPC_STATUS_SUCCESS) {
    // libnfs gives a string with an error or a timeout; none at a cancel
    // (the context going away).
    c.status = status == RPC_STATUS_TIMEOUT ? -ETIMEDOUT : -EIO;
    c.detail = status != RPC_STATUS_CANCEL && data ? static_cast<const char*>(data)
                                                   : "the call was cancelled";
    return;
  }
  const auto* r = static_cast<const Res*>(data);
  if (r->status != NFS3_OK) return refused(c, r->status, call->op);
  Take(c, *r);
}

}  // namespace

int send3(NfsSession& s, const std::shared_ptr<Chain>& c, bool writing, std::span<const char> data,
          std::string& detail) {
  rpc_context* rpc = nfs_get_rpc_context(s.ctx());
  auto call = std::make_unique<ChainCall>(ChainCall{c, ""});
  void* priv = call.get();
  diropargs3 where{};
  where.dir = handle(c->dir_fh);
  where.name = const_cast<char*>(c->name.c_str());
  int rc = 0;
  switch (c->stage) {
    case Stage::kOpen:
      if (writing) {
        CREATE3args a{};
        a.where = where;
        a.how.mode = GUARDED;  // NFS3ERR_EXIST for a file that is there
        sattr3& at = a.how.createhow3_u.g_obj_attributes;
        at.mode.set_it = 1;
        at.mode.set_mode3_u.mode = 0644;
        call->op = "CREATE";
        rc = rpc_nfs3_create_async(rpc, on_answer<CREATE3res, take_create>, &a, priv);
        break;
      }
      [[fallthrough]];  // a read's open: LOOKUP
    case Stage::kStat: {
      LOOKUP3args a{};
      a.what = where;
      call->op = "LOOKUP";
      rc = rpc_nfs3_lookup_async(rpc, on_answer<LOOKUP3res, take_lookup>, &a, priv);
      break;
    }
    case Stage::kWrite: {
      WRITE3args a{};
      a.file = handle(c->fh3);
      a.offset = c->done;
      a.count = static_cast<count3>(
          std::min<uint64_t>(data.size() - c->done, s.request_size(Mode::kWrite)));
      a.stable = UNSTABLE;  // COMMIT after, as a kernel client at close
      a.data.data_len = a.count;
      a.data.data_val = const_cast<char*>(data.data() + c->done);  // encoding only reads it
      call->op = "WRITE";
      rc = rpc_nfs3_write_async(rpc, on_answer<WRITE3res, take_write>, &a, priv);
      break;
    }
    case Stage::kCommit: {
      COMMIT3args a{};
      a.file = handle(c->fh3);
      call->op = "COMMIT";
      rc = rpc_nfs3_commit_async(rpc, on_answer<COMMIT3res, take_nothing<COMMIT3res>>, &a, priv);
      break;
    }
    case Stage::kRead: {
      READ3args a{};
      a.file = handle(c->fh3);
      a.offset = c->done;
      a.count =
          static_cast<count3>(std::min<uint64_t>(c->want - c->done, s.request_size(Mode::kRead)));
      call->op = "READ";
      rc = rpc_nfs3_read_async(rpc, on_answer<READ3res, take_read>, &a, priv);
      break;
    }
    case Stage::kRemove: {
      REMOVE3args a{};
      a.object = where;
      call->op = "REMOVE";
      rc = rpc_nfs3_remove_async(rpc, on_answer<REMOVE3res, take_nothing<REMOVE3res>>, &a, priv);
      break;
    }
    default:
      ::cp::check_failed("no NFSv3 call for this stage", __FILE__, __LINE__);
  }
  if (rc != 0) {
    const char* e = rpc_get_error(rpc);
    detail = e ? e : "queueing the call failed";
    return -1;
  }
  call.release();  // the callback owns it now
  return 0;
}

}  // namespace cp::transfer::nfs
