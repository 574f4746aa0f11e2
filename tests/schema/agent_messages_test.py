#!/usr/bin/env python3
"""Holds every message a real chokepoint-agent sends to the wire schema.

Starts the built agent (`chokepoint-agent --serve`), speaks the wire protocol
to it (schemas/agent-protocol.md: a sentinel line, then 4-byte big-endian
length + JSON frames), sends each kind of request on local files, loopback TCP
and the null protocol driver, and validates every frame it answers with
against schemas/agent-messages.schema.json; a result's data also against
$defs/result_<request type> where the schema has one. With CODEC_MESSAGES
(tests/schema/codec_messages.cc), also holds every request and result the
message codecs (core/messages_json.h) build to the same schema. Exits
non-zero, naming the message and the schema path, on the first frame that does
not conform.

usage: agent_messages_test.py AGENT_BINARY SCHEMA_FILE [CODEC_MESSAGES]
"""
import atexit
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import jsonschema


class Agent:
    def __init__(self, binary):
        self.proc = subprocess.Popen([binary, "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("CHOKEPOINT-AGENT READY proto=1 "):
            raise SystemExit(f"agent sentinel line wrong: {line!r}")
        self.next_id = 1

    def send(self, msg):
        data = json.dumps(msg).encode()
        self.proc.stdin.write(struct.pack(">I", len(data)) + data)
        self.proc.stdin.flush()

    def frame(self):
        head = self.proc.stdout.read(4)
        if len(head) != 4:
            raise SystemExit("agent closed the stream")
        (n,) = struct.unpack(">I", head)
        return json.loads(self.proc.stdout.read(n))

    # Sends one request; returns every frame up to and including its answer.
    def call(self, type_, **fields):
        rid = self.next_id
        self.next_id += 1
        self.send({"v": 1, "type": type_, "id": rid, **fields})
        frames = []
        while True:
            f = self.frame()
            frames.append(f)
            if f.get("type") in ("result", "error") and f.get("id") == rid:
                return frames


# The requests (and the progress and error frames) and the results
# core/messages_json.h has a codec for.
CODEC_REQUESTS = {"facts", "disk", "files", "tcp_listen", "tcp_run", "tcp_result", "make_file",
                  "file_info", "remove_file", "transfer", "sweep", "files_share", "prepare",
                  "sweep_orphans", "check_space", "hello", "smb_status", "stats", "cleanup", "bye",
                  "progress", "error", "tune_plan", "tune_apply", "tune_confirm", "tune_revert"}
CODEC_RESULTS = {"disk", "files", "tcp_listen", "tcp_run", "tcp_result", "make_file", "file_info",
                 "transfer", "sweep", "files_share", "remove_file", "prepare", "sweep_orphans",
                 "check_space", "hello", "smb_status", "stats", "cleanup", "bye", "tune_plan",
                 "tune_apply", "tune_confirm", "tune_revert"}


def check_codecs(binary, validator, defs):
    out = subprocess.run([binary], check=True, capture_output=True, text=True).stdout
    requests, results = set(), set()
    for line in out.splitlines():
        m = json.loads(line)
        if "result" in m:
            kind = m["result"]
            if f"result_{kind}" not in defs:
                raise SystemExit(f"codec result '{kind}': the schema has no $defs/result_{kind}")
            sub = dict(defs[f"result_{kind}"])
            sub["$defs"] = defs
            errors = list(jsonschema.Draft202012Validator(sub).iter_errors(m["data"]))
            results.add(kind)
        else:
            kind = m["type"]
            errors = list(validator.iter_errors(m))
            requests.add(kind)
        if errors:
            e = errors[0]
            raise SystemExit(f"codec message {line[:300]} breaks the schema at "
                             f"{list(e.absolute_path)}: {e.message}")
    # Every codec printed, the facts result's (core/facts_message_json.h) among them.
    if requests != CODEC_REQUESTS or results != CODEC_RESULTS | {"facts"}:
        raise SystemExit(f"codec_messages printed requests {sorted(requests)} and results "
                         f"{sorted(results)}, not every codec's")
    return requests, results


def main():
    binary, schema_path = sys.argv[1], sys.argv[2]
    schema = json.load(open(schema_path))
    validator = jsonschema.Draft202012Validator(schema)
    defs = schema.get("$defs", {})
    checked = {}

    def check(request, frames, want="result"):
        for f in frames:
            errors = sorted(validator.iter_errors(f), key=lambda e: e.path)
            if errors:
                e = errors[0]
                raise SystemExit(f"{request}: frame {json.dumps(f)[:300]} breaks the schema at "
                                 f"{list(e.absolute_path)}: {e.message}")
        answer = frames[-1]
        if answer["type"] != want:
            raise SystemExit(f"{request}: expected {want}, got {json.dumps(answer)[:500]}")
        if want == "result" and f"result_{request}" in defs:
            sub = dict(defs[f"result_{request}"])
            sub["$defs"] = defs
            errors = list(jsonschema.Draft202012Validator(sub).iter_errors(answer["data"]))
            if errors:
                e = errors[0]
                raise SystemExit(f"{request}: result data breaks $defs/result_{request} at "
                                 f"{list(e.absolute_path)}: {e.message}\n"
                                 f"{json.dumps(answer['data'])[:800]}")
            checked[request] = checked.get(request, 0) + 1
        return answer

    # The tune journal goes to a directory of the test's own.
    state = tempfile.mkdtemp(prefix="chokepoint-schema-tune-")
    atexit.register(shutil.rmtree, state, True)
    os.environ["CHOKEPOINT_TUNE_STATE_DIR"] = state
    a = Agent(binary)
    with tempfile.TemporaryDirectory() as tmp:
        ram, disk = os.path.join(tmp, "ram"), os.path.join(tmp, "disk")
        os.mkdir(ram)
        os.mkdir(disk)
        check("hello", a.call("hello"))
        check("facts", a.call("facts", ram_dir=ram, disk_dir=disk, peer_address="127.0.0.1"))
        # A run dir whose agent is gone (a pid that no longer runs): swept.
        orphan = os.path.join(disk, "chokepoint-run-gone01")
        os.mkdir(orphan)
        dead = subprocess.Popen(["true"])
        dead.wait()
        with open("/proc/sys/kernel/random/boot_id") as b:
            boot = b.read().strip()
        with open(os.path.join(orphan, ".chokepoint-owner"), "w") as o:
            json.dump({"pid": dead.pid, "start_ticks": 1, "boot_id": boot,
                       "host": os.uname().nodename, "pid_ns": os.readlink("/proc/self/ns/pid"),
                       "run": 1}, o)
        swept = check("prepare", a.call("prepare", dirs=[ram, disk], run=7))["data"]["swept"]
        if [s["path"] for s in swept] != [orphan]:
            raise SystemExit(f"prepare swept {swept}, not {orphan}")
        check("sweep_orphans", a.call("sweep_orphans", dirs=[ram, disk]))
        check("check_space", a.call("check_space", dir=disk, bytes=1 << 20))
        mib = 1 << 20
        check("disk", a.call("disk", dir=disk, op="write", name="d.dat", size=4 * mib, block=mib))
        check("disk", a.call("disk", dir=disk, op="read", name="d.dat", block=mib,
                             delete_after=True))
        check("files", a.call("files", dir=disk, name="files-1", count=50, size=4096, dirs=5,
                              order="random", seed=3, budget=10))
        check("files", a.call("files", dir=disk, name="../escape", count=5, size=1), "error")
        port = check("tcp_listen", a.call("tcp_listen", bind="127.0.0.1",
                                          tokens=["t1"]))["data"]["port"]
        check("tcp_run", a.call("tcp_run", host="127.0.0.1", port=port, token="t1", mode="send",
                                seconds=0.3, buffer=131072))
        check("tcp_result", a.call("tcp_result", token="t1", timeout=10))
        # A request that waits 2.5 s: heartbeats (one a second) before its error.
        frames = a.call("tcp_result", token="never", timeout=2.5)
        check("tcp_result", frames, "error")
        if not any(f["type"] == "heartbeat" for f in frames):
            raise SystemExit("no heartbeat during a 2.5 s request")
        check("make_file", a.call("make_file", dir=ram, name="m.dat", size=mib))
        check("file_info", a.call("file_info", dir=ram, name="m.dat"))
        check("remove_file", a.call("remove_file", dir=ram, name="m.dat"))
        check("cpu_start", a.call("cpu_start"))
        check("cpu_stop", a.call("cpu_stop"))
        share = {"name": "n", "url": "null:", "driver": "null", "user": "", "options": {}}
        check("transfer", a.call("transfer", share=share, op="read", remote="r.dat", dir=ram,
                                 name="t.dat", size=2 * mib, block=mib, delete_after=True))
        check("sweep", a.call("sweep", share=share, remote="s.dat", pattern="seqread",
                              request=65536, bytes=mib, file_size=mib))
        check("close_shares", a.call("close_shares"))
        # A peer's bad input: answered with an error frame that holds to the schema too.
        check("disk", a.call("disk", dir=disk, op="read", name="../escape", block=mib), "error")
        # Tuning: a plan changes nothing; confirm and revert with nothing applied.
        check("tune_plan", a.call("tune_plan", knob="server.tcp_rmem", value="4096 131072 6291456"))
        check("tune_plan", a.call("tune_plan", knob="server.nope", value="1"), "error")
        check("tune_confirm", a.call("tune_confirm"))
        check("tune_revert", a.call("tune_revert"))
        check("stats", a.call("stats"))
        check("cleanup", a.call("cleanup"))
        check("bye", a.call("bye"))
    a.proc.wait(timeout=10)
    codec_requests, codec_results = (check_codecs(sys.argv[3], validator, defs)
                                     if len(sys.argv) > 3 else (set(), set()))
    # Every $defs/result_X is held to something: the live agent's answer, or
    # (smb_status needs a running smbd, tune_apply changes the host) the codec's.
    missing = sorted(k[len("result_"):] for k in defs if k.startswith("result_")
                     and k[len("result_"):] not in checked
                     and k[len("result_"):] not in codec_results)
    if missing:
        raise SystemExit(f"no request exercised $defs for: {missing}")
    print(f"ok: {sum(checked.values())} results checked against their $defs, "
          f"every frame against the schema; "
          f"{len(codec_requests) + len(codec_results)} codec message kinds too")


if __name__ == "__main__":
    main()
