#!/usr/bin/env python3
"""Soak: what `oa-bridge serve` keeps across long churn, beside the bare Hummingbird echo (`bench echo`) measured the
same way in the same run (issue 15 item 3). Everything runs on 127.0.0.1.

Phases (each on a fresh server, one after the other):
  echo         the bare Hummingbird WebSocket echo: connect / send initialize / read the echo / close
  connections  serve --auth none: connect / initialize / close
  sessions     serve --auth none, the built-in demo agent: connect / initialize / session/new / a prompt with a
               permission round trip / close (the session is left detached, as a phone that went away leaves it)
  pairings     serve with auth on: new pairing code / token exchange / token refresh / connect with the access token and
               initialize / logout (the device is revoked)
  restarts     serve --auth none with bench/soak_agent.py: connect / initialize / session/new / prompt / close, then
               SIGKILL the agent (the next session/new starts it again)

For each phase it samples the server's RssAnon (/proc/PID/status), open file descriptors and threads every `every`
cycles and reports the least-squares slope of RssAnon per 1,000 cycles after the warm-up, and whether the fds and
threads came back to their count after the warm-up (waiting at most `settle` seconds for them after the churn).

Every loop is bounded in count and time: a phase stops at its cycle count or its time limit, whichever comes first,
and says which. Prints one JSON object per phase (and a table to stderr); --json writes them all to a file.

    python3 bench/soak.py --bridge .build-leak/release/oa-bridge --bench .build-leak/release/bench \
        --cycles 20000 --warmup 4000 --phases echo,connections,sessions,pairings,restarts

The functions are also what Tests/system/test_soak.py uses, with fewer cycles."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import websockets

HERE = Path(__file__).resolve().parent
AGENT = HERE / "soak_agent.py"
INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "soak", "version": "0"}}})


# MARK: - What the kernel says about a process

def status_field(pid: int, name: str) -> int:
    """A numeric field of /proc/PID/status (RssAnon in KiB, Threads), 0 if absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def reading(pid: int) -> dict:
    """RssAnon (KiB), open file descriptors and threads of `pid` now."""
    return {"anon_kib": status_field(pid, "RssAnon"), "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": status_field(pid, "Threads")}


def children(pid: int) -> list[int]:
    """The direct child processes of `pid`."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return found


def slope_per_1000(samples: list[tuple[int, int]]) -> float | None:
    """Least-squares slope of (cycle, KiB) in KiB per 1,000 cycles; None with fewer than 3 samples."""
    if len(samples) < 3:
        return None
    n = len(samples)
    mx = sum(c for c, _ in samples) / n
    my = sum(v for _, v in samples) / n
    sxx = sum((c - mx) ** 2 for c, _ in samples)
    if sxx == 0:
        return None
    return 1000.0 * sum((c - mx) * (v - my) for c, v in samples) / sxx


# MARK: - Servers

def reserved_port() -> socket.socket:
    """A socket bound with SO_REUSEADDR to a port the kernel picks, never listening, for a server that binds with
    SO_REUSEADDR (serve and the NIO echo do): while it is open, no plain bind and no other bind(port 0) gets the port,
    so nothing takes it between here and the server's bind (a port bound, closed and handed on could be taken by
    another test). Close it once the server listens."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    return holder


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Waits until something accepts on 127.0.0.1:port; raises if `proc` exits or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode}) before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


@dataclass
class Server:
    """A server process on a free loopback port, stopped with SIGTERM (SIGKILL after 10 s)."""
    proc: subprocess.Popen
    port: int
    base: Path
    env: dict = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start_echo(bench: str) -> Server:
    holder = reserved_port()
    port = holder.getsockname()[1]
    base = Path(tempfile.mkdtemp(prefix="oa-soak-echo-"))
    with holder:
        with open(base / "echo.log", "w") as log:
            proc = subprocess.Popen([bench, "echo", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=log)
        wait_port(port, proc)
    return Server(proc, port, base)


def start_serve(bridge: str, *extra: str) -> Server:
    """`oa-bridge serve` on 127.0.0.1 with discovery off, warnings only, a fresh state directory; `extra` follows."""
    holder = reserved_port()
    port = holder.getsockname()[1]
    base = Path(tempfile.mkdtemp(prefix="oa-soak-serve-"))
    arguments = [bridge, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", str(port),
                 "--state-dir", str(base / "state"), "--working-directory", str(base), "--log-level", "warning", *extra]
    with holder:
        with open(base / "serve.log", "w") as log:
            proc = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=log, cwd=base)
        wait_port(port, proc)
    return Server(proc, port, base)


