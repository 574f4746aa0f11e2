#!/usr/bin/env python3
# A hostile agent for SecurityHostilePeer (security_peer_test.cc): it runs the
# real agent ($CP_REAL_AGENT --serve) behind it and relays both ways until the
# orchestrator's $CP_HOSTILE_AT-th request of type $CP_HOSTILE_TYPE. From then
# on it only sends heartbeats for that request (every 0.5 s), forever: alive,
# never answering. Only the first of several such agents to get there turns
# (it creates $CP_HOSTILE_MARK). On EOF or SIGTERM it stops the real agent.
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time

real = subprocess.Popen([os.environ["CP_REAL_AGENT"], "--serve"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, bufsize=0)


def stop(*_):
    real.terminate()
    try:
        real.wait(5)
    except subprocess.TimeoutExpired:
        pass
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
want_type = os.environ["CP_HOSTILE_TYPE"]
want_at = int(os.environ["CP_HOSTILE_AT"])
seen = 0
hostile_id = None
pending = b""
from_agent = b""
sentinel_sent = False
out = sys.stdout.buffer
last_beat = 0.0


def frame(msg):
    body = json.dumps(msg).encode()
    return struct.pack(">I", len(body)) + body


while True:
    r, _, _ = select.select([sys.stdin.buffer, real.stdout], [], [], 0.1)
    if sys.stdin.buffer in r:
        data = os.read(sys.stdin.fileno(), 65536)
        if not data:
            stop()
        pending += data
        while len(pending) >= 4:
            n = struct.unpack(">I", pending[:4])[0]
            if len(pending) < 4 + n:
                break
            raw, pending = pending[:4 + n], pending[4 + n:]
            msg = json.loads(raw[4:])
            if hostile_id is None and msg.get("type") == want_type:
                seen += 1
                if seen == want_at:
                    try:
                        os.close(os.open(os.environ["CP_HOSTILE_MARK"],
                                         os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                        hostile_id = msg["id"]
                        continue
                    except FileExistsError:
                        pass
            if hostile_id is None:
                real.stdin.write(raw)
    if real.stdout in r:
        data = os.read(real.stdout.fileno(), 65536)
        if not data:
            stop()
        from_agent += data
        # The sentinel line, then whole frames only: a heartbeat of ours never
        # lands inside one of the agent's.
        if not sentinel_sent and b"\n" in from_agent:
            line, from_agent = from_agent.split(b"\n", 1)
            out.write(line + b"\n")
            sentinel_sent = True
        while sentinel_sent and len(from_agent) >= 4:
            n = struct.unpack(">I", from_agent[:4])[0]
            if len(from_agent) < 4 + n:
                break
            raw, from_agent = from_agent[:4 + n], from_agent[4 + n:]
            if hostile_id is None:
                out.write(raw)
        out.flush()
    if hostile_id is not None and time.monotonic() - last_beat >= 0.5:
        last_beat = time.monotonic()
        out.write(frame({"v": 1, "type": "heartbeat", "id": hostile_id}))
        out.flush()
