#!/usr/bin/env python3
"""Reads an FTP control connection from a capture (tcpdump -w, TCP port 21)
and prints, for each command verb, how many the client sent (per file with
--files), and the median time from one STOR (or RETR) to the next: a
client's pace per file, measured on the wire, so that the noise of a loaded
machine's wall clock (process start, login) stays out of the comparison.
Used to hold chokepoint's small-file pass over FTP against lftp's mirror
(docs/benchmarks.md, "Small files over a share").

Usage: ftp_cadence.py CAPTURE.pcap [--files N]   (needs tcpdump to read it)
"""
import collections
import re
import statistics
import subprocess
import sys

VERB = re.compile(r"^(\d+\.\d+) IP \S+ > \S+\.(?:ftp|21): .*FTP: ([A-Z]{3,4})\b")


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    files = 0
    if "--files" in args:
        files = int(args[args.index("--files") + 1])
    text = subprocess.run(["tcpdump", "-r", args[0], "-tt", "-n"],
                          capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    times = collections.defaultdict(list)
    for line in text.splitlines():
        m = VERB.match(line)
        if not m:
            continue
        verb = m.group(2)
        counts[verb] += 1
        times[verb].append(float(m.group(1)))
    for verb, n in counts.most_common():
        per = f"  {n / files:.2f} per file" if files else ""
        print(f"{verb:<5} {n:6d}{per}")
    for verb in ("STOR", "RETR"):
        t = times.get(verb, [])
        gaps = [b - a for a, b in zip(t, t[1:])]
        if gaps:
            med = statistics.median(gaps)
            print(f"{verb} to {verb}: median {med * 1e3:.3f} ms ({1 / med:.0f} files/s), "
                  f"p90 {sorted(gaps)[int(len(gaps) * 0.9)] * 1e3:.3f} ms over {len(gaps)} gaps")


if __name__ == "__main__":
    main()
