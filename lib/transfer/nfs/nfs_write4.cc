// The nfs driver's NFSv4 WRITEs under libnfs 4.0.0 (see below for why it
// sends them itself), and the small-file pass's READs (read4_async: libnfs's
// nfs_pread_async does not tell the end of file, so a read would need a
// GETATTR for the size first). Compiled only against that version
// (CP_LIBNFS_4_0_0, lib/transfer/CMakeLists.txt).
#include <nfsc/libnfs.h>
// After libnfs.h: the raw headers use its types.
#include <nfsc/libnfs-raw-nfs4.h>
#include <nfsc/libnfs-raw.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "transfer/nfs/nfs_session.h"

#ifdef CP_LIBNFS_4_0_0
// libnfs 4.0.0 exports these (its .so and .a) but declares them only in its
// private include/libnfs-private.h.
extern "C" {
struct rpc_pdu;
rpc_pdu* rpc_allocate_pdu2(rpc_context* rpc, int program, int version, int procedure, rpc_cb cb,
                           void* private_data, zdrproc_t zdr_decode_fn, int zdr_decode_bufsize,
                           size_t alloc_hint);
int rpc_queue_pdu(rpc_context* rpc, rpc_pdu* pdu);
void rpc_free_pdu(rpc_context* rpc, rpc_pdu* pdu);
}
#endif

