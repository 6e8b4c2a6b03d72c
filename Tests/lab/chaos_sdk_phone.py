#!/usr/bin/env python3
"""One of the chaos test's phones (Tests/lab/test_chaos.py): the official ACP Python SDK (`agent-client-protocol`) as a
client of the bridge over WebSocket, run inside a lab host by the test venv's python.

It reads commands from stdin, one JSON object a line, and writes what happened to stdout, one JSON object a line:

    {"cmd": "attach", "session": ID}          -> {"ev": "attached", "session", "how": "load"}
    {"cmd": "prompt", "id": P, "text": T}     -> {"ev": "prompt_done", "id", "stop"} | {"ev": "prompt_error", "id", ...}
    {"cmd": "quit"}

and, as they come: every `session/update` ({"ev": "update", "session", "seq", "kind", "text"}), "connected",
"disconnected", "resumed" (with the bridge's answer), "gap" (the bridge no longer holds what was missed: shown, not
hidden), "reloaded" (the bridge had forgotten the session, an agent restart: `session/load` again, the agent replays
the conversation), "agent_exited".

It behaves as a careful client should: it notices a dead link within ~3 s (`_oa/ping` every second), reconnects with
backoff, resumes the session where it left off (`_oa/session/resume` with the last `seq` it saw) and never sends a
prompt twice: a prompt whose connection died is followed to its end through the resume (`promptRunning`,
`finishedWhileAway`, `_oa/prompt_finished`); if its fate cannot be known it is reported as an error, not retried.
Every prompt carries `_meta.oa.idempotencyKey` (its id)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

import acp
from acp import RequestError
from acp.ws.client import create_websocket_stream

URL = sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:9099/"
KEYED_RETRY = os.environ.get("OA_CHAOS_KEYED_RETRY") == "1"
# With tokens (the chaos run's dpop mode): the unbound access token the harness paired for this phone, sent as Bearer.
HEADERS = {"Authorization": f"Bearer {os.environ['OA_CHAOS_TOKEN']}"} if os.environ.get("OA_CHAOS_TOKEN") else None
PING_EVERY = 1.0
PING_TIMEOUT = 2.0


def emit(ev: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"ev": ev, "t": time.time(), **fields}) + "\n")
    sys.stdout.flush()


class Lost(Exception):
    pass


class PhoneClient(acp.Client):
    """The SDK's client side: session updates and the bridge's notices go to the phone."""

    def __init__(self, phone: "Phone") -> None:
        self.phone = phone

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.phone.on_update(session_id, update, kwargs)

    async def request_permission(self, options, session_id, tool_call, **kwargs):  # noqa: ANN001
        choice = next((o for o in options if str(o.kind).startswith("allow")), None)
        if choice is None:
            return acp.RequestPermissionResponse(outcome=acp.schema.DeniedOutcome(outcome="cancelled"))
        return acp.RequestPermissionResponse(outcome=acp.schema.AllowedOutcome(outcome="selected", option_id=choice.option_id))

    async def ext_notification(self, method: str, params: dict) -> None:
        self.phone.on_notice(method, params)

    async def ext_method(self, method: str, params: dict) -> dict:
        raise RequestError.method_not_found(method)


class Phone:
    def __init__(self) -> None:
        self.conn: acp.ClientSideConnection | None = None
        self.session: str | None = None
        self.last_seq = 0
        self.finished: dict[str, asyncio.Future] = {}  # session -> _oa/prompt_finished
        self.lost = asyncio.Event()
        self.up = asyncio.Event()
        self.generation = 0
        self.mending = asyncio.Lock()
        self.unknown = ""
        self.transport = None

    # -- what the bridge sends ----------------------------------------------------------------------------------

    def on_update(self, session_id: str, update: Any, meta: dict) -> None:
        seq = meta.get("seq") if isinstance(meta, dict) else None
        kind = getattr(update, "session_update", None)
        content = getattr(update, "content", None)
        text = getattr(content, "text", None) if content is not None else None
        oa = meta.get("oa") if isinstance(meta, dict) else None
        emit("update", session=session_id, seq=seq, kind=kind, text=text,
             origin=(oa or {}).get("origin") if isinstance(oa, dict) else None)
        if session_id == self.session and isinstance(seq, int) and seq > self.last_seq:
            self.last_seq = seq

    def on_notice(self, method: str, params: dict) -> None:
        method = method if method.startswith("_") else "_" + method
        if method == "_oa/prompt_finished":
            sid = params.get("sessionId")
            emit("prompt_finished", session=sid, stop=params.get("stopReason"))
            fut = self.finished.get(sid)
            if fut is not None and not fut.done():
                fut.set_result(params.get("stopReason"))
        elif method == "_oa/agent_exited":
            emit("agent_exited", params=params)

    # -- the link -------------------------------------------------------------------------------------------------

    async def connect(self) -> None:
        delay = 0.3
        while True:
            try:
                transport = await asyncio.wait_for(create_websocket_stream(URL, headers=HEADERS), 5)
                conn = acp.connect_to_agent(PhoneClient(self), transport)
                self.transport = transport
                await asyncio.wait_for(conn.initialize(protocol_version=1, client_capabilities=acp.schema.ClientCapabilities()), 10)
                self.conn = conn
                self.generation += 1
                self.lost.clear()
                emit("connected", generation=self.generation)
                return
            except Exception as e:  # noqa: BLE001  (any failure to connect is retried, bounded by the test)
                emit("connect_failed", why=f"{type(e).__name__}: {e}"[:300])
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def heartbeat(self) -> None:
        misses = 0
        while True:
            await asyncio.sleep(PING_EVERY)
            conn = self.conn
            if conn is None or self.lost.is_set():
                continue
            try:
                await asyncio.wait_for(conn.ext_method("oa/ping", {}), PING_TIMEOUT)
                misses = 0
            except Exception as e:  # noqa: BLE001
                misses += 1
                if misses >= 1:
                    emit("disconnected", why=f"{type(e).__name__}: {e}"[:200])
                    self.lost.set()
                    misses = 0

    async def call(self, coro, timeout: float = 60):
        """One request on the live connection; Lost when the link dies first."""
        lost = asyncio.ensure_future(self.lost.wait())
        task = asyncio.ensure_future(asyncio.wait_for(coro, timeout))
        done, _ = await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            lost.cancel()
            try:
                return task.result()
            except (ConnectionError, RuntimeError) as e:
                if "closed" in str(e).lower():
                    self.lost.set()
                    raise Lost(str(e)) from e
                raise
        task.cancel()
        raise Lost("link lost")

    async def reattach(self) -> dict | None:
        """Connects again and resumes the session; returns the resume answer (None: reloaded or nothing to resume).
        One at a time: the watcher and a command may both find the link dead."""
        async with self.mending:
            return await self._reattach()

    async def _reattach(self) -> dict | None:
        old = self.conn
        self.conn = None
        # The old connection is given up: abort it (RST), so the kernel does not deliver what it still holds (a
        # prompt stuck behind a blackhole) later, after this phone reported the prompt's fate unknown.
        socket = getattr(getattr(self.transport, "_ws", None), "transport", None)
        if socket is not None:
            socket.abort()
        if old is not None:
            try:
                await asyncio.wait_for(old.close(), 2)
            except Exception:  # noqa: BLE001
                pass
        while True:
            await self.connect()
            if self.session is None:
                return None
            try:
                answer = await self.call(self.conn.ext_method("oa/session/resume", {"sessionId": self.session, "lastSeq": self.last_seq}), 30)
                emit("resumed", session=self.session, asked_after=self.last_seq, answer=answer)
                latest = answer.get("lastSeq") if isinstance(answer, dict) else None
                if isinstance(latest, int) and latest < self.last_seq:
                    # The bridge's numbering went back (it forgot the session and it was loaded again): what this
                    # phone saw up to last_seq is not what the bridge means by it. Load the session afresh.
                    emit("renumbered", session=self.session, ours=self.last_seq, bridge=latest)
                    await self.load(self.session, how="renumbered")
                    return None
                return answer
            except Lost:
                continue
            except RequestError as e:
                data = e.data if isinstance(e.data, dict) else {}
                if e.code == -32002 and "oldestSeq" in data:
                    emit("gap", session=self.session, data=data, message=str(e))
                    self.last_seq = data.get("lastSeq", self.last_seq)
                    return {"gap": True}
                emit("session_gone", session=self.session, code=e.code, message=str(e)[:300])
                try:
                    await self.load(self.session, how="reloaded")
                except Lost:
                    continue
                return None

    async def load(self, session: str, how: str) -> None:
        self.session = session
        self.last_seq = 0
        emit("loading", session=session, how=how)
        answer = await self.call(self.conn.load_session(session_id=session, cwd=self.cwd, mcp_servers=[]), 60)
        meta = getattr(answer, "field_meta", None) or {}
        # The bridge says when its replay lacks updates a crash lost (issue 25, F7): the phone was told.
        emit("attached", session=session, how=how, lost=meta.get("lostUpdates") if isinstance(meta, dict) else None)

    # -- commands -------------------------------------------------------------------------------------------------

    async def prompt(self, pid: str, text: str) -> None:
        session = self.session
        fut = asyncio.get_running_loop().create_future()
        self.finished[session] = fut
        try:
            for attempt in range(1, 4 if KEYED_RETRY else 2):
                outcome = await self.prompt_once(pid, text, session, fut, attempt)
                if outcome is not None:
                    return
                if not KEYED_RETRY:
                    break
                # Sent again with the same key: the bridge runs it if it never got it, else answers what it got.
                emit("prompt_retry", id=pid, attempt=attempt + 1)
                fut = asyncio.get_running_loop().create_future()
                self.finished[session] = fut
            emit("prompt_error", id=pid, session=session, code=None, message=self.unknown)
        finally:
            self.finished.pop(session, None)

    async def prompt_once(self, pid: str, text: str, session: str, fut: asyncio.Future, attempt: int) -> str | None:
        """One sending of the prompt; its outcome ("done", "error"), or None when its fate is unknown (self.unknown)."""
        while self.conn is None or self.lost.is_set():
            await self.reattach()
        try:
            answer = await self.call(self.conn.prompt(session_id=session, prompt=[acp.text_block(text)],
                                                      oa={"idempotencyKey": pid}), 120)
            emit("prompt_done", id=pid, session=session, stop=answer.stop_reason, attempt=attempt)
            return "done"
        except RequestError as e:
            emit("prompt_error", id=pid, session=session, code=e.code, message=str(e)[:300], attempt=attempt)
            return "error"
        except Lost as e:
            emit("prompt_link_lost", id=pid, why=str(e)[:200], attempt=attempt)
        # The link died with the prompt out: follow it through the resume, never send it again unkeyed.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            answer = await self.reattach()
            if answer is None:
                self.unknown = "the session was reloaded: the prompt's fate is unknown to this phone"
                return None
            if answer.get("finishedWhileAway"):
                emit("prompt_done", id=pid, session=session, stop=answer["finishedWhileAway"], via="resume", attempt=attempt)
                return "done"
            if not answer.get("promptRunning"):
                self.unknown = "after the reconnect the bridge runs no prompt and reports none finished"
                return None
            lost = asyncio.ensure_future(self.lost.wait())
            done, _ = await asyncio.wait({fut, lost}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
            lost.cancel()
            if fut in done:
                emit("prompt_done", id=pid, session=session, stop=fut.result(), via="prompt_finished", attempt=attempt)
                return "done"
        self.unknown = "no end within 120 s"
        return None

    async def run(self) -> None:
        self.cwd = sys.argv[2] if len(sys.argv) > 2 else "/"
        await self.connect()
        beat = asyncio.ensure_future(self.heartbeat())
        reader = asyncio.StreamReader()
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        watcher = asyncio.ensure_future(self.watch())
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                cmd = json.loads(line)
                if cmd["cmd"] == "quit":
                    break
                if cmd["cmd"] == "attach":
                    # Under the mending lock: the watcher must not resume or reload the session meanwhile (two loads
                    # at once interleave their replays).
                    async with self.mending:
                        while True:
                            try:
                                if self.conn is None or self.lost.is_set():
                                    await self._reattach()
                                await self.load(cmd["session"], how="load")
                                break
                            except Lost:
                                continue
                            except RequestError as e:
                                emit("attach_error", session=cmd["session"], code=e.code, message=str(e)[:300])
                                break
                elif cmd["cmd"] == "prompt":
                    await self.prompt(cmd["id"], cmd["text"])
        finally:
            beat.cancel()
            watcher.cancel()
            if self.conn is not None:
                try:
                    await asyncio.wait_for(self.conn.close(), 2)
                except Exception:  # noqa: BLE001
                    pass
            emit("bye")

    async def watch(self) -> None:
        """Between commands, a dead link is mended at once (so the phone keeps receiving what others cause)."""
        while True:
            await self.lost.wait()
            await asyncio.sleep(0.2)
            if self.lost.is_set() and not self.finished:
                try:
                    await self.reattach()
                except Exception as e:  # noqa: BLE001  (said; the next command tries again)
                    emit("mend_failed", why=f"{type(e).__name__}: {e}"[:300])


if __name__ == "__main__":
    asyncio.run(Phone().run())
