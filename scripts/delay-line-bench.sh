#!/usr/bin/env bash
# Measures the lab's path with a delay (netem, or the delay line where the
# kernel has no netem): ping RTT and iperf3 throughput (single stream, each
# direction) through `lab up --delay D` at a few path rates. Runs on its own
# lab instance (never 0, a user's lab) and takes it down at the end.
# Usage (root): scripts/delay-line-bench.sh [--delay 5ms] [--instance N] [--seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
DELAY=5ms
INSTANCE=${CHOKEPOINT_TEST_LAB_INSTANCE:-9}
SECONDS_EACH=8
source bench/lib.sh
parse_options "--delay DELAY --instance INSTANCE --seconds SECONDS_EACH" \
  "$0 [--delay 5ms] [--instance N] [--seconds S]" "$@"
if [[ $INSTANCE == 0 ]]; then
  echo "$0: instance 0 is the user's lab; give --instance 1..99" >&2
  exit 2
fi
CP=./build/bin/chokepoint
[[ -x $CP ]] || bash scripts/build.sh >/dev/null
export CHOKEPOINT_LAB_INSTANCE=$INSTANCE
unset CHOKEPOINT_LAB_DIR
trap '$CP lab down >/dev/null' EXIT
server_ns=cp-server-$INSTANCE
client_ns=cp-client-$INSTANCE
addr=198.19.$INSTANCE.1

iperf() {  # $1: extra iperf3 client flags; prints Gbit/s received
  ip netns exec "$server_ns" iperf3 -s -1 -B "$addr" -D
  sleep 0.5
  ip netns exec "$client_ns" iperf3 -c "$addr" -t "$SECONDS_EACH" -O 2 -J $1 |
    python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))'
}

printf '%-12s %-12s %-14s %-16s %-16s\n' delay path-rate "mode" "rtt min (ms)" "Gbit/s c->s / s->c"
for rate in 0 1gbit 100mbit; do
  $CP lab up --delay "$DELAY" --path-rate "$rate" --disk-size 64MiB --ram-size 64MiB >/dev/null
  mode=$($CP lab status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"]["delay_mode"])')
  rtt=$(ip netns exec "$client_ns" ping -n -q -c 10 -i 0.2 "$addr" | sed -n 's|^rtt [^=]*= \([^/]*\)/.*|\1|p')
  up=$(iperf "")
  down=$(iperf "-R")
  printf '%-12s %-12s %-14s %-16s %-16s\n' "$DELAY" "$rate" "$mode" "$rtt" "$up / $down"
done
