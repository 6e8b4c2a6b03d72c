"""`oa-bridge connect --stdio` as an editor's agent (issue 28 items 3 and 5, issue 25 item 3 for connect), driven by the
official ACP Python SDK's own `spawn_agent_process`, the way Zed or Toad start an agent, against a real `oa-bridge serve`
(the built-in demo agent: it streams the prompt back word by word, 20 ms apart, then asks a permission for a tool call)
paired over TLS with its pin, exactly as a user pairs with `connect --pair`.

- a whole conversation: initialize (the bridge's answer reaches the editor), session/new, a prompt with a permission,
  a rejected permission, session/cancel, and session/load of the session from a second editor;
- the link cut mid-prompt (a TCP relay between the two closes every connection): the editor never sees it, every
  update arrives once and in order, the prompt's answer comes;
- the link cut while the editor holds a permission request: its answer, given while the link is down, reaches the
  agent after the resume;
- a prompt typed while the bridge cannot be reached at all: it is sent once the link is back (one record of it in the
  session), or, when the link never comes back, answered with an error saying it was not sent.

Nothing here touches the network beyond loopback; no mDNS (`--browse-time 0`)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

import pytest

from loopback import BIN, Serve

pytest.importorskip("acp")
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (AllowedOutcome, ClientCapabilities, Implementation,  # noqa: E402
                        RequestPermissionResponse)

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

LONG = " ".join(f"w{i}" for i in range(200))  # about 4 s of streaming at 20 ms a word
AGENT = Path(__file__).resolve().parent / "agents" / "acp_script_agent.py"


class Relay:
    """A TCP relay on loopback between `connect --stdio` and the bridge, whose connections the test can cut (close both
    sides at once) or hold off (refuse new connections for a while)."""

    def __init__(self, target_port: int):
        self.target = target_port
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.frozen: list[threading.Event] = []
        self.refusing = False
        self.accepted = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                refusing = self.refusing
            if refusing:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            frozen = threading.Event()
            with self.lock:
                self.pairs.append((client, upstream))
                self.frozen.append(frozen)
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, upstream, frozen), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, frozen), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, frozen: threading.Event) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if not frozen.is_set():  # a frozen link swallows everything, as a blackhole route does
                    sink.sendall(data)
        except OSError:
            pass
        for side in (source, sink):
            try:
                side.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> int:
        """Closes every relayed connection (both sides); returns how many."""
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for side in pair:
                try:
                    side.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                side.close()
        return len(pairs)

    def freeze(self) -> int:
        """Every relayed connection stops carrying data, without closing (a blackholed link); new ones work."""
        with self.lock:
            frozen, self.frozen = self.frozen, []
        for event in frozen:
            event.set()
        return len(frozen)

    def refuse(self, refusing: bool) -> None:
        with self.lock:
            self.refusing = refusing

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.listener.close()


class Editor:
    """The editor's side, as the SDK's `Client`: it records every update and answers permissions as told."""

    def __init__(self, answer: str = "allow"):
        self.updates: list[tuple[str, object]] = []
        self.answer = answer
        self.asked: list[str] = []
        self.hold: asyncio.Event | None = None  # when set, a permission waits for it before answering
        self.holding = asyncio.Event()

    def on_connect(self, conn) -> None:
        pass

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append(tool_call.title)
        if self.hold is not None:
            self.holding.set()
            await self.hold.wait()
        chosen = next(o for o in options if o.kind == ("allow_once" if self.answer == "allow" else "reject_once"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append((session_id, update))

    def kinds(self, session_id: str) -> list[str]:
        return [u.session_update for s, u in self.updates if s == session_id]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for s, u in self.updates
                       if s == session_id and u.session_update == kind and getattr(u.content, "text", None) is not None)


class Desk:
    """A bridge paired with a client state directory (tokens and pin saved by `connect --pair`)."""

    def __init__(self, *extra: str, working_directory: Path | None = None):
        self.serve = Serve(*extra, prefix="oa-acp-stdio-", working_directory=working_directory)
        self.first_base = self.serve.base
        self.home = self.serve.base / "client-home"
        self.home.mkdir()
        with urllib.request.urlopen(f"{self.serve.base_url}/api/pair/info", timeout=5) as answer:
            payload = json.load(answer)
        payload["ws"] = f"wss://127.0.0.1:{self.serve.port}/"
        payload["http"] = f"https://127.0.0.1:{self.serve.port}"
        payload.pop("url", None)
        self.name = payload["name"]
        self.pin = payload["pin"]
        paired = subprocess.run([BIN, "connect", "--pair", json.dumps(payload), "--prompt", "pairing", "--browse-time", "0"],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=self.env())
        assert paired.returncode == 0, paired.stderr

    def env(self) -> dict:
        return {**os.environ, "XDG_STATE_HOME": str(self.home), "HOME": str(self.home)}

    def stop(self) -> None:
        self.serve.stop()


@pytest.fixture
def desk():
    bridge = Desk()
    try:
        yield bridge
    finally:
        bridge.stop()


def spawn(desk: Desk, editor: Editor, *target: str, stderr_path: Path | None = None, retries: int = 10):
    """`connect --stdio` started by the SDK as an editor starts its agent."""
    stderr = open(stderr_path or (desk.serve.base / "stdio.log"), "a")
    return spawn_agent_process(editor, BIN, "connect", "--stdio", *target, "--browse-time", "0", "--keepalive", "1",
                               "--retries", str(retries), env=desk.env(), transport_kwargs={"stderr": stderr})


async def initialize(conn):
    return await asyncio.wait_for(conn.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="sdk-editor", title="SDK editor", version="1.0")), 30)


async def until_logged(desk: Desk, text: str, timeout: float = 20, log_base: Path | None = None) -> None:
    """Waits until `connect --stdio`'s stderr says `text`."""
    log = (log_base or desk.serve.base) / "stdio.log"
    for _ in range(int(timeout / 0.05)):
        if log.exists() and text in log.read_text():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not logged: {text!r}\n{log.read_text() if log.exists() else ''}")


