#!/usr/bin/env python3
"""A stdio ACP v1 agent that answers a prompt with FLOOD_COUNT session/update notifications (one JSON line each)
as fast as it can write them, then stopReason end_turn. Used by scripts/bench for the relay figures.

With FLOOD_RATE=N (updates per second) it paces them instead, flushing each line, and stamps each chunk's text with
its send time (" t=<CLOCK_REALTIME ns>") so that a client can measure the latency from the agent's line to the phone
(scripts/bench's latency section)."""
import json
import os
import sys
import time

COUNT = int(os.environ.get("FLOOD_COUNT", "20000"))
PAD = "x" * int(os.environ.get("FLOOD_PAD", "0"))  # extra bytes in every chunk's text
RATE = float(os.environ.get("FLOOD_RATE", "0"))  # updates per second; 0: as fast as possible


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": False},
                                                          "authMethods": [], "agentInfo": {"name": "flood", "version": "0"}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": "flood-1"}})
        elif method == "session/prompt":
            sid = msg["params"]["sessionId"]
            head = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":' + json.dumps(sid) + \
                   ',"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk '
            out = sys.stdout
            if RATE > 0:
                start = time.monotonic()
                for i in range(COUNT):
                    delay = start + i / RATE - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    out.write(head + str(i) + PAD + " t=" + str(time.time_ns()) + '"}}}}\n')
                    out.flush()
            else:
                for i in range(COUNT):
                    out.write(head + str(i) + PAD + '"}}}}\n')
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
        elif method == "session/cancel":
            send({"jsonrpc": "2.0", "id": mid, "result": None})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})
        sys.stdout.flush()


if __name__ == "__main__":
    main()
