#!/usr/bin/env python3
"""A/B of two oa-bridge builds side by side (issue 32): the servers take turns, and each turn measures the server's CPU
time per round trip and per new connection (utime + stime from /proc, steadier than rates on a shared machine), with
the bare NIO echo (`bench nioecho --mode loop`) in the same turns as the stack's floor.

  bench/ab.py --a DIR --b DIR [--bench DIR/bench] [--turns 3] [--cases rpc,reconnect] [--json-out FILE]

DIR holds an `oa-bridge` build (A = before, B = after); `bench` (the load generator and the echo) comes from --bench,
default B's. Cases: rpc (round trips of the trivial request at 1 and 64 clients, ws:// and wss://, REQUESTS each),
reconnect (closed loop, 50 clients for 3 s; then 50 at once x 20 rounds; ws:// and wss://), relay (20,000 updates
to 1 and 10 clients over ws://, bench/flood_agent.py as the agent). Only loopback; every step is bounded in count and
time. Take /tmp/bench.lock while it runs (`flock /tmp/bench.lock bench/ab.py ...`).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def reserved_port():
    """A port held bound (SO_REUSEADDR) until the server, which binds with SO_REUSEADDR too, listens on it."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    return s, s.getsockname()[1]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class Server:
    def __init__(self, argv, port, hold):
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        try:
            while time.time() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    return
                except OSError:
                    if self.p.poll() is not None:
                        raise RuntimeError(f"{argv[0]} exited: {self.p.returncode}")
                    time.sleep(0.05)
        finally:
            # Held until the server listens (or gave up): no other socket could take the port meanwhile.
            hold.close()
        self.stop()
        raise RuntimeError(f"nothing listening on {port}")

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(10)


def bench(bench_bin, args, timeout=180):
    out = subprocess.run([bench_bin, *args], capture_output=True, text=True, timeout=timeout).stdout
    return json.loads(out.strip().splitlines()[-1])