def working_directory(init) -> str:
    meta = init.field_meta or {}
    return meta["workingDirectory"]


def test_the_sdk_runs_a_whole_conversation_through_connect_stdio(desk):
    async def scenario():
        editor = Editor()
        async with spawn(desk, editor, desk.name) as (conn, process):
            init = await initialize(conn)
            # The bridge's answer, whole: the demo agent's info and the bridge's working directory.
            assert init.protocol_version == 1
            assert init.agent_info.name == "oa-bridge-demo-agent"
            cwd = working_directory(init)
            session = await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), 30)
            sid = session.session_id

            done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("hello there")]), 30)
            assert done.stop_reason == "end_turn"
            assert editor.asked == ["Tell the time"]
            assert editor.text(sid).startswith("You said: hello there (The time is ")
            assert "tool_call" in editor.kinds(sid) and "tool_call_update" in editor.kinds(sid)

            editor.answer = "reject"
            done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("second")]), 30)
            assert done.stop_reason == "end_turn"
            rejected = [u for s, u in editor.updates if s == sid and u.session_update == "tool_call_update"][-1]
            assert rejected.status == "failed"

            # session/cancel while the answer streams.
            running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(LONG)]))
            for _ in range(200):
                if "w5 " in editor.text(sid):
                    break
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=sid)
            done = await asyncio.wait_for(running, 30)
            assert done.stop_reason == "cancelled"
            assert "w199" not in editor.text(sid)

            # A second editor loads the session: it sees the questions (the bridge's records) and the answers.
            second = Editor()
            async with spawn(desk, second, desk.name) as (conn2, _):
                await initialize(conn2)
                await asyncio.wait_for(conn2.load_session(cwd=cwd, session_id=sid, mcp_servers=[]), 30)
                assert "hello there" in second.text(sid, "user_message_chunk")
                assert "You said: hello there" in second.text(sid)
                assert "You said: second" in second.text(sid)
            # stdout carried nothing but ACP: the SDK would have failed on anything else; stderr has the log.
            assert process.returncode is None
        log = (desk.serve.base / "stdio.log").read_text()
        assert "connected to wss://" in log, log

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_a_link_cut_mid_prompt_is_mended_without_the_editor_noticing(desk):
    relay = Relay(desk.serve.port)
    try:
        async def scenario():
            editor = Editor()
            async with spawn(desk, editor, f"127.0.0.1:{relay.port}") as (conn, _):
                init = await initialize(conn)
                session = await asyncio.wait_for(conn.new_session(cwd=working_directory(init), mcp_servers=[]), 30)
                sid = session.session_id
                running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(LONG)]))
                for _ in range(200):
                    if "w20 " in editor.text(sid):
                        break
                    await asyncio.sleep(0.05)
                assert relay.cut() >= 1
                done = await asyncio.wait_for(running, 60)
                assert done.stop_reason == "end_turn"
                # Every word once, in order: nothing lost while the link was down, nothing replayed twice.
                text = editor.text(sid)
                assert text.startswith("You said: " + LONG + " (The time is "), text[:400]
                assert relay.accepted >= 2
                # The mended link carries on: another prompt.
                done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("after")]), 30)
                assert done.stop_reason == "end_turn"
                assert "You said: after" in editor.text(sid)
            log = (desk.serve.base / "stdio.log").read_text()
            assert "the link to the bridge was lost" in log and "resumed 1 session" in log, log

        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        relay.close()


