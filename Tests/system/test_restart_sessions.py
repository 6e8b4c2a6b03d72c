"""Sessions survive a restart of the bridge (issue 25 items 2 and 3, the bridge's side).

Real peers: `oa-bridge serve` on loopback (`--auth none`) runs the official ACP Python SDK agent
`agents/restart_agent.py`, which keeps its own sessions on disk and can load them (or, with RESTART_AGENT_LOAD=0,
cannot); a phone is a `websockets` client speaking ACP v1. The bridge is stopped with SIGTERM (idle) or `kill -9`
(mid-answer, right after an answer) and started again on the same state directory; the phone comes back with
`_oa/session/resume` as the web app does, or `session/load`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
import websockets

from loopback import Serve

AGENT = Path(__file__).resolve().parent / "agents" / "restart_agent.py"


class Desk:
    """One desktop: a working directory, the agent's own state, the bridge's state directory, and `serve` started
    (and restarted) on them."""

    def __init__(self, loads: bool = True):
        self.root = Path(tempfile.mkdtemp(prefix="oa-restart-")).resolve()
        self.work = self.root / "work"
        self.work.mkdir()
        self.agent_state = self.root / "agent"
        self.state = self.root / "state"
        self.env = {"RESTART_AGENT_DIR": str(self.agent_state), "RESTART_AGENT_LOAD": "1" if loads else "0"}
        self.serve: Serve | None = None
        self.started: list[Serve] = []

    def start(self) -> Serve:
        self.serve = Serve("--auth", "none", "--agent", f"{sys.executable} {AGENT}", prefix="oa-restart-serve-",
                           working_directory=self.work, state=self.state, env=self.env)
        self.started.append(self.serve)
        return self.serve

    def logs(self) -> str:
        """Where each `serve` of this desk logged, for a failure's message."""
        return " ".join(str(serve.log_path) for serve in self.started)

    def stop(self) -> str:
        return self.serve.stop() if self.serve else ""

    def kill9(self) -> None:
        assert self.serve is not None
        self.serve.proc.send_signal(signal.SIGKILL)
        self.serve.proc.wait(10)

    def requests(self) -> list[dict]:
        path = self.agent_state / "requests.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Phone:
    """An ACP v1 client with a bounded wait for each answer; keeps every frame it saw."""

    def __init__(self, ws):
        self.ws = ws
        self.seen: list[dict] = []
        self.next_id = 0

    async def send(self, method: str, params: dict) -> str:
        self.next_id += 1
        rid = f"r{self.next_id}"
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        return rid

    async def until(self, rid: str, timeout: float = 30) -> tuple[dict, list[dict]]:
        before = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.monotonic())))
            self.seen.append(message)
            if message.get("id") == rid and "method" not in message:
                return message, before
            before.append(message)
        raise AssertionError(f"no answer to {rid} within {timeout} s; got {before[-5:]}")

    async def call(self, method: str, params: dict, timeout: float = 30) -> tuple[dict, list[dict]]:
        return await self.until(await self.send(method, params), timeout)

    async def initialize(self) -> dict:
        answer, _ = await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert "result" in answer, answer
        return answer["result"]

    async def new_session(self, cwd: Path) -> str:
        """`session/new` in `cwd`; its id."""
        created, _ = await self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        assert "result" in created, created
        return created["result"]["sessionId"]

    async def said(self, session: str, text: str) -> list[dict]:
        """Prompts `text` and waits for the turn to end (`end_turn`); the frames before the answer."""
        answer, frames = await self.until(await self.prompt(session, text))
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        return frames

    async def prompt(self, session: str, text: str, key: str | None = None) -> str:
        params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        if key is not None:
            params["_meta"] = {"oa": {"idempotencyKey": key}}
        return await self.send("session/prompt", params)


def updates(frames: list[dict]) -> list[dict]:
    return [f["params"] for f in frames if f.get("method") == "session/update"]


def text(frames: list[dict], kind: str = "agent_message_chunk") -> str:
    return "".join(u["update"].get("content", {}).get("text", "") for u in updates(frames) if u["update"].get("sessionUpdate") == kind)


def seqs(frames: list[dict]) -> list[int]:
    return [u["_meta"]["seq"] for u in updates(frames)]