def measure(srv, bench_bin, args, count_key):
    c0 = cpu_ticks(srv.p.pid)
    r = bench(bench_bin, args)
    r["cpu_us"] = (cpu_ticks(srv.p.pid) - c0) * 1e6 / TICK / max(r[count_key], 1)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--bench")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--cases", default="rpc,reconnect")
    ap.add_argument("--requests", type=int, default=int(os.environ.get("REQUESTS", "20000")))
    ap.add_argument("--no-echo", action="store_true")
    ap.add_argument("--goref", help="the Go reference's binary (bench/goref built), measured in the same turns as the echo")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    bench_bin = a.bench or os.path.join(a.b, "bench")
    cases = a.cases.split(",")
    state = tempfile.mkdtemp(prefix="oa-bench-ab-")
    # One identity for every server (the first start of serve makes it).
    hold, port = reserved_port()
    Server([os.path.join(a.a, "oa-bridge"), "serve", "--host", "127.0.0.1", "--port", str(port), "--auth", "none",
            "--discovery", "off", "--state-dir", state, "--log-level", "error"], port, hold).stop()
    cert, key = os.path.join(state, "tls-cert.pem"), os.path.join(state, "tls-key.pem")
    flood = f"python3 {REPO}/bench/flood_agent.py"

    def bridge(bin_dir, agent=False):
        def start(port, hold):
            extra = ["--max-pending-per-address", "300"] + (["--agent", flood] if agent else [])
            return Server([os.path.join(bin_dir, "oa-bridge"), "serve", "--host", "127.0.0.1", "--port", str(port),
                           "--auth", "none", "--discovery", "off", "--state-dir", state, "--log-level", "error", *extra],
                          port, hold)
        return start

    def echo(scheme):
        def start(port, hold):
            tls = ["--cert", cert, "--key", key] if scheme == "wss" else []
            return Server([bench_bin, "nioecho", "--mode", "loop", "--port", str(port), *tls], port, hold)
        return start

    def goref(scheme):
        def start(port, hold):
            tls = ["-cert", cert, "-key", key] if scheme == "wss" else []
            return Server([a.goref, "-port", str(port), *tls], port, hold)
        return start

    references = ([] if a.no_echo else [("echo", echo)]) + ([("go", goref)] if a.goref else [])

    results = {}
    load = []

    def add(key_, value):
        results.setdefault(key_, []).append(value)

    def round_trips(turn, label, srv, scheme, url, initialize):
        """Round trips at 1 and 64 clients against `srv` (`initialize` "no" for the echo, which answers nothing)."""
        for n in (1, 64):
            r = measure(srv, bench_bin, ["load", "--url", url, "--clients", str(n), "--seconds", "20",
                                         "--max-requests", str(a.requests // n), "--initialize", initialize], "requests")
            add(f"{label} rpc {scheme} {n}", r)
            print(f"turn {turn + 1} {label} rpc {scheme} {n:2}: {r['rps']:8.0f} req/s  {r['cpu_us']:6.1f} us/request  "
                  f"p50 {r.get('p50_ms', 0):.3f} ms (errors {r.get('errors', 0)})", flush=True)

    def reconnects(turn, label, srv, scheme, url):
        """New connections against `srv`: a closed loop of 50 clients for 3 s, then 20 bursts of 50 at once."""
        for mode, extra in (("loop", ["--seconds", "3"]), ("burst", ["--rounds", "20"])):
            r = measure(srv, bench_bin, ["reconnect", "--url", url, "--clients", "50", *extra], "connections")
            add(f"{label} reconnect {scheme} {mode}", r)
            rate = f"p99 {r.get('p99_ms', 0):6.1f} ms" if mode == "burst" else f"{r.get('per_s', 0):6.0f}/s"
            print(f"turn {turn + 1} {label} reconnect {scheme} {mode:5}: {rate}  {r['cpu_us']:6.0f} us/connection  "
                  f"(connections {r['connections']}, errors {r['errors']})", flush=True)

    for turn in range(a.turns):
        order = [("A", a.a), ("B", a.b)] if turn % 2 == 0 else [("B", a.b), ("A", a.a)]
        load.append(os.getloadavg()[0])
        for label, bin_dir in order:
            for scheme in ("ws", "wss"):
                if "rpc" in cases or "reconnect" in cases:
                    hold, port = reserved_port()
                    srv = bridge(bin_dir)(port, hold)
                    try:
                        url = f"{scheme}://127.0.0.1:{port}/"
                        if "rpc" in cases:
                            round_trips(turn, label, srv, scheme, url, "yes")
                        if "reconnect" in cases:
                            reconnects(turn, label, srv, scheme, url)
                    finally:
                        srv.stop()
            if "relay" in cases:
                for n in (1, 10):
                    hold, port = reserved_port()
                    os.environ["FLOOD_COUNT"] = os.environ.get("RELAY_COUNT", "20000")
                    srv = bridge(bin_dir, agent=True)(port, hold)
                    try:
                        r = measure(srv, bench_bin, ["relay", "--url", f"ws://127.0.0.1:{port}/", "--clients", str(n),
                                                     "--count", os.environ.get("RELAY_COUNT", "20000"), "--timeout", "120"], "updates")
                        add(f"{label} relay ws {n}", r)
                        print(f"turn {turn + 1} {label} relay ws {n:2}: {r['updates_per_s']:8.0f}/s per client  "
                              f"{r['cpu_us']:6.2f} us/delivery", flush=True)
                    finally:
                        srv.stop()
        for ref, make in references:
            for scheme in ("ws", "wss"):
                hold, port = reserved_port()
                srv = make(scheme)(port, hold)
                try:
                    url = f"{scheme}://127.0.0.1:{port}/"
                    if "rpc" in cases:
                        round_trips(turn, ref, srv, scheme, url, "no" if ref == "echo" else "yes")
                    if "reconnect" in cases:
                        reconnects(turn, ref, srv, scheme, url)
                finally:
                    srv.stop()
    load.append(os.getloadavg()[0])
    summary = {}
    print(f"\nload average over the run: {', '.join(f'{x:.1f}' for x in load)}")
    print("median server CPU (runs), A and B side by side:")
    keys = sorted({k.split(" ", 1)[1] for k in results})
    for k in keys:
        row = {}
        for label in ("A", "B", "echo", "go"):
            rs = results.get(f"{label} {k}")
            if rs:
                cpus = [r["cpu_us"] for r in rs]
                row[label] = {"cpu_us": statistics.median(cpus), "cpu_runs": cpus,
                              "rate": statistics.median(r.get("rps", r.get("per_s", r.get("updates_per_s", 0))) for r in rs)}
        summary[k] = row
        if "A" in row and "B" in row:
            ratio = row["B"]["cpu_us"] / max(row["A"]["cpu_us"], 1e-9)
            echo_part = "".join(f"  {ref} {row[ref]['cpu_us']:.1f}" for ref in ("echo", "go") if ref in row)
            rates = "  rate A/B/" + "/".join(ref for ref in ("echo", "go") if ref in row) + " " + " / ".join(
                f"{row[x]['rate']:.0f}" for x in ("A", "B", "echo", "go") if x in row)
            print(f"  {k:22} A {row['A']['cpu_us']:8.1f} {[round(x, 1) for x in row['A']['cpu_runs']]}  "
                  f"B {row['B']['cpu_us']:8.1f} {[round(x, 1) for x in row['B']['cpu_runs']]}  B/A {ratio:.2f}{echo_part}{rates}")
        else:
            for ref in ("echo", "go"):
                if ref in row:
                    print(f"  {k:22} {ref} {row[ref]['cpu_us']:.1f} {[round(x, 1) for x in row[ref]['cpu_runs']]}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"load": load, "summary": summary, "runs": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
