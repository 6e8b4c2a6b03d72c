#!/usr/bin/env python3
"""Paired A/B of two oa-bridge builds on one kind of round trip (issue 32): both servers run at once and take turns, A
then B, then B then A, ROUNDS times; each turn's server CPU per request (utime + stime from /proc) is paired with the
other's in the same round, and the median of the B/A ratios is printed beside both medians.

  bench/ab_pairs.py A_DIR B_DIR BENCH_BIN SCHEME CLIENTS ROUNDS REQUESTS

Only loopback; bounded; take /tmp/bench.lock while it runs.
"""
import json
import os
import statistics
import subprocess
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tempfile  # noqa: E402

from ab import TICK, Server, cpu_ticks, reserved_port  # noqa: E402

a, b, bench, scheme, n, rounds, reqs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
state = tempfile.mkdtemp(prefix="oa-pair-")
srvs = {}
for label, d in (("A", a), ("B", b)):
    hold, port = reserved_port()
    srvs[label] = (Server([os.path.join(d, "oa-bridge"), "serve", "--host", "127.0.0.1", "--port", str(port), "--auth", "none",
                           "--discovery", "off", "--state-dir", state + label, "--log-level", "error", "--max-pending-per-address", "300"], port, hold), port)
res = {"A": [], "B": []}
try:
    for label in ("A", "B"):
        srv, port = srvs[label]
        subprocess.run([bench, "load", "--url", f"{scheme}://127.0.0.1:{port}/", "--clients", str(n), "--seconds", "1", "--initialize", "yes"], capture_output=True, timeout=60)
    for r in range(rounds):
        for label in (("A", "B") if r % 2 == 0 else ("B", "A")):
            srv, port = srvs[label]
            c0 = cpu_ticks(srv.p.pid)
            out = subprocess.run([bench, "load", "--url", f"{scheme}://127.0.0.1:{port}/", "--clients", str(n), "--seconds", "30",
                                  "--max-requests", str(reqs // n), "--initialize", "yes"], capture_output=True, text=True, timeout=120).stdout
            j = json.loads(out.strip().splitlines()[-1])
            cpu = (cpu_ticks(srv.p.pid) - c0) * 1e6 / TICK / j["requests"]
            res[label].append((cpu, j["rps"]))
    ratios = [res["B"][i][0] / res["A"][i][0] for i in range(rounds)]
    print(f"{scheme} {n} clients, {rounds} pairs, load {os.getloadavg()[0]:.1f}")
    print("  A cpu", [round(x[0], 1) for x in res["A"]], "median", round(statistics.median(x[0] for x in res["A"]), 1), "rps median", round(statistics.median(x[1] for x in res["A"])))
    print("  B cpu", [round(x[0], 1) for x in res["B"]], "median", round(statistics.median(x[0] for x in res["B"]), 1), "rps median", round(statistics.median(x[1] for x in res["B"])))
    print("  B/A per pair", [round(x, 2) for x in ratios], "median", round(statistics.median(ratios), 3))
finally:
    for srv, _ in srvs.values(): srv.stop()
