#!/usr/bin/env python3
"""Counts the SMB2 requests in a capture (tcpdump -w, Ethernet or Linux
cooked, TCP port 445): per command, the requests a client sent, the frames
they went in (a compound is one frame: one round trip when the client waits
for it) and the responses' non-success statuses. Used to hold chokepoint's
small-file pass against smbclient's mput/mget request by request
(docs/small-files.md, "Where the SMB time goes").

Usage: smb2_count.py CAPTURE.pcap [--files N] [--dump M]
  N: per-file figures too; M: the first M requests in order, with their answers
Unencrypted SMB2/3 only (signing is fine: the headers are in clear).
"""
import collections
import struct
import sys

COMMANDS = ["NEGOTIATE", "SESSION_SETUP", "LOGOFF", "TREE_CONNECT", "TREE_DISCONNECT", "CREATE",
            "CLOSE", "FLUSH", "READ", "WRITE", "LOCK", "IOCTL", "CANCEL", "ECHO",
            "QUERY_DIRECTORY", "CHANGE_NOTIFY", "QUERY_INFO", "SET_INFO", "OPLOCK_BREAK"]
STATUS = {0xC0000011: "END_OF_FILE", 0xC0000034: "OBJECT_NAME_NOT_FOUND",
          0x80000006: "NO_MORE_FILES", 0xC0000016: "MORE_PROCESSING_REQUIRED",
          0x00000103: "PENDING", 0xC0000022: "ACCESS_DENIED", 0xC0000035: "OBJECT_NAME_COLLISION"}


def packets(path):
    with open(path, "rb") as f:
        head = f.read(24)
        magic = struct.unpack("<I", head[:4])[0]
        endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        linktype = struct.unpack(endian + "I", head[20:24])[0]
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            _, _, incl, _ = struct.unpack(endian + "IIII", rec)
            yield linktype, f.read(incl)


def tcp_payload(linktype, p):
    if linktype == 1:  # Ethernet
        off, proto = 14, struct.unpack(">H", p[12:14])[0]
        while proto == 0x8100:  # VLAN
            proto = struct.unpack(">H", p[off + 2:off + 4])[0]
            off += 4
    elif linktype == 113:  # Linux cooked v1
        off, proto = 16, struct.unpack(">H", p[14:16])[0]
    elif linktype == 276:  # Linux cooked v2
        off, proto = 20, struct.unpack(">H", p[0:2])[0]
    else:
        raise SystemExit(f"smb2_count: link type {linktype} not handled (capture with -i IFACE)")
    if proto == 0x0800:
        ihl = (p[off] & 0x0F) * 4
        if p[off + 9] != 6:
            return None
        src, dst = p[off + 12:off + 16], p[off + 16:off + 20]
        off += ihl
    elif proto == 0x86DD:
        if p[off + 6] != 6:
            return None
        src, dst = p[off + 8:off + 24], p[off + 24:off + 40]
        off += 40
    else:
        return None
    sport, dport, seq = struct.unpack(">HHI", p[off:off + 8])
    doff = (p[off + 12] >> 4) * 4
    return (src, sport, dst, dport), seq, p[off + doff:]


def main():
    args = sys.argv[1:]
    files = None
    dump = 0
    if "--dump" in args:  # the first N requests in order, with their answers
        i = args.index("--dump")
        dump = int(args[i + 1])
        del args[i:i + 2]
    if "--files" in args:
        i = args.index("--files")
        files = int(args[i + 1])
        del args[i:i + 2]
    streams = collections.OrderedDict()  # flow -> [next seq, bytes]
    for lt, p in packets(args[0]):
        got = tcp_payload(lt, p)
        if not got:
            continue
        flow, seq, data = got
        if not data or 445 not in (flow[1], flow[3]):
            continue
        s = streams.setdefault(flow, [seq, bytearray()])
        if seq != s[0] and (seq - s[0]) % 2**32 >= 2**31:
            continue  # a retransmission: seen already
        s[1] += data
        s[0] = (seq + len(data)) % 2**32
    req = collections.Counter()
    frames = 0
    statuses = collections.Counter()
    trace = []  # (message id, text) of each request, in the order sent
    answer = {}  # message id -> its response's status name
    for flow, (_, buf) in streams.items():
        to_server = flow[3] == 445
        off = 0
        while off + 4 <= len(buf):
            n = struct.unpack(">I", b"\0" + bytes(buf[off + 1:off + 4]))[0]
            frame = buf[off + 4:off + 4 + n]
            off += 4 + n
            if frame[:4] != b"\xfeSMB":
                continue  # SMB1 negotiate or an encrypted frame
            if to_server:
                frames += 1
            h = 0
            while True:
                cmd = struct.unpack("<H", frame[h + 12:h + 14])[0]
                status = struct.unpack("<I", frame[h + 8:h + 12])[0]
                name = COMMANDS[cmd] if cmd < len(COMMANDS) else f"0x{cmd:x}"
                mid = struct.unpack("<Q", frame[h + 24:h + 32])[0]
                if to_server:
                    req[name] += 1
                    text = name
                    if name == "CREATE":  # the path: NameOffset/NameLength, UTF-16
                        no, nl = struct.unpack("<HH", frame[h + 64 + 44:h + 64 + 48])
                        text += " " + bytes(frame[h + no:h + no + nl]).decode("utf-16-le", "replace")
                    if name in ("READ", "WRITE"):
                        text += " %d@%d" % struct.unpack("<IQ", frame[h + 64 + 4:h + 64 + 16])
                    trace.append((mid, text))
                else:
                    answer[mid] = "OK" if status == 0 else STATUS.get(status, hex(status))
                    if status != 0:
                        statuses[f"{name}:{STATUS.get(status, hex(status))}"] += 1
                nxt = struct.unpack("<I", frame[h + 20:h + 24])[0]
                if not nxt:
                    break
                h += nxt
    if dump:
        for mid, text in trace[:dump]:
            print(f"{text} -> {answer.get(mid, '?')}")
    total = sum(req.values())
    print(f"requests {total} frames {frames}" +
          (f" per_file {total / files:.2f} frames_per_file {frames / files:.2f}" if files else ""))
    for name, n in req.most_common():
        print(f"  {name:16} {n:7}" + (f" {n / files:6.2f}/file" if files else ""))
    for name, n in statuses.most_common():
        print(f"  status {name:30} {n:7}" + (f" {n / files:6.2f}/file" if files else ""))


main()