def test_a_blackholed_link_is_seen_by_its_keepalive_and_mended(desk):
    """No FIN, no RST: the link just stops carrying data mid-prompt. `--keepalive 1` sees it within 2 s."""
    relay = Relay(desk.serve.port)
    try:
        async def scenario():
            editor = Editor()
            async with spawn(desk, editor, f"127.0.0.1:{relay.port}") as (conn, _):
                init = await initialize(conn)
                session = await asyncio.wait_for(conn.new_session(cwd=working_directory(init), mcp_servers=[]), 30)
                sid = session.session_id
                running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(LONG)]))
                for _ in range(200):
                    if "w20 " in editor.text(sid):
                        break
                    await asyncio.sleep(0.05)
                assert relay.freeze() >= 1
                done = await asyncio.wait_for(running, 60)
                assert done.stop_reason == "end_turn"
                text = editor.text(sid)
                assert text.startswith("You said: " + LONG + " (The time is "), text[:400]
            log = (desk.serve.base / "stdio.log").read_text()
            assert "the link to the bridge was lost" in log and "resumed 1 session" in log, log

        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        relay.close()


def test_a_permission_answered_while_the_link_is_down_reaches_the_agent(desk):
    relay = Relay(desk.serve.port)
    try:
        async def scenario():
            editor = Editor()
            editor.hold = asyncio.Event()
            async with spawn(desk, editor, f"127.0.0.1:{relay.port}") as (conn, _):
                init = await initialize(conn)
                session = await asyncio.wait_for(conn.new_session(cwd=working_directory(init), mcp_servers=[]), 30)
                sid = session.session_id
                running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("ask me")]))
                await asyncio.wait_for(editor.holding.wait(), 30)
                relay.refuse(True)
                relay.cut()
                await asyncio.sleep(0.5)
                editor.hold.set()  # answered while the link is down
                await asyncio.sleep(1.0)
                relay.refuse(False)
                done = await asyncio.wait_for(running, 60)
                assert done.stop_reason == "end_turn"
                assert editor.asked == ["Tell the time"], "the permission was asked again"
                assert "(The time is " in editor.text(sid), editor.text(sid)

        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        relay.close()


