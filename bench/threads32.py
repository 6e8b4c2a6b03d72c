#!/usr/bin/env python3
"""Where a server's CPU goes, thread by thread, while one `bench load` runs against it (issue 32): for `oa-bridge serve`
and the in-process bridge (`bench bridge`), each thread's CPU time (utime + stime) and voluntary context switches over
the run, from /proc/PID/task, with the round trips the client made.

  bench/threads32.py BIN_DIR [--scheme wss] [--clients 1,64] [--seconds 3]

It tells work apart from waiting: a server that spends its CPU on its event loops and wakes once per request is not
handing requests between threads. Only loopback; every step is bounded in count and time. Take /tmp/bench.lock while
it runs (`flock /tmp/bench.lock bench/threads32.py ...`).
"""
import argparse
import glob
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab import TICK, Server, bench, reserved_port  # noqa: E402


def threads(pid):
    """Each thread of `pid`: (name, CPU ticks, voluntary context switches)."""
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/stat") as f:
                stat = f.read()
            with open(f"{task}/status") as f:
                status = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        fields = stat.rsplit(")", 1)[1].split()
        switches = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
        out[os.path.basename(task)] = (stat[stat.index("(") + 1:stat.rindex(")")], int(fields[11]) + int(fields[12]), switches)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin_dir")
    ap.add_argument("--scheme", default="wss", choices=["ws", "wss"])
    ap.add_argument("--clients", default="1,64")
    ap.add_argument("--seconds", default="3")
    a = ap.parse_args()
    oa_bridge, bench_bin = os.path.join(a.bin_dir, "oa-bridge"), os.path.join(a.bin_dir, "bench")
    state = tempfile.mkdtemp(prefix="oa-threads32-")

    def serve(port):
        # serve makes the identity in its state dir on its first start; `bench bridge` then serves the same one.
        return [oa_bridge, "serve", "--host", "127.0.0.1", "--port", str(port), "--auth", "none", "--discovery", "off",
                "--state-dir", state, "--log-level", "error", "--max-pending-per-address", "300"]

    def in_process(port):
        return [bench_bin, "bridge", "--port", str(port), "--tls-state", state]

    for clients in a.clients.split(","):
        for name, argv in (("serve", serve), ("bench bridge", in_process)):
            hold, port = reserved_port()
            srv = Server(argv(port), port, hold)
            try:
                before = threads(srv.p.pid)
                r = bench(bench_bin, ["load", "--url", f"{a.scheme}://127.0.0.1:{port}/", "--clients", clients,
                                      "--seconds", a.seconds, "--initialize", "yes"], timeout=120)
                after = threads(srv.p.pid)
            finally:
                srv.stop()
            requests = max(r["requests"], 1)
            print(f"{name}, {a.scheme}, {clients} clients: {r['rps']:.0f} req/s")
            for tid, (comm, ticks, switches) in sorted(after.items()):
                _, ticks0, switches0 = before.get(tid, (comm, 0, 0))
                cpu = (ticks - ticks0) * 1e6 / TICK / requests
                woken = (switches - switches0) / requests
                if cpu >= 0.05 or woken >= 0.005:  # threads that took no part are left out
                    print(f"  {comm:18} {cpu:6.1f} us and {woken:5.2f} voluntary switches per request")


if __name__ == "__main__":
    main()