# MARK: - One cycle of each kind

async def connection_cycle(url: str, headers: dict | None = None) -> None:
    """connect, initialize (the echo sends it back), close."""
    async with websockets.connect(url, open_timeout=10, close_timeout=5, additional_headers=headers) as ws:
        await ws.send(INIT)
        await asyncio.wait_for(ws.recv(), 10)


async def answer(ws, request_id, seconds: float) -> dict:
    """The response to `request_id`, skipping notifications (e.g. `_oa/agent_exited`), within `seconds`."""
    deadline = time.monotonic() + seconds
    for _ in range(1_000):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        message = json.loads(await asyncio.wait_for(ws.recv(), remaining))
        if message.get("id") == request_id and "method" not in message:
            return message
    raise TimeoutError(f"no answer to {request_id} within {seconds} s")


async def session_cycle(url: str, cwd: str, text: str = "soak") -> None:
    """connect, initialize, session/new, one prompt (a permission asked by the agent is answered: allowed), close."""
    async with websockets.connect(url, open_timeout=10, close_timeout=5, max_size=2**24) as ws:
        await ws.send(INIT)
        await answer(ws, 0, 10)
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}))
        created = await answer(ws, 1, 15)
        if "result" not in created:
            raise RuntimeError(f"session/new: {created}")
        session = created["result"]["sessionId"]
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                                  "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}))
        deadline = time.monotonic() + 20
        for _ in range(10_000):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no answer to the prompt within 20 s")
            message = json.loads(await asyncio.wait_for(ws.recv(), remaining))
            if message.get("method") == "session/request_permission" and "id" in message:
                options = message.get("params", {}).get("options") or [{"optionId": "allow"}]
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "outcome": {"outcome": "selected", "optionId": options[0].get("optionId", "allow")}}}))
            elif message.get("id") == 2 and "method" not in message:
                if "result" not in message:
                    raise RuntimeError(f"prompt failed: {message}")
                return
        raise RuntimeError("too many frames for one prompt")