async def connect(serve: Serve):
    return await websockets.connect(serve.ws_url, max_size=1 << 24, open_timeout=10)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


def test_idle_restart_the_agent_loads_the_session_and_the_conversation_continues():
    desk = Desk(loads=True)
    serve = desk.start()

    async def before():
        async with await connect(serve) as ws:
            phone = Phone(ws)
            await phone.initialize()
            session = await phone.new_session(desk.work)
            frames = await phone.said(session, "remember the tulips")
            assert "heard: remember the tulips" in text(frames)
            return session, max(seqs(phone.seen))

    session, last_seq = run(before())
    log = desk.stop()
    assert "sessions kept" not in log
    serve = desk.start()
    try:
        async def after():
            async with await connect(serve) as ws:
                phone = Phone(ws)
                await phone.initialize()
                # The web app's way back: resume from the last seq it saw (0: all of it).
                resumed, replayed = await phone.call("_oa/session/resume", {"sessionId": session, "lastSeq": 0})
                assert "result" in resumed, (resumed, desk.logs())
                assert resumed["result"]["lastSeq"] == last_seq
                assert "readOnly" not in json.dumps(resumed["result"])
                # The bridge's own record, not the agent's history replay twice: every update once, in order.
                assert seqs(replayed) == list(range(1, last_seq + 1))
                assert text(replayed, "user_message_chunk") == "remember the tulips"
                assert text(replayed) == "heard: remember the tulips"
                frames = await phone.said(session, "and the roses")
                assert text(frames) == "heard: and the roses"
                assert min(seqs(frames)) == last_seq + 1
        run(after())
        methods = [(r["method"], r.get("session")) for r in desk.requests()]
        # The restarted agent loaded the session once, through the bridge, before the prompt reached it.
        assert methods.count(("session/load", session)) == 1
        assert methods.index(("session/load", session)) < len(methods) - 1
        assert methods[-1] == ("session/prompt", session)
    finally:
        desk.stop()


def test_kill_9_mid_answer_the_phone_resumes_from_its_last_seq_and_continues():
    desk = Desk(loads=True)
    serve = desk.start()

    async def before():
        ws = await connect(serve)
        phone = Phone(ws)
        await phone.initialize()
        session = await phone.new_session(desk.work)
        await phone.prompt(session, "slow 60")
        chunks = 0
        while chunks < 20:
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            phone.seen.append(message)
            if message.get("method") == "session/update" and message["params"]["update"].get("sessionUpdate") == "agent_message_chunk":
                chunks += 1
        # Let the store's writer (every 100 ms) catch up with what the phone saw, then kill the bridge mid-answer.
        await asyncio.sleep(0.5)
        desk.kill9()
        return session, max(seqs(phone.seen)), text(phone.seen)

    session, last_seq, shown = run(before())
    serve = desk.start()
    try:
        async def after():
            async with await connect(serve) as ws:
                phone = Phone(ws)
                await phone.initialize()
                resumed, replayed = await phone.call("_oa/session/resume", {"sessionId": session, "lastSeq": last_seq})
                assert "result" in resumed, resumed
                assert resumed["result"]["lastSeq"] >= last_seq
                assert resumed["result"]["promptRunning"] is False
                # Nothing the phone saw comes again; what it did not see (written before the kill) follows in order.
                assert all(seq > last_seq for seq in seqs(replayed))
                assert seqs(replayed) == sorted(set(seqs(replayed)))
                frames = await phone.said(session, "still there?")
                assert text(frames) == "heard: still there?"
                assert min(seqs(frames)) > resumed["result"]["lastSeq"]
        run(after())
        assert shown.startswith("c1 c2 c3")
    finally:
        desk.stop()


