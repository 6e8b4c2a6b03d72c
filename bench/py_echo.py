#!/usr/bin/env python3
"""Reference: a JSON-RPC WebSocket server in Python `websockets` that parses each request and answers it
(an error naming the method, like the bridge's answer to the benchmark's trivial request). 127.0.0.1 only."""
import asyncio
import json
import resource
import sys

import websockets


async def handler(ws):
    async for frame in ws:
        try:
            request = json.loads(frame)
            answer = {"jsonrpc": "2.0", "id": request.get("id"),
                      "error": {"code": -32002, "message": "unknown session", "data": {"method": request.get("method")}}}
        except ValueError:
            answer = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        await ws.send(json.dumps(answer))


async def main(port):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    async with websockets.serve(handler, "127.0.0.1", port, max_size=1 << 20, ping_interval=None):
        print(json.dumps({"listening": port}), flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 9197))