def test_a_prompt_typed_while_the_bridge_is_unreachable_is_sent_once_when_it_is_back(desk):
    relay = Relay(desk.serve.port)
    try:
        async def scenario():
            editor = Editor()
            async with spawn(desk, editor, f"127.0.0.1:{relay.port}") as (conn, _):
                init = await initialize(conn)
                cwd = working_directory(init)
                session = await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), 30)
                sid = session.session_id
                relay.refuse(True)
                relay.cut()
                await until_logged(desk, "the link to the bridge was lost")
                typed = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("typed offline")]))
                await asyncio.sleep(3.0)
                assert not typed.done()
                relay.refuse(False)
                done = await asyncio.wait_for(typed, 60)
                assert done.stop_reason == "end_turn"
                assert "You said: typed offline" in editor.text(sid)
            # The session holds the prompt once: a second editor's load shows one record of it.
            second = Editor()
            async with spawn(desk, second, desk.name) as (conn2, _):
                await initialize(conn2)
                await asyncio.wait_for(conn2.load_session(cwd=cwd, session_id=sid, mcp_servers=[]), 30)
                assert second.text(sid, "user_message_chunk").count("typed offline") == 1
                assert second.text(sid).count("You said: typed offline") == 1

        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        relay.close()


def test_a_prompt_that_cannot_be_sent_is_answered_with_an_error_saying_so(desk):
    relay = Relay(desk.serve.port)
    try:
        async def scenario():
            editor = Editor()
            async with spawn(desk, editor, f"127.0.0.1:{relay.port}", retries=2) as (conn, process):
                init = await initialize(conn)
                session = await asyncio.wait_for(conn.new_session(cwd=working_directory(init), mcp_servers=[]), 30)
                relay.refuse(True)
                relay.cut()
                # Typed once the link is known to be down (a prompt written into a link not yet seen dead is "sent").
                await until_logged(desk, "the link to the bridge was lost")
                with pytest.raises(RequestError) as refused:
                    await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("lost?")]), 60)
                assert "not sent" in str(refused.value) or "not sent" in json.dumps(refused.value.data or {}), refused.value
                assert process.returncode is None
                # The next request tries again, and works once the bridge is reachable.
                relay.refuse(False)
                done = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("again")]), 60)
                assert done.stop_reason == "end_turn"

        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        relay.close()


def test_a_bridge_restart_between_prompts_is_mended_and_the_session_goes_on():
    """The bridge restarts (SIGTERM, then serve again on the same port with the same state directory: it keeps its
    sessions, issue 25 item 2) with the scripted SDK agent, which loads sessions: the editor's next prompt in the same
    session is answered as if nothing happened."""
    workspace = Path(tempfile.mkdtemp(prefix="oa-acp-stdio-restart-")).resolve()
    desk = Desk("--agent", f"{sys.executable} {AGENT}", working_directory=workspace)
    try:
        async def scenario():
            editor = Editor()
            async with spawn(desk, editor, desk.name) as (conn, _):
                init = await initialize(conn)
                session = await asyncio.wait_for(conn.new_session(cwd=working_directory(init), mcp_servers=[]), 30)
                sid = session.session_id
                done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("before the restart")]), 30)
                assert done.stop_reason == "end_turn"
                port, state = desk.serve.port, desk.serve.state
                desk.serve.stop()
                desk.serve = Serve("--agent", f"{sys.executable} {AGENT}", "--port", str(port), state=state,
                                   working_directory=workspace, prefix="oa-acp-stdio-again-")
                await until_logged(desk, "resumed 1 session", log_base=desk.first_base)
                done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("after the restart")]), 30)
                assert done.stop_reason == "end_turn"
                assert "heard: before the restart" in editor.text(sid)
                assert editor.text(sid).count("heard: before the restart") == 1, "the history was shown again"
                assert "heard: after the restart" in editor.text(sid)

        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        desk.stop()
