#!/usr/bin/env python3
"""A stdio ACP v1 agent for Tests/web/test_webapp_links.py that counts prompts: each `session/prompt` appends one line
(the prompt's text as JSON) to the file named by argv[1], then the agent answers "You said: <text>" and ends the turn.
With `lines` in the text ("lines 40") it answers that many numbered lines, slowly (0.1 s apart), for the scrolling
test. Every loop is bounded."""
import json
import re
import sys
import time

LOG = sys.argv[1]


def send(message):
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def say(session, text):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


def prompt(request):
    session = request["params"]["sessionId"]
    text = " ".join(b.get("text", "") for b in request["params"].get("prompt", []) if b.get("type") == "text")
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(text) + "\n")
    many = re.fullmatch(r"lines (\d{1,3})", text.strip())
    if many:
        for n in range(int(many.group(1))):
            say(session, f"line {n}\n\n")
            time.sleep(0.1)
    else:
        say(session, "You said: " + text)
    return {"stopReason": "end_turn"}


def main():
    sessions = 0
    for _ in range(100_000):
        line = sys.stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request or method is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [],
                      "agentInfo": {"name": "counter", "version": "0"}}
        elif method == "session/new":
            sessions += 1
            result = {"sessionId": f"count-{sessions}"}
        elif method == "session/prompt":
            result = prompt(request)
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
