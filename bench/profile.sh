#!/usr/bin/env bash
# Profiles `oa-bridge serve` with `perf record` (software event cpu-clock: this VM has no hardware counters, and
# valgrind 3.19 cannot run the Swift 6.3 binary) on the paths issue 14 measures, and writes the top of each profile
# (inclusive and self, by function, demangled) as text, with the server's CPU time per message (from /proc: on a
# shared machine CPU time per message is steadier than wall-clock rates).
#
#   bench/profile.sh BIN_DIR OUT_DIR [LABEL]
#
# Cases: rpc-1 (1 client, REQUESTS round trips of the trivial request), relay-1 and relay-10 (UPDATES updates to 1 and
# 10 clients). Sampling starts once `serve` listens (start-up is not counted); the agent is launched on the first
# client's `initialize`, inside the sampled part. Bounded: every step has a timeout. Only loopback. Needs perf.
set -euo pipefail
BIN_DIR=$(realpath "$1")
OUT_DIR=$(realpath -m "$2")
LABEL=${3:-profile}
REQUESTS=${REQUESTS:-3000}
UPDATES=${UPDATES:-3000}
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT_DIR"
export FLOOD_COUNT=$UPDATES
WORK=$(mktemp -d /tmp/oa-profile.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The TCP port process $1 listens on, read from /proc (its sockets and /proc/net/tcp{,6}): serve binds port 0 and the
# kernel picks a port nobody holds (a port bound, closed and handed on can be taken by another program first).
listening_port() {
    timeout 30 python3 - "$1" "$REPO/Tests/system" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[2])
from loopback import listening_port_of  # the tests' own reader (stdlib only)
while (port := listening_port_of(int(sys.argv[1]))) is None:
    time.sleep(0.01)
print(port)
PY
}
wait_port() {
    for _ in $(seq 1 600); do
        if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),timeout=0.2).close()" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "nothing listening on $1" >&2; return 1
}

# run_case NAME CLIENT-ARGS... ; env AGENT (the agent command, one string), FLOOD_COUNT for the agent.
run_case() {
    local name=$1; shift
    local out="$WORK/perf.$name.data"
    local extra=()
    if [ -n "${AGENT:-}" ]; then extra=(--agent "$AGENT"); fi
    "$BIN_DIR/oa-bridge" serve --host 127.0.0.1 --port 0 --auth none --discovery off \
        --state-dir "$WORK/state-$name" --log-level error "${extra[@]}" >"$WORK/$name.serve.log" 2>&1 &
    local pid=$!
    local port; port=$(listening_port "$pid")
    wait_port "$port"
    local cpu0; cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    perf record -e cpu-clock -F "${FREQ:-4000}" -g -p "$pid" -o "$out" >/dev/null 2>&1 &
    local perf_pid=$!
    sleep 0.5
    timeout 600 "$BIN_DIR/bench" "$@" --url "ws://127.0.0.1:$port/" | tail -1 | tee "$WORK/$name.client.json"
    kill -INT "$perf_pid"; wait "$perf_pid" || true
    local cpu1; cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill -TERM "$pid"; wait "$pid" || true
    local ticks; ticks=$(getconf CLK_TCK)
    {
        echo "# perf record -e cpu-clock -g: oa-bridge serve, case $name ($*), label $LABEL, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "# client result: $(cat "$WORK/$name.client.json")"
        echo "# serve CPU time while the client ran (utime+stime, /proc): $(( (cpu1 - cpu0) * 1000 / ticks )) ms"
        echo
        python3 "$REPO/bench/perf_top.py" "$out" "$BIN_DIR/oa-bridge" 70 "$pid"
    } >"$OUT_DIR/$LABEL-$name.txt"
    echo "wrote $OUT_DIR/$LABEL-$name.txt"
}

run_case rpc-1 load --clients 1 --seconds 60 --max-requests "$REQUESTS" --initialize yes
AGENT="python3 $REPO/bench/flood_agent.py" FLOOD_COUNT=$UPDATES run_case relay-1 relay --clients 1 --count "$UPDATES" --timeout 120
AGENT="python3 $REPO/bench/flood_agent.py" FLOOD_COUNT=$UPDATES run_case relay-10 relay --clients 10 --count "$UPDATES" --timeout 120