def http(method: str, url: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


async def pairing_cycle(server: Server, index: int) -> None:
    """A phone pairs (new pairing code, exchange), refreshes its tokens, connects with the access token and
    initializes, then logs out (its device is revoked)."""
    loop = asyncio.get_running_loop()
    base = server.http_url
    status, info = await loop.run_in_executor(None, http, "POST", base + "/api/pair/refresh", {})
    if status != 200:
        raise RuntimeError(f"pair/refresh: {status} {info}")
    status, tokens = await loop.run_in_executor(None, http, "POST", base + "/api/auth/exchange",
                                                {"pairing_token": info["token"], "device_name": f"soak-{index}"})
    if status != 200:
        raise RuntimeError(f"auth/exchange: {status} {tokens}")
    status, tokens = await loop.run_in_executor(None, http, "POST", base + "/api/auth/refresh",
                                                {"refresh_token": tokens["refresh_token"]})
    if status != 200:
        raise RuntimeError(f"auth/refresh: {status} {tokens}")
    await connection_cycle(server.ws_url, {"Authorization": f"Bearer {tokens['access_token']}"})
    status, body = await loop.run_in_executor(None, http, "POST", base + "/api/logout", None, tokens["access_token"])
    if status not in (200, 204):
        raise RuntimeError(f"logout: {status} {body}")


async def restart_cycle(server: Server, pause: float = 0.0) -> None:
    """A session with the external agent, then SIGKILL the agent; the next cycle's session/new starts it again, sent
    `pause` seconds after the kill (0: at once, before the bridge can have seen the process end)."""
    await session_cycle(server.ws_url, str(server.base))
    for child in children(server.pid):
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # Before a3c1ca9 a session/new sent before the bridge saw the process end got -32603 "could not write to the
    # agent"; now the bridge sees the dead pipes and restarts the agent. Failures are counted either way.
    if pause > 0:
        await asyncio.sleep(pause)


# MARK: - A phase

async def churn(pid: int, cycle, total: int, concurrency: int, every: int, warmup: int, warmup_seconds: float,
                limit: float, samples: list, after_warmup: dict, tolerance: int = 100) -> tuple[int, int, bool]:
    """Runs `cycle(i)` `total` times, `concurrency` at a time, within `limit` seconds; samples `pid` every `every`
    cycles. The warm-up ends after `warmup` cycles and `warmup_seconds`, whichever is later: `after_warmup` gets the
    reading then and its cycle count ("cycle"). Returns (cycles done, failed cycles, whether the time limit stopped
    it)."""
    done = failed = 0
    started = time.monotonic()
    deadline = started + limit
    next_sample = every
    while done < total:
        if time.monotonic() > deadline:
            return done, failed, True
        batch = min(concurrency, total - done)
        results = await asyncio.gather(*(cycle(done + i) for i in range(batch)), return_exceptions=True)
        failed += sum(1 for r in results if isinstance(r, BaseException))
        if failed > max(10, total // tolerance):
            raise RuntimeError(f"{failed} cycles failed, the last: {next(r for r in reversed(results) if isinstance(r, BaseException))!r}")
        done += batch
        if done >= warmup and time.monotonic() - started >= warmup_seconds and not after_warmup:
            await asyncio.sleep(0.5)  # the server closes its side of the last batch
            after_warmup.update(reading(pid))
            after_warmup["cycle"] = done
        if done >= next_sample:
            samples.append((done, reading(pid)))
            next_sample += every
    return done, failed, False


def settle(pid: int, start: dict, seconds: float) -> dict:
    """Waits at most `seconds` for fds and threads to come back to `start`; returns the last reading."""
    deadline = time.monotonic() + seconds
    now = reading(pid)
    while time.monotonic() < deadline and (now["fds"] > start["fds"] or now["threads"] > start["threads"]):
        time.sleep(0.25)
        now = reading(pid)
    return now


def run_phase(name: str, server: Server, cycle, total: int, warmup: int, warmup_seconds: float, concurrency: int,
              every: int, limit: float, settle_seconds: float) -> dict:
    """Churns `server` with `cycle` and returns the phase's figures."""
    samples: list = []
    after_warmup: dict = {}
    first = reading(server.pid)
    started = time.monotonic()
    # A session/new written to the agent just before it died is lost with it (an error, not a restart): allowed rarely.
    done, failed, timed_out = asyncio.run(churn(server.pid, cycle, total, concurrency, every, warmup,
                                                warmup_seconds, limit, samples, after_warmup,
                                                100))
    seconds = time.monotonic() - started
    baseline = after_warmup or first
    end = reading(server.pid)
    settled = settle(server.pid, baseline, settle_seconds)
    warm_at = after_warmup.get("cycle", done)
    steady = [(c, r["anon_kib"]) for c, r in samples if c >= warm_at]
    slope = slope_per_1000(steady)
    return {
        "phase": name, "cycles": done, "failed": failed, "stopped_by_time_limit": timed_out,
        "seconds": round(seconds, 1), "warmup_cycles": warm_at, "slope_samples": len(steady),
        "concurrency": concurrency,
        "anon_kib": {"start": first["anon_kib"], "after_warmup": baseline["anon_kib"], "end": end["anon_kib"],
                     "settled": settled["anon_kib"]},
        "slope_kib_per_1000": None if slope is None else round(slope, 1),
        "bytes_per_cycle": None if slope is None else round(slope * 1024 / 1000, 1),
        "fds": {"after_warmup": baseline["fds"], "end": end["fds"], "settled": settled["fds"]},
        "threads": {"after_warmup": baseline["threads"], "end": end["threads"], "settled": settled["threads"]},
        "fds_returned": settled["fds"] <= baseline["fds"],
        "threads_returned": settled["threads"] <= baseline["threads"],
        "samples": [[c, r["anon_kib"], r["fds"], r["threads"]] for c, r in samples],
    }


def phase(name: str, bridge: str, bench: str, cycles: int, warmup: int, warmup_seconds: float, every: int,
          limit: float, settle_seconds: float, serve_args: list[str], restart_pause: float = 0.0) -> dict:
    """Starts the phase's server, churns it, stops it."""
    if name == "echo":
        server = start_echo(bench)
        def cycle(i): return connection_cycle(server.ws_url)
        concurrency = 16
    elif name == "connections":
        server = start_serve(bridge, "--auth", "none", *serve_args)
        def cycle(i): return connection_cycle(server.ws_url)
        concurrency = 16
    elif name == "sessions":
        server = start_serve(bridge, "--auth", "none", *serve_args)
        def cycle(i): return session_cycle(server.ws_url, str(server.base))
        concurrency = 8
    elif name == "pairings":
        server = start_serve(bridge, *serve_args)
        def cycle(i): return pairing_cycle(server, i)
        concurrency = 1
    elif name == "restarts":
        server = start_serve(bridge, "--auth", "none", "--agent", f"{sys.executable} -S {AGENT}", *serve_args)
        def cycle(i): return restart_cycle(server, restart_pause)
        concurrency = 1
    else:
        raise ValueError(f"unknown phase {name}")
    try:
        result = run_phase(name, server, cycle, cycles, warmup, warmup_seconds, concurrency, every, limit,
                           settle_seconds)
        result["server_args"] = server.proc.args[1:] if isinstance(server.proc.args, list) else []
        return result
    finally:
        server.stop()


def table(results: list[dict]) -> str:
    rows = [f"{'phase':<12} {'cycles':>7} {'s':>6} {'anon KiB warm→end':>19} {'KiB/1000':>9} {'B/cycle':>8} "
            f"{'fds warm→settled':>17} {'threads warm→settled':>21}"]
    for r in results:
        rows.append(f"{r['phase']:<12} {r['cycles']:>7} {r['seconds']:>6} "
                    f"{str(r['anon_kib']['after_warmup']) + '→' + str(r['anon_kib']['end']):>19} "
                    f"{r['slope_kib_per_1000'] if r['slope_kib_per_1000'] is not None else '-':>9} "
                    f"{r['bytes_per_cycle'] if r['bytes_per_cycle'] is not None else '-':>8} "
                    f"{str(r['fds']['after_warmup']) + '→' + str(r['fds']['settled']):>17} "
                    f"{str(r['threads']['after_warmup']) + '→' + str(r['threads']['settled']):>21}")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bridge", required=True, help="the oa-bridge binary")
    parser.add_argument("--bench", required=True, help="the bench binary (for `bench echo`)")
    parser.add_argument("--phases", default="echo,connections,sessions,pairings,restarts")
    parser.add_argument("--cycles", type=int, default=20000, help="cycles per phase (connections, echo)")
    parser.add_argument("--session-cycles", type=int, default=0, help="cycles of the sessions phase (default: cycles/2)")
    parser.add_argument("--pairing-cycles", type=int, default=0, help="default: cycles/10")
    parser.add_argument("--restart-cycles", type=int, default=0, help="default: cycles/40")
    parser.add_argument("--warmup", type=float, default=0.2, help="fraction of each phase's cycles before the slope")
    parser.add_argument("--warmup-seconds", type=float, default=35,
                        help="the warm-up lasts at least this long: a closed WebSocket's cancelled timers (30 s"
                             " auto-ping, 15 s close timeout) hold memory until their deadline, so RssAnon only"
                             " reaches its plateau after 30 s of steady churn")
    parser.add_argument("--samples", type=int, default=20, help="samples per phase")
    parser.add_argument("--phase-seconds", type=float, default=600, help="time limit of each phase")
    parser.add_argument("--settle", type=float, default=20, help="seconds to wait for fds and threads after a phase")
    parser.add_argument("--serve-arg", action="append", default=[], help="an extra argument for serve (repeatable)")
    parser.add_argument("--restart-pause", type=float, default=0.0,
                        help="seconds between killing the agent and the next session/new (restarts phase)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    counts = {"echo": args.cycles, "connections": args.cycles,
              "sessions": args.session_cycles or args.cycles // 2,
              "pairings": args.pairing_cycles or max(200, args.cycles // 10),
              "restarts": args.restart_cycles or max(100, args.cycles // 40)}
    results = []
    for name in [p.strip() for p in args.phases.split(",") if p.strip()]:
        total = counts[name]
        warmup = int(total * args.warmup)
        every = max(1, total // args.samples)
        result = phase(name, args.bridge, args.bench, total, warmup, args.warmup_seconds, every, args.phase_seconds,
                       args.settle, args.serve_arg, args.restart_pause)
        print(json.dumps({k: v for k, v in result.items() if k != "samples"}), flush=True)
        results.append(result)
    print(table(results), file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
