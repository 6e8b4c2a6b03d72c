#!/usr/bin/env python3
"""A hostile stdio ACP v1 agent for Tests/web/test_webapp.py: whatever the prompt, it answers with markup and script in
every place the web app shows agent text (message, thought, tool call title and output, diff, plan, command
descriptions, a permission option's name), then a single line of 1 MiB (unmatched brackets, asterisks and tags, to
test that the Markdown renderer stays linear), then END-OF-HOSTILE-TURN. Every loop is bounded."""
import json
import sys

HOSTILE = "\n\n".join([
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    "<script>window.__pwned=2;alert(2)</script>",
    "[click me](javascript:window.__pwned=3) and ![pic](javascript:alert(4)) and [data](data:text/html,<script>alert(5)</script>)",
    '<a href="javascript:alert(6)">raw link</a> <iframe src="javascript:alert(7)"></iframe>',
    "[fine](https://example.com/ok) and **bold** and `<b>code</b>`",
])
CHUNK = 262_144
MEGABYTE_LINE = [
    "[" * CHUNK,
    "*" * CHUNK,
    ("<img src=x onerror=alert(14)>" * (CHUNK // 29 + 1))[:CHUNK],
    ("_a[b](javascript:c)`" * (CHUNK // 20 + 1))[:CHUNK],
]

next_id = [5000]


def send(message):
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def update(session, body):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": body}})


def ask(method, params):
    """Sends a request to the client and reads lines until its answer (at most 10,000 lines)."""
    next_id[0] += 1
    rid = next_id[0]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    for _ in range(10_000):
        line = sys.stdin.readline()
        if not line:
            raise SystemExit(0)
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("id") == rid and "method" not in message:
            return message
        if message.get("method") == "session/cancel":
            return {"result": {"outcome": {"outcome": "cancelled"}}}
    return {}


def describe_image(block):
    """`<mime type>:<width>x<height>` of a JPEG or PNG image block (read from its header), for the photo test."""
    import base64
    import struct

    data = base64.b64decode(block.get("data", ""))
    size = "?"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        width, height = struct.unpack(">II", data[16:24])
        size = f"{width}x{height}"
    elif data[:2] == b"\xff\xd8":
        index = 2
        for _ in range(1000):
            if index + 9 > len(data) or data[index] != 0xFF:
                break
            marker, length = data[index + 1], struct.unpack(">H", data[index + 2:index + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                height, width = struct.unpack(">HH", data[index + 5:index + 9])
                size = f"{width}x{height}"
                break
            index += 2 + length
    return f"{block.get('mimeType')}:{size}"


def prompt(request):
    session = request["params"]["sessionId"]
    update(session, {"sessionUpdate": "available_commands_update", "availableCommands": [
        {"name": "pwn", "description": "<img src=x onerror=alert(11)>"}]})
    update(session, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "<script>alert(12)</script>"}})
    update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": HOSTILE}})
    tool = "hostile-tool-1"
    update(session, {"sessionUpdate": "tool_call", "toolCallId": tool, "title": "<img src=x onerror=alert(9)>",
                     "kind": "edit", "status": "pending",
                     "content": [{"type": "diff", "path": "<b>x</b>.html", "oldText": "<p>old</p>",
                                  "newText": "<script>alert(15)</script>"}],
                     "rawInput": {"html": "<img src=x onerror=alert(16)>"}})
    update(session, {"sessionUpdate": "plan", "entries": [
        {"content": "<script>alert(10)</script>", "priority": "high", "status": "in_progress"}]})
    answer = ask("session/request_permission", {
        "sessionId": session,
        "toolCall": {"toolCallId": tool, "title": "<img src=x onerror=alert(9)>", "status": "pending"},
        "options": [{"optionId": "allow", "name": "<b onmouseover=alert(8)>Allow</b>", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]})
    update(session, {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "completed",
                     "content": [{"type": "content", "content": {"type": "text", "text": "<script>alert(13)</script>"}}],
                     "rawOutput": {"answer": answer.get("result")}})
    for part in MEGABYTE_LINE:
        update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": part}})
    images = [describe_image(block) for block in request["params"].get("prompt", []) if block.get("type") == "image"]
    update(session, {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": "\n\nEND-OF-HOSTILE-TURN images=" + ",".join(images)}})
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
            result = {"protocolVersion": 1, "agentCapabilities": {"promptCapabilities": {"image": True}},
                      "authMethods": [], "agentInfo": {"name": "<i>hostile</i>", "version": "0"}}
        elif method == "session/new":
            sessions += 1
            result = {"sessionId": f"hostile-{sessions}"}
        elif method == "session/prompt":
            result = prompt(request)
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