namespace cp::transfer::nfs {

#ifdef CP_LIBNFS_4_0_0
namespace {

// Why libnfs 4.0.0 cannot send an NFSv4 WRITE of more than ~3.8 KiB: every
// NFSv4 call goes through rpc_nfs4_compound_async (nfs4/nfs4.c:205), which
// allocates its PDU with rpc_allocate_pdu (nfs4/nfs4.c:210), i.e.
// rpc_allocate_pdu2(..., alloc_hint = 0) (lib/pdu.c:197): a fixed encode
// buffer of ZDR_ENCODEBUF_MINSIZE = 4096 bytes (include/libnfs-private.h:97,
// lib/pdu.c:161). zdr_COMPOUND4args (nfs4/nfs4.c:219) copies the WRITE's data
// into that buffer and fails past it ("ZDR error: Failed to encode
// COMPOUND4args"). NFSv3's rpc_nfs3_write_async (nfs/nfs.c:315) passes
// alloc_hint = args->count instead. The public headers offer no NFSv4 call
// with a hint, so write4_async builds the WRITE COMPOUND itself (PUTFH, WRITE,
// as libnfs's nfs4_pwrite_async_internal does, lib/nfs_v4.c:2820) into a PDU
// from rpc_allocate_pdu2 with alloc_hint = the data's size, and queues it with
// rpc_queue_pdu: libnfs sends it and matches its reply on its own connection
// like any other call. That needs two private structs of 4.0.0 (soname 13,
// the only release with it: 5.0 is soname 14): the PDU's ZDR encoder (struct
// rpc_pdu) and the open's file handle and stateid (struct nfsfh), mirrored
// here from include/libnfs-private.h and checked at run time; a mismatch
// falls back to nfs_pwrite_async (and so to 3840-byte WRITEs).
struct Libnfs400Pdu {  // struct rpc_pdu's head
  void* next;
  uint32_t xid;
  ZDR zdr;
};
struct Libnfs400Fh {  // struct nfsfh, up to the NFSv4 open stateid
  struct {
    int len;
    char* val;
  } fh;
  int is_sync, is_append, is_dirty;
  uint64_t offset;
  struct {
    uint64_t fh_offset;
    uint32_t cur_ra;
  } ra;
  struct {
    void* entries;
    uint32_t num_entries;
    time_t ttl;
  } pagecache;
  struct {
    uint32_t seqid;
    char other[12];
  } stateid;
};
constexpr int kZdrEncodeBufMin = 4096;  // ZDR_ENCODEBUF_MINSIZE, bytes
constexpr int kNfs4FhSize = 128;        // NFS4_FHSIZE, bytes

void on_write4_answer(rpc_context*, int status, void* data, void* priv) {
  std::unique_ptr<Call> call(static_cast<Call*>(priv));
  if (status != RPC_STATUS_SUCCESS) {
    // libnfs passes a string with every failure.
    const char* text = data ? static_cast<const char*>(data) : "no text";
    answered(std::move(call), status == RPC_STATUS_TIMEOUT ? -ETIMEDOUT : -EIO, text, nullptr);
    return;
  }
  const auto* res = static_cast<const COMPOUND4res*>(data);
  if (res->status != NFS4_OK) {
    // nfsstat4 below 10000 are the POSIX errno values (RFC 7530, 13.1).
    const int err = res->status < 10000 ? static_cast<int>(res->status) : EIO;
    const std::string text = fmt::format("NFS4 WRITE failed with nfsstat4 {} ({})",
                                         static_cast<int>(res->status), errno_text(err));
    answered(std::move(call), -err, text.c_str(), nullptr);
    return;
  }
  for (u_int i = 0; i < res->resarray.resarray_len; ++i) {
    const nfs_resop4& op = res->resarray.resarray_val[i];
    if (op.resop == OP_WRITE) {
      answered(std::move(call), op.nfs_resop4_u.opwrite.WRITE4res_u.resok4.count, nullptr, nullptr);
      return;
    }
  }
  answered(std::move(call), -EIO, "the server's answer holds no WRITE result", nullptr);
}

// A READ's answer, for read4_async's caller.
struct Read4Call {
  Read4Done done;
  void* priv;
};

void on_read4_answer(rpc_context*, int status, void* data, void* priv) {
  std::unique_ptr<Read4Call> call(static_cast<Read4Call*>(priv));
  if (status != RPC_STATUS_SUCCESS) {
    const char* text = status != RPC_STATUS_CANCEL && data ? static_cast<const char*>(data)
                                                           : "the call was cancelled";
    call->done(call->priv, status == RPC_STATUS_TIMEOUT ? -ETIMEDOUT : -EIO, text, nullptr, false);
    return;
  }
  const auto* res = static_cast<const COMPOUND4res*>(data);
  if (res->status != NFS4_OK) {
    const int err = res->status < 10000 ? static_cast<int>(res->status) : EIO;  // as WRITE's
    const std::string text = fmt::format("NFS4 READ failed with nfsstat4 {} ({})",
                                         static_cast<int>(res->status), errno_text(err));
    call->done(call->priv, -err, text.c_str(), nullptr, false);
    return;
  }
  for (u_int i = 0; i < res->resarray.resarray_len; ++i) {
    const nfs_resop4& op = res->resarray.resarray_val[i];
    if (op.resop == OP_READ) {
      const READ4resok& ok = op.nfs_resop4_u.opread.READ4res_u.resok4;
      call->done(call->priv, static_cast<int>(std::min<u_int>(ok.data.data_len, INT32_MAX)),
                 nullptr, ok.data.data_val, ok.eof != 0);
      return;
    }
  }
  call->done(call->priv, -EIO, "the server's answer holds no READ result", nullptr, false);
}

// The open's handle and stateid, when `fh` is laid out as 4.0.0's.
const Libnfs400Fh* fh400(nfsfh* fh) {
  const auto* f = reinterpret_cast<const Libnfs400Fh*>(fh);
  // nfs_get_fh returns &nfsfh->fh; a file we open has neither O_SYNC nor O_APPEND.
  if (reinterpret_cast<const void*>(nfs_get_fh(fh)) != f || f->fh.len <= 0 ||
      f->fh.len > kNfs4FhSize || !f->fh.val || f->is_sync != 0 || f->is_append != 0) {
    return nullptr;
  }
  return f;
}

// A COMPOUND's first two operations on an open file: PUTFH of its handle,
// and `second` (READ or WRITE), whose stateid is the open's.
void put_fh(nfs_argop4 (&op)[2], const Libnfs400Fh* f, nfs_opnum4 second, stateid4& stateid) {
  std::memset(op, 0, sizeof op);
  op[0].argop = OP_PUTFH;
  op[0].nfs_argop4_u.opputfh.object.nfs_fh4_len = static_cast<u_int>(f->fh.len);
  op[0].nfs_argop4_u.opputfh.object.nfs_fh4_val = f->fh.val;
  op[1].argop = second;
  stateid.seqid = f->stateid.seqid;
  std::memcpy(stateid.other, f->stateid.other, sizeof stateid.other);
}

}  // namespace

int read4_async(nfs_context* nfs, nfsfh* fh, uint64_t offset, uint32_t count, Read4Done done,
                void* priv, std::string& error) {
  const Libnfs400Fh* f = fh400(fh);
  if (!f) return 1;
  nfs_argop4 op[2];
  READ4args& r = op[1].nfs_argop4_u.opread;
  put_fh(op, f, OP_READ, r.stateid);
  r.offset = offset;
  r.count = count;
  COMPOUND4args args;
  std::memset(&args, 0, sizeof args);
  args.argarray.argarray_len = 2;
  args.argarray.argarray_val = op;
  rpc_context* rpc = nfs_get_rpc_context(nfs);
  auto call = std::make_unique<Read4Call>(Read4Call{done, priv});
  // A READ's arguments fit libnfs's 4 KiB encode buffer: its own call will do.
  if (rpc_nfs4_compound_async(rpc, on_read4_answer, &args, call.get()) != 0) {
    error = rpc_get_error(rpc) ? rpc_get_error(rpc) : "queueing the READ failed";
    return -1;
  }
  call.release();  // the callback owns it now
  return 0;
}

int write4_async(nfs_context* nfs, nfsfh* fh, uint64_t offset, uint64_t count, const char* buf,
                 Call* call, std::string& error) {
  const Libnfs400Fh* f = fh400(fh);
  if (!f || count > 0xffffffffu - kZdrEncodeBufMin) return 1;
  rpc_context* rpc = nfs_get_rpc_context(nfs);
  rpc_pdu* pdu =
      rpc_allocate_pdu2(rpc, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, on_write4_answer, call,
                        reinterpret_cast<zdrproc_t>(zdr_COMPOUND4res), sizeof(COMPOUND4res), count);
  if (!pdu) {
    error = rpc_get_error(rpc) ? rpc_get_error(rpc) : "out of memory";
    return -1;
  }
  // The encoder as rpc_allocate_pdu2 leaves it: its buffer sized to the hint,
  // past the record marker and the RPC call header (~100 bytes with AUTH_SYS).
  ZDR* zdr = &reinterpret_cast<Libnfs400Pdu*>(pdu)->zdr;
  if (zdr->x_op != ZDR_ENCODE || !zdr->buf ||
      zdr->size != static_cast<int>(kZdrEncodeBufMin + count) || zdr->pos <= 4 ||
      zdr->pos >= kZdrEncodeBufMin) {
    rpc_free_pdu(rpc, pdu);
    return 1;
  }
  nfs_argop4 op[2];
  WRITE4args& w = op[1].nfs_argop4_u.opwrite;
  put_fh(op, f, OP_WRITE, w.stateid);
  w.offset = offset;
  w.stable = UNSTABLE4;  // COMMIT at close, as libnfs and the Linux client
  w.data.data_len = static_cast<u_int>(count);
  w.data.data_val = const_cast<char*>(buf);  // encoding only reads it
  COMPOUND4args args;
  std::memset(&args, 0, sizeof args);
  args.argarray.argarray_len = 2;
  args.argarray.argarray_val = op;
  if (zdr_COMPOUND4args(zdr, &args) == 0) {
    rpc_free_pdu(rpc, pdu);
    error = fmt::format("encoding an NFSv4 WRITE of {} bytes failed", count);
    return -1;
  }
  if (rpc_queue_pdu(rpc, pdu) != 0) {  // (over TCP it only enqueues)
    error = rpc_get_error(rpc) ? rpc_get_error(rpc) : "queueing the WRITE failed";
    return -1;
  }
  return 0;
}
#endif

}  // namespace cp::transfer::nfs