def test_an_agent_that_cannot_load_leaves_the_session_read_only_with_its_conversation():
    desk = Desk(loads=False)
    serve = desk.start()

    async def before():
        async with await connect(serve) as ws:
            phone = Phone(ws)
            await phone.initialize()
            session = await phone.new_session(desk.work)
            await phone.said(session, "first words")
            return session

    session = run(before())
    desk.stop()
    serve = desk.start()
    try:
        async def after():
            async with await connect(serve) as ws:
                phone = Phone(ws)
                await phone.initialize()
                resumed, replayed = await phone.call("_oa/session/resume", {"sessionId": session, "lastSeq": 0})
                assert "result" in resumed, (resumed, desk.logs())
                assert resumed["result"]["_meta"]["oa"]["readOnly"] == {"reason": "agent_restarted"}, resumed
                assert text(replayed, "user_message_chunk") == "first words"
                assert text(replayed) == "heard: first words"
                refused, _ = await phone.until(await phone.prompt(session, "more"))
                assert refused["error"]["code"] == -32011, refused
                assert refused["error"]["message"] == "session is read-only: the agent restarted and cannot load it"
                loaded, again = await phone.call("session/load", {"sessionId": session, "cwd": str(desk.work), "mcpServers": []})
                assert loaded["result"]["_meta"]["oa"]["readOnly"] == {"reason": "agent_restarted"}, loaded
                assert text(again) == "heard: first words"
                listed, _ = await phone.call("session/list", {})
                entry = next(s for s in listed["result"]["sessions"] if s["sessionId"] == session)
                assert entry["cwd"] == str(desk.work)
                assert entry["_meta"]["oa"]["readOnly"]["reason"] == "agent_restarted"
                # A new session works as ever.
                created, _ = await phone.call("session/new", {"cwd": str(desk.work), "mcpServers": []})
                answer, _ = await phone.until(await phone.prompt(created["result"]["sessionId"], "new start"))
                assert answer["result"]["stopReason"] == "end_turn"
        run(after())
        prompts = [r["text"] for r in desk.requests() if r["method"] == "session/prompt"]
        assert prompts == ["first words", "new start"]
    finally:
        desk.stop()


def test_a_prompt_retried_after_a_kill_9_gets_its_stored_answer_and_runs_once():
    desk = Desk(loads=True)
    serve = desk.start()

    async def before():
        async with await connect(serve) as ws:
            phone = Phone(ws)
            await phone.initialize()
            session = await phone.new_session(desk.work)
            answer, _ = await phone.until(await phone.prompt(session, "exactly once", key="typed-1"))
            assert answer["result"]["stopReason"] == "end_turn"
            await asyncio.sleep(0.5)  # past the store's next write
            return session, answer["result"]

    session, first = run(before())
    desk.kill9()
    serve = desk.start()
    try:
        async def after():
            async with await connect(serve) as ws:
                phone = Phone(ws)
                await phone.initialize()
                await phone.call("_oa/session/resume", {"sessionId": session, "lastSeq": 10_000})
                retried, frames = await phone.until(await phone.prompt(session, "exactly once", key="typed-1"))
                assert retried["result"] == first, retried
                assert text(frames) == ""  # nothing ran again
        run(after())
        prompts = [r for r in desk.requests() if r["method"] == "session/prompt"]
        assert [p["text"] for p in prompts] == ["exactly once"]
        # `_meta.oa` never reached the agent.
        assert prompts[0]["meta"] is None or "oa" not in prompts[0]["meta"]
    finally:
        desk.stop()


