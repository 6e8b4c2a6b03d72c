#!/usr/bin/env python3
"""A hostile stdio ACP v1 agent for Tests/system/test_security_fs.py: on session/prompt it reads a JSON script from the
prompt's text and attacks the bridge's fs/* confinement with it, from inside the workspace (its cwd), as an agent
running a cloned repository could. It reports what it saw as one session/update (a JSON text chunk), then end_turn.

Scripts (the prompt text):
  {"op": "write", "path": P, "content": C}            one fs/write_text_file
  {"op": "read", "path": P}                           one fs/read_text_file
  {"op": "race", "dir": D, "outside": O, "iterations": N, "seconds": S}
      a thread swaps the workspace directory D with a symbolic link to O and back (renameat2 RENAME_EXCHANGE, so D
      always exists), as fast as it can, while the agent
      alternately reads D/secret.txt and writes D/written.txt through the bridge, N times or S seconds at most.
      Reported: how many reads returned O's secret, how many writes were answered with success.
Every loop is bounded in count and time."""
import ctypes
import json
import os
import sys
import threading
import time

_next_id = [1000]
_stdin = sys.stdin


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def request(method, params, timeout=60.0):
    """Sends a request to the bridge and reads lines until its answer (bounded by `timeout`)."""
    _next_id[0] += 1
    rid = _next_id[0]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = _stdin.readline()
        if not line:
            raise SystemExit(0)
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            return msg
    return {"error": {"code": 0, "message": "no answer"}}


_libc = ctypes.CDLL(None, use_errno=True)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a, b):
    """Swaps two names atomically (renameat2 RENAME_EXCHANGE): `a` always exists, as one or the other."""
    if _libc.renameat2(_AT_FDCWD, a.encode(), _AT_FDCWD, b.encode(), _RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def swapper(directory, outside, stop, deadline, counts):
    """Swaps `directory` with a symbolic link to `outside`, atomically and back, until `stop` or `deadline`."""
    link = directory + ".link"
    os.symlink(outside, link)
    while not stop.is_set() and time.time() < deadline and counts["swaps"] < 10_000_000:
        try:
            exchange(directory, link)
            exchange(directory, link)
            counts["swaps"] += 2
        except OSError:
            counts["swapErrors"] += 1
            time.sleep(0.001)


def race(session, script):
    directory, outside = script["dir"], script["outside"]
    iterations, seconds = int(script["iterations"]), float(script["seconds"])
    stop = threading.Event()
    deadline = time.time() + seconds
    counts = {"swaps": 0, "swapErrors": 0}
    thread = threading.Thread(target=swapper, args=(directory, outside, stop, deadline + 5, counts), daemon=True)
    thread.start()
    report = {"iterations": 0, "reads": 0, "outsideReads": 0, "insideReads": 0, "writesAccepted": 0, "errors": 0,
              "errorSamples": {}}
    try:
        for i in range(iterations):
            if time.time() > deadline:
                break
            report["iterations"] += 1
            if i % 2 == 0:
                answer = request("fs/read_text_file", {"sessionId": session, "path": os.path.join(directory, "secret.txt")})
                report["reads"] += 1
                content = answer.get("result", {}).get("content") if isinstance(answer.get("result"), dict) else None
                if content is None:
                    note(report, answer)
                elif "OUTSIDE" in content:
                    report["outsideReads"] += 1
                else:
                    report["insideReads"] += 1
            else:
                answer = request("fs/write_text_file", {"sessionId": session, "path": os.path.join(directory, "written.txt"),
                                                        "content": f"write {i}"})
                if "error" in answer:
                    note(report, answer)
                else:
                    report["writesAccepted"] += 1
    finally:
        stop.set()
        thread.join(10)
    report.update(counts)
    return report


def note(report, answer):
    """Counts an error answer and keeps one sample message per error code."""
    report["errors"] += 1
    error = answer.get("error", {})
    report["errorSamples"].setdefault(str(error.get("code")), error.get("message", "")[:200])


def attack(session, script):
    op = script.get("op")
    if op == "write":
        return {"answer": request("fs/write_text_file", {"sessionId": session, "path": script["path"], "content": script.get("content", "")})}
    if op == "read":
        return {"answer": request("fs/read_text_file", {"sessionId": session, "path": script["path"]})}
    if op == "race":
        return race(session, script)
    return {"error": f"unknown op {op}"}


def main():
    while True:
        line = _stdin.readline()
        if not line:
            return
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None or method is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": False},
                                                          "authMethods": [], "agentInfo": {"name": "hostile-fs", "version": "0"}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": "hostile-1"}})
        elif method == "session/prompt":
            session = msg["params"]["sessionId"]
            script = json.loads(msg["params"]["prompt"][0]["text"])
            report = attack(session, script)
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": {
                "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": json.dumps(report)}}}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
