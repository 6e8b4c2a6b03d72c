"""Connection churn against a WebSocket server on 127.0.0.1: N connect / (initialize) / close cycles, C at a time.
Prints the server's anonymous memory (RssAnon) every `every` cycles."""
import asyncio, json, sys, time
import websockets

INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})

def anon(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return 0

async def one(url, init):
    async with websockets.connect(url, open_timeout=10, close_timeout=5) as ws:
        if init:
            await ws.send(INIT)
            await asyncio.wait_for(ws.recv(), 10)

async def main(url, pid, total, conc, every, init):
    done = 0
    t0 = time.time()
    while done < total:
        batch = min(conc, total - done)
        await asyncio.gather(*(one(url, init) for _ in range(batch)))
        done += batch
        if done % every == 0:
            print(f"{done} {anon(pid)} {time.time()-t0:.1f}", flush=True)

url, pid, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
asyncio.run(main(url, pid, total, int(sys.argv[4]) if len(sys.argv) > 4 else 16, int(sys.argv[5]) if len(sys.argv) > 5 else 2000, (sys.argv[6] if len(sys.argv) > 6 else "yes") == "yes"))
