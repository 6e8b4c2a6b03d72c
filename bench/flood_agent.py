#!/usr/bin/env python3
"""A stdio ACP v1 agent that answers a prompt with FLOOD_COUNT session/update notifications (one JSON line each)
as fast as it can write them, then stopReason end_turn. Used by scripts/bench for the relay figures."""
import json
import os
import sys

COUNT = int(os.environ.get("FLOOD_COUNT", "20000"))
PAD = "x" * int(os.environ.get("FLOOD_PAD", "0"))  # extra bytes in every chunk's text


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
