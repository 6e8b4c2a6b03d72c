"""The web app after the desktop's bridge restarted (issue 25 item 2): the conversation stays on the page and goes on
with an agent that can load sessions; with one that cannot, it stays readable, with a line that the agent restarted
and a New session button. Real peers: `oa-bridge serve` (TLS, paired) running the official ACP Python SDK agent
Tests/system/agents/restart_agent.py, restarted on the same port and state directory; Debian's Chromium."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from web_support import Bridge, loopback_url, qr_url, wait_until

AGENT = Path(__file__).resolve().parent.parent / "system" / "agents" / "restart_agent.py"


def open_from_qr(phone, bridge) -> None:
    phone.page.goto(loopback_url(qr_url(bridge), bridge), wait_until="commit")
    phone.wait_ready()


def send(phone, text: str) -> None:
    phone.page.get_by_label("Message").fill(text)
    phone.page.get_by_role("button", name="Send").click()


def agent_texts(phone) -> list[str]:
    phone.page.wait_for_timeout(50)
    return phone.page.eval_on_selector_all('#transcript [data-role="agent"]', "nodes => nodes.map(n => n.textContent)")


def restart(bridge: Bridge) -> None:
    """SIGTERM, then `serve` again with the same arguments: same port, state directory and working directory."""
    bridge.restart()


@pytest.fixture
def agent_bridge(bridge_factory, tmp_path, monkeypatch):
    def start(loads: bool) -> Bridge:
        monkeypatch.setenv("RESTART_AGENT_DIR", str(tmp_path / "agent"))
        monkeypatch.setenv("RESTART_AGENT_LOAD", "1" if loads else "0")
        return bridge_factory(["--agent", f"{sys.executable} {AGENT}"])
    return start


def test_after_a_restart_the_page_shows_the_conversation_and_it_goes_on(agent_bridge, phone):
    bridge = agent_bridge(loads=True)
    open_from_qr(phone, bridge)
    send(phone, "remember the tulips")
    wait_until(lambda: "heard: remember the tulips" in agent_texts(phone), 15, "the first answer")
    restart(bridge)
    phone.wait_ready(timeout=30_000)
    transcript = phone.page.inner_text("#transcript")
    assert "remember the tulips" in transcript
    assert "ended" not in transcript and "read-only" not in transcript
    send(phone, "and the roses")
    wait_until(lambda: "heard: and the roses" in agent_texts(phone), 15, "the answer after the restart")
    texts = agent_texts(phone)
    assert texts.count("heard: remember the tulips") == 1, texts
    # A reload after the restart shows the same conversation (the bridge's record, nothing twice).
    phone.page.reload()
    phone.wait_ready()
    assert agent_texts(phone) == texts
    assert phone.page.locator("#transcript .msg.user").count() == 2
    assert not phone.errors and not phone.dialogs


def reserved(bridge: Bridge) -> int:
    """The highest `seq` reservation in the bridge's session store (0 when it holds none)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{bridge.state / 'sessions.sqlite'}?mode=ro", uri=True)) as db:
            return db.execute("SELECT coalesce(max(seqReserved), 0) FROM session").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_kill_9_is_said_where_output_may_be_missing_once_and_a_reload_keeps_the_line(agent_bridge, phone):
    """Issue 25 (F7) after the page reloads: a `kill -9` of the bridge may lose its newest updates, which the page says
    once, at its place in the conversation. The line used to live only on the screen: a reload (or the chaos run's
    phone, reopened right after it was written) lost it, and the bridge does not say it again to a page that counted
    as told."""
    bridge = agent_bridge(loads=True)
    open_from_qr(phone, bridge)
    send(phone, "before the crash")
    wait_until(lambda: "heard: before the crash" in agent_texts(phone), 15, "the first answer")
    # The store holds the session and a reservation of its numbers (written within 100 ms): the killed bridge leaves
    # it behind, so the next start cannot know which numbered updates it saved.
    wait_until(lambda: reserved(bridge) > 0, 15, "the session's numbers reserved in the store")
    bridge.proc.kill()
    bridge.proc.wait(10)
    bridge.start()
    missing = "Some output may be missing here"
    wait_until(lambda: missing in phone.page.inner_text("#transcript"), 30, "the line about output that may be missing")
    send(phone, "after the crash")
    wait_until(lambda: "heard: after the crash" in agent_texts(phone), 15, "the answer after the crash")

    def in_order() -> list[str]:
        text = phone.page.inner_text("#transcript")
        marks = ["heard: before the crash", missing, "heard: after the crash"]
        assert all(text.count(mark) == 1 for mark in marks), text
        return sorted(marks, key=text.index)

    assert in_order() == ["heard: before the crash", missing, "heard: after the crash"]
    phone.page.reload()
    phone.wait_ready()
    wait_until(lambda: "heard: after the crash" in agent_texts(phone), 15, "the conversation after the reload")
    assert in_order() == ["heard: before the crash", missing, "heard: after the crash"]
    assert not phone.errors and not phone.dialogs


def test_an_agent_that_cannot_load_leaves_the_conversation_read_only_with_a_new_session_button(agent_bridge, phone):
    bridge = agent_bridge(loads=False)
    open_from_qr(phone, bridge)
    send(phone, "first words")
    wait_until(lambda: "heard: first words" in agent_texts(phone), 15, "the first answer")
    restart(bridge)
    phone.wait_ready(timeout=30_000)
    line = phone.page.locator("#transcript .system.restored")
    line.wait_for(timeout=15_000)
    assert "agent restarted" in line.inner_text()
    assert "heard: first words" in agent_texts(phone)
    # A prompt typed anyway is refused with the bridge's words, not lost silently.
    send(phone, "anyone?")
    phone.page.wait_for_function(
        "() => document.querySelector('#transcript').textContent.includes('read-only')", timeout=15_000)
    line.get_by_role("button", name="New session").click()
    wait_until(lambda: phone.page.locator("#transcript .system.restored").count() == 0, 15, "a fresh transcript")
    send(phone, "new start")
    wait_until(lambda: "heard: new start" in agent_texts(phone), 15, "an answer in the new session")
    assert not phone.errors and not phone.dialogs


def test_the_outbox_sends_one_idempotency_key_per_typed_prompt(agent_bridge, phone, tmp_path):
    bridge = agent_bridge(loads=True)
    open_from_qr(phone, bridge)
    keys = []
    phone.page.on("websocket", lambda ws: ws.on("framesent", lambda payload: keys.append(payload)))
    phone.page.reload()
    phone.wait_ready()
    send(phone, "one")
    wait_until(lambda: "heard: one" in agent_texts(phone), 15, "the first answer")
    send(phone, "two")
    wait_until(lambda: "heard: two" in agent_texts(phone), 15, "the second answer")
    import json
    prompts = [json.loads(k) for k in keys if isinstance(k, str) and '"session/prompt"' in k]
    sent = [p["params"]["_meta"]["oa"]["idempotencyKey"] for p in prompts]
    assert len(sent) == 2 and len(set(sent)) == 2 and all(1 <= len(k) <= 128 for k in sent), prompts
    # The agent never sees the key.
    log = (tmp_path / "agent" / "requests.jsonl").read_text()
    assert sent[0] not in log and sent[1] not in log
