#!/usr/bin/env python3
"""Counts the NFS requests in a capture (tcpdump -w, Ethernet or Linux
cooked, TCP port 2049): NFSv3 per procedure; NFSv4 COMPOUNDs per their
first operation past PUTFH, PUTROOTFH, a path's LOOKUPs, GETFH, GETATTR and
ACCESS (libnfs's OPEN walks the path and asks the directory's attributes
first: it counts as OPEN; a COMPOUND of only those, a stat, as GETATTR).
Each request once (a retransmitted xid is not counted again). Used to hold
the nfs driver's small-file calls against what it reports
(docs/small-files.md, "Round trips").

Usage: nfs_count.py CAPTURE.pcap [--files N]
  N: the requests per file too (the capture's total over N)
"""
import collections
import struct
import sys

V3 = ["NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE", "CREATE",
      "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS",
      "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"]
V4 = {3: "ACCESS", 4: "CLOSE", 5: "COMMIT", 6: "CREATE", 9: "GETATTR", 10: "GETFH", 15: "LOOKUP",
      18: "OPEN", 20: "OPEN_CONFIRM", 25: "READ", 26: "READDIR", 28: "REMOVE", 30: "RENEW",
      34: "SETATTR", 35: "SETCLIENTID", 36: "SETCLIENTID_CONFIRM", 38: "WRITE"}
PUTFH, PUTROOTFH, LOOKUP, GETATTR, GETFH, ACCESS = 22, 24, 15, 9, 10, 3


def payloads(path):
    """The TCP payloads sent to port 2049, in capture order."""
    with open(path, "rb") as f:
        head = f.read(24)
        endian = "<" if struct.unpack("<I", head[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        linktype = struct.unpack(endian + "I", head[20:24])[0]
        skip = {1: 14, 113: 16, 276: 20}.get(linktype)
        if skip is None:
            sys.exit(f"nfs_count.py: link type {linktype} (want Ethernet or Linux cooked)")
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            incl = struct.unpack(endian + "IIII", rec)[2]
            ip = f.read(incl)[skip:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            tcp = ip[(ip[0] & 15) * 4:]
            if len(tcp) >= 20 and struct.unpack(">H", tcp[2:4])[0] == 2049:
                yield tcp[(tcp[12] >> 4) * 4:]


def u32(b, o):
    return struct.unpack(">I", b[o:o + 4])[0]


def opaque_end(b, o):
    """Where a length-prefixed XDR opaque starting at o ends."""
    return o + 4 + ((u32(b, o) + 3) & ~3)


def request(p):
    """(version, name) of the RPC call at the head of a segment, else None."""
    if len(p) < 48 or u32(p, 8) != 0 or u32(p, 16) != 100003:
        return None
    vers, proc = u32(p, 20), u32(p, 24)
    if vers == 3:
        return 3, V3[proc] if proc < len(V3) else str(proc)
    if vers != 4 or proc != 1:
        return (vers, "NULL") if proc == 0 else None
    o = opaque_end(p, 32)  # past the credential (flavor at 28)
    o = opaque_end(p, o + 4)  # past the verifier
    o = opaque_end(p, o) + 4  # past the tag and minorversion
    count, o = u32(p, o), o + 4
    asked_attrs = False
    for _ in range(count):
        op, o = u32(p, o), o + 4
        if op in (PUTFH, LOOKUP):
            o = opaque_end(p, o)
        elif op == GETATTR:
            o += 4 + 4 * u32(p, o)  # its bitmap4
            asked_attrs = True
        elif op == ACCESS:
            o += 4
        elif op not in (PUTROOTFH, GETFH):
            return 4, V4.get(op, str(op))
    return 4, "GETATTR" if asked_attrs else "LOOKUP"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    files = int(sys.argv[sys.argv.index("--files") + 1]) if "--files" in sys.argv else 0
    seen, counts = set(), collections.Counter()
    for p in payloads(sys.argv[1]):
        try:
            r = request(p)
        except (struct.error, IndexError):
            continue  # a segment that does not start a call (the rest of a WRITE)
        if r and u32(p, 4) not in seen:
            seen.add(u32(p, 4))
            counts[r] += 1
    total = sum(counts.values())
    for (vers, name), n in sorted(counts.items()):
        print(f"  NFSv{vers} {name:<20} {n:7d}" + (f" {n / files:7.2f}/file" if files else ""))
    print(f"  {'total':<26} {total:7d}" + (f" {total / files:7.2f}/file" if files else ""))


if __name__ == "__main__":
    main()
