#!/usr/bin/env python3
"""A minimal stdio ACP v1 agent for the soak benchmark (bench/soak.py) and Tests/system/test_soak.py: answers
initialize, session/new, session/close, and a prompt with one agent_message_chunk and end_turn. The soak kills it
(SIGKILL) to measure what the bridge keeps across agent restarts; it holds no state worth keeping."""
import json
import sys


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main():
    sessions = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, mid = msg.get("method"), msg.get("id")
        if mid is None or method is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": 1, "agentCapabilities": {"loadSession": False, "sessionCapabilities": {"close": {}}},
                "authMethods": [], "agentInfo": {"name": "soak", "version": "0"}}})
        elif method == "session/new":
            sessions += 1
            send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": f"soak-{sessions}"}})
        elif method == "session/prompt":
            sid = msg.get("params", {}).get("sessionId", "")
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
                "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}}})
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {}})


if __name__ == "__main__":
    main()