def test_kill_9_right_after_updates_never_reuses_a_seq_and_says_what_may_be_lost():
    """Finding F7: the store writes every 100 ms, so a `kill -9` right after updates loses the newest of them; the
    restored session used to number new updates from the last stored one, reusing `seq`s the phone had seen (the web
    app skipped them as already shown). Now new updates number past everything handed out, and the resume says that
    output may be missing."""
    desk = Desk(loads=True)
    serve = desk.start()

    async def before():
        ws = await connect(serve)
        phone = Phone(ws)
        await phone.initialize()
        session = await phone.new_session(desk.work)
        await phone.said(session, "kept")
        await asyncio.sleep(0.5)  # the session and its first answer are stored
        for n in range(3):
            await phone.said(session, f"burst {n}")
        # Right after the last answer's updates: the store's next write (within 100 ms) has not happened yet.
        desk.kill9()
        return session, max(seqs(phone.seen))

    session, last_seq = run(before())
    serve = desk.start()
    try:
        async def after():
            async with await connect(serve) as ws:
                phone = Phone(ws)
                await phone.initialize()
                resumed, replayed = await phone.call("_oa/session/resume", {"sessionId": session, "lastSeq": last_seq})
                assert "result" in resumed, resumed
                assert all(seq > last_seq for seq in seqs(replayed))
                frames = await phone.said(session, "after the crash")
                assert text(frames) == "heard: after the crash"
                # Above every seq the phone saw: a phone that skips what it has shown shows all of this.
                assert min(seqs(frames)) > last_seq, (seqs(frames), last_seq)
                # Told, not skipped: the bridge cannot know whether its last updates reached the store.
                lost = resumed["result"].get("lostUpdates")
                assert lost is not None, resumed
                assert lost["afterSeq"] <= last_seq < lost["throughSeq"], lost
                assert resumed["result"]["lastSeq"] >= lost["throughSeq"]
                assert min(seqs(frames)) > lost["throughSeq"]
                # A phone that saw everything up to the new numbers is told nothing.
                again, _ = await phone.call("_oa/session/resume", {"sessionId": session, "lastSeq": max(seqs(frames))})
                assert "lostUpdates" not in again["result"], again
        run(after())
        # A clean stop after that: the next start has nothing to say about lost updates.
        assert "may have lost its newest updates" in desk.stop()
        serve = desk.start()

        async def clean():
            async with await connect(serve) as ws:
                phone = Phone(ws)
                await phone.initialize()
                resumed, _ = await phone.call("_oa/session/resume", {"sessionId": session, "lastSeq": 0})
                assert "lostUpdates" not in resumed["result"], resumed
        run(clean())
    finally:
        desk.stop()


def test_the_demo_agent_never_gives_a_new_session_the_id_of_a_kept_one():
    """The built-in demo agent counted its sessions from 1 in each run: after a restart its first new session took the
    id of the session the bridge kept from before (and the kept conversation was forgotten). Now its ids are unique."""
    state = Path(tempfile.mkdtemp(prefix="oa-restart-demo-")).resolve()
    work = state / "work"
    work.mkdir()

    async def new_session(serve: Serve, say: str | None = None) -> str:
        async with await connect(serve) as ws:
            phone = Phone(ws)
            await phone.initialize()
            session = await phone.new_session(work)
            if say is not None:
                await phone.call("session/set_mode", {"sessionId": session, "modeId": "quiet"})
                answer, _ = await phone.until(await phone.prompt(session, say))
                assert answer["result"]["stopReason"] == "end_turn", answer
            return session

    serve = Serve("--auth", "none", prefix="oa-restart-demo-serve-", working_directory=work, state=state / "state")
    try:
        first = run(new_session(serve, "keep me"))
    finally:
        serve.stop()
    serve = Serve("--auth", "none", prefix="oa-restart-demo-serve-", working_directory=work, state=state / "state")
    try:
        second = run(new_session(serve))
        assert second != first, second

        async def kept():
            async with await connect(serve) as ws:
                phone = Phone(ws)
                await phone.initialize()
                resumed, replayed = await phone.call("_oa/session/resume", {"sessionId": first, "lastSeq": 0})
                assert "result" in resumed, resumed
                assert text(replayed, "user_message_chunk") == "keep me"
        run(kept())
    finally:
        serve.stop()


@pytest.mark.parametrize("content", [b"this is not a database\n" * 500, "foreign"])
def test_an_unusable_session_database_is_reported_and_moved_aside_never_wiped(content):
    desk = Desk()
    desk.state.mkdir(mode=0o700)
    database = desk.state / "sessions.sqlite"
    if content == "foreign":
        import sqlite3
        connection = sqlite3.connect(database)
        connection.execute("create table notes (text)")
        connection.execute("insert into notes values ('keep me')")
        connection.commit()
        connection.close()
    else:
        database.write_bytes(content)
    original = database.read_bytes()
    desk.start()
    try:
        moved = [p for p in desk.state.iterdir() if p.name.startswith("sessions.sqlite.unusable-") and not p.name.endswith(("-wal", "-shm"))]
        assert len(moved) == 1
        assert moved[0].read_bytes() == original
    finally:
        log = desk.stop()
    assert "the session database cannot be used; moved it aside" in log
    assert str(moved[0]) in log
