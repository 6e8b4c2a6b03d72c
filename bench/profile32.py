#!/usr/bin/env python3
"""Profiles of `oa-bridge serve` on issue 32's paths (round trips and reconnects over wss:// and ws://), written as text
like bench/profile.sh's: `perf record -e cpu-clock -g` of the server while one `bench` client runs, symbolized by
bench/perf_top.py, with the server's CPU time per request or connection from /proc.

  bench/profile32.py BIN_DIR OUT_DIR LABEL [CASE ...]

Cases: rpc-wss-1, rpc-ws-1, rpc-wss-64 (REQUESTS round trips, default 30,000, after a 1 s warm-up), reconnect-wss-loop
(50 clients reconnecting in a closed loop for 4 s), reconnect-wss-burst (50 at once x 20). Default: rpc-wss-1. Writes
OUT_DIR/LABEL-CASE.txt. Only loopback; every step bounded; take /tmp/bench.lock while it runs. Needs perf.
"""
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab import REPO, TICK, Server, cpu_ticks, reserved_port  # noqa: E402


def main():
    bin_dir, out_dir, label = sys.argv[1], sys.argv[2], sys.argv[3]
    cases = sys.argv[4:] or ["rpc-wss-1"]
    os.makedirs(out_dir, exist_ok=True)
    bench_bin = os.path.join(bin_dir, "bench")
    requests = int(os.environ.get("REQUESTS", "30000"))
    for case in cases:
        kind, scheme, arg = case.split("-")
        work = tempfile.mkdtemp(prefix="oa-profile32-")
        hold, port = reserved_port()
        srv = Server([os.path.join(bin_dir, "oa-bridge"), "serve", "--host", "127.0.0.1", "--port", str(port), "--auth",
                      "none", "--discovery", "off", "--state-dir", os.path.join(work, "state"), "--log-level", "error",
                      "--max-pending-per-address", "300"], port, hold)
        try:
            url = f"{scheme}://127.0.0.1:{port}/"
            if kind == "rpc":
                n = int(arg)
                warm = ["load", "--url", url, "--clients", str(n), "--seconds", "1", "--initialize", "yes"]
                run = ["load", "--url", url, "--clients", str(n), "--seconds", "60", "--max-requests", str(requests // n),
                       "--initialize", "yes"]
                count = "requests"
            else:
                warm = ["reconnect", "--url", url, "--clients", "10", "--seconds", "1"]
                run = ["reconnect", "--url", url, "--clients", "50",
                       *(["--seconds", "4"] if arg == "loop" else ["--rounds", "20"])]
                count = "connections"
            subprocess.run([bench_bin, *warm], capture_output=True, timeout=60)
            data = os.path.join(work, "perf.data")
            c0 = cpu_ticks(srv.p.pid)
            perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "4000", "-g", "-p", str(srv.p.pid),
                                     "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            result = subprocess.run([bench_bin, *run], capture_output=True, text=True, timeout=180).stdout.strip()
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
            c1 = cpu_ticks(srv.p.pid)
            import json
            r = json.loads(result.splitlines()[-1])
            per = (c1 - c0) * 1e6 / TICK / max(r[count], 1)
            with open(f"/proc/loadavg") as f:
                load = " ".join(f.read().split()[:3])
            top = subprocess.run(["python3", os.path.join(REPO, "bench", "perf_top.py"), data,
                                  os.path.join(bin_dir, "oa-bridge"), "90", str(srv.p.pid)],
                                 capture_output=True, text=True, timeout=600).stdout
            path = os.path.join(out_dir, f"{label}-{case}.txt")
            with open(path, "w") as f:
                f.write(f"# perf record -e cpu-clock -g: oa-bridge serve, case {case}, label {label}, load {load}\n")
                f.write(f"# client result: {result.splitlines()[-1]}\n")
                f.write(f"# serve CPU per {count[:-1]} (utime+stime, /proc): {per:.1f} us\n\n")
                f.write(top)
            print(f"wrote {path}: {per:.1f} us per {count[:-1]}")
        finally:
            srv.stop()
            subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
