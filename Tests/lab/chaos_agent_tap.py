#!/usr/bin/env python3
"""The chaos test's window on the agent (Tests/lab/test_chaos.py): started by `oa-bridge serve --agent` in place of the
agent, it starts the real agent (its arguments) and copies its stdio both ways unchanged, line by line, writing every
line with its direction and time to the JSON-lines file $OA_CHAOS_TAP (append; one file for every incarnation). It is
the ground truth of what the agent received and sent.

When the file $OA_CHAOS_NOLOAD names exists at its start, it takes it (removes it) and plays an agent that cannot load
sessions: its answer to `initialize` loses `loadSession` and `sessionCapabilities.resume` (the chaos run's honest-gap
path: the bridge then shows the kept conversation read-only). The tap's `start` line says so (`"noload": true`).

It ends when the agent does (with its status; a `kill -9` of the agent ends it at once), and when the bridge closes
its stdin it closes the agent's and waits for it; SIGTERM is passed on. Standard library only, so it runs under the
lab hosts' system python3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time


def _die_with_parent() -> None:
    """The agent dies with this tap, even by SIGKILL (PR_SET_PDEATHSIG): no agent is left behind."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except Exception:
        pass


def main() -> int:
    path = os.environ.get("OA_CHAOS_TAP")
    if not path or len(sys.argv) < 2:
        print("usage: OA_CHAOS_TAP=FILE chaos_agent_tap.py AGENT [ARGS...]", file=sys.stderr)
        return 64
    agent = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                             preexec_fn=_die_with_parent)
    log = open(path, "a", buffering=1)
    lock = threading.Lock()

    def record(direction: str, line: bytes) -> None:
        entry = {"t": time.time(), "pid": agent.pid, "dir": direction}
        try:
            entry["msg"] = json.loads(line)
        except ValueError:
            entry["raw"] = line.decode("utf-8", "replace")[:2000]
        with lock:
            log.write(json.dumps(entry) + "\n")

    noload = False
    flag = os.environ.get("OA_CHAOS_NOLOAD")
    if flag:
        try:
            os.unlink(flag)
            noload = True
        except OSError:
            pass
    initialize_ids: set = set()
    with lock:
        log.write(json.dumps({"t": time.time(), "pid": agent.pid, "dir": "start", "argv": sys.argv[1:], "noload": noload}) + "\n")

    def without_load(line: bytes) -> bytes:
        """The agent's answer to `initialize` without the capabilities to load or resume a session."""
        try:
            message = json.loads(line)
        except ValueError:
            return line
        if not isinstance(message, dict) or "method" in message or json.dumps(message.get("id")) not in initialize_ids:
            return line
        capabilities = (message.get("result") or {}).get("agentCapabilities")
        if isinstance(capabilities, dict):
            capabilities.pop("loadSession", None)
            if isinstance(capabilities.get("sessionCapabilities"), dict):
                capabilities["sessionCapabilities"].pop("resume", None)
        return (json.dumps(message) + "\n").encode()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: agent.send_signal(s))

    def to_agent() -> None:
        stdin = sys.stdin.buffer
        try:
            for line in iter(stdin.readline, b""):
                record("in", line)
                if noload:
                    try:
                        message = json.loads(line)
                        if isinstance(message, dict) and message.get("method") == "initialize":
                            initialize_ids.add(json.dumps(message.get("id")))
                    except ValueError:
                        pass
                agent.stdin.write(line)
        except (BrokenPipeError, OSError):
            pass
        try:
            agent.stdin.close()
        except OSError:
            pass

    threading.Thread(target=to_agent, daemon=True).start()
    out = sys.stdout.buffer
    try:
        for line in iter(agent.stdout.readline, b""):
            if noload:
                line = without_load(line)
            record("out", line)
            out.write(line)
            out.flush()
    except (BrokenPipeError, OSError):
        agent.kill()
    status = agent.wait()
    with lock:
        log.write(json.dumps({"t": time.time(), "pid": agent.pid, "dir": "exit", "status": status}) + "\n")
        log.flush()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    # os._exit: the stdin thread may be blocked in a read, and a normal interpreter exit then aborts (SIGABRT).
    code = main()
    sys.stdout.flush()
    os._exit(code)
