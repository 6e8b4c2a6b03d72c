#!/usr/bin/env python3
"""WebSocket probe for the lab: run inside a lab host (via nsenter) with the venv python.

Connects to a bridge, performs the seed-dialect `initialize` handshake the iOS app sends, and optionally sends
malformed JSON. Prints ONE JSON object on stdout describing what happened; assertions live in the tests.

    ws_probe.py ws://198.18.0.2:9099/ [--wait 5] [--malformed] [--numeric-id] [--timeout 5]

Exit status: 0 if it could connect (whatever the replies were), 3 if it never connected.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from websockets.sync.client import connect

INITIALIZE = {
    "jsonrpc": "2.0",
    "method": "initialize",
    "id": "1",
    "params": {
        "protocol_version": "0.2.2",
        "client_capabilities": {},
        "client_info": {"name": "openagents-ios", "title": "OpenAgents iOS", "version": "0.1.0"},
    },
}

MALFORMED = '{"jsonrpc":"2.0","method":"initialize","id":"2",'  # truncated object: a parse error


def _open(url: str, wait: float, timeout: float):
    deadline = time.monotonic() + wait
    last = None
    while True:
        try:
            return connect(url, open_timeout=timeout, close_timeout=1, proxy=None, compression=None,
                           ping_interval=None), None
        except Exception as e:  # connection refused while the server starts, etc.
            last = f"{type(e).__name__}: {e}"
            if time.monotonic() >= deadline:
                return None, last
            time.sleep(0.05)


def _exchange(ws, text: str, timeout: float) -> dict:
    t0 = time.monotonic()
    ws.send(text)
    try:
        raw = ws.recv(timeout=timeout)
    except TimeoutError:
        return {"sent": text, "error": f"no reply within {timeout}s", "ms": (time.monotonic() - t0) * 1000}
    except Exception as e:
        return {"sent": text, "error": f"{type(e).__name__}: {e}", "ms": (time.monotonic() - t0) * 1000}
    out = {"sent": text, "raw": raw if isinstance(raw, str) else None,
           "binary": isinstance(raw, (bytes, bytearray)), "ms": (time.monotonic() - t0) * 1000}
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "replace")
    try:
        out["json"] = json.loads(raw)
    except ValueError as e:
        out["json_error"] = str(e)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--wait", type=float, default=5.0, help="keep retrying the connection this long")
    ap.add_argument("--timeout", type=float, default=5.0, help="per-reply timeout")
    ap.add_argument("--malformed", action="store_true", help="also send malformed JSON on a second connection")
    ap.add_argument("--numeric-id", action="store_true",
                    help="also send initialize with a numeric id on a third connection")
    a = ap.parse_args()

    result: dict = {"url": a.url}
    t0 = time.monotonic()
    ws, err = _open(a.url, a.wait, a.timeout)
    if ws is None:
        result["connect_error"] = err
        print(json.dumps(result))
        return 3
    result["connect_ms"] = (time.monotonic() - t0) * 1000
    with ws:
        result["initialize"] = _exchange(ws, json.dumps(INITIALIZE, separators=(",", ":")), a.timeout)

    if a.malformed:
        ws, err = _open(a.url, a.wait, a.timeout)
        if ws is None:
            result["malformed"] = {"error": f"connect: {err}"}
        else:
            with ws:
                result["malformed"] = _exchange(ws, MALFORMED, a.timeout)

    if a.numeric_id:
        msg = dict(INITIALIZE, id=7)
        ws, err = _open(a.url, a.wait, a.timeout)
        if ws is None:
            result["numeric"] = {"error": f"connect: {err}"}
        else:
            with ws:
                result["numeric"] = _exchange(ws, json.dumps(msg, separators=(",", ":")), a.timeout)

    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
