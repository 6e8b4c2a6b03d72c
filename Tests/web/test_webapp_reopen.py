"""The web app reopens a session it had after the desktop's bridge restarted (issue 25's leftover): the phone had two
conversations, `serve` is restarted on the same port and state directory, and the phone picks the older one from its
Sessions dialog. The bridge kept it (dormant) and restores it when the phone attaches: through the agent's
`session/load` when the agent can load sessions (then it goes on, live), read-only when it cannot (then the page says
so). Real peers: `oa-bridge serve` (TLS, paired) running the official ACP Python SDK agent
Tests/system/agents/restart_agent.py; Debian's Chromium. `OA_REOPEN_AGENT` names another agent (to check that the test
fails when loading is broken)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from web_support import Bridge, loopback_url, qr_url, wait_until

AGENT = Path(os.environ.get("OA_REOPEN_AGENT") or Path(__file__).resolve().parent.parent / "system" / "agents" / "restart_agent.py")


def send(phone, text: str) -> None:
    phone.page.get_by_label("Message").fill(text)
    phone.page.get_by_role("button", name="Send").click()


def agent_texts(phone) -> list[str]:
    return phone.page.eval_on_selector_all('#transcript [data-role="agent"]', "nodes => nodes.map(n => n.textContent)")


def requests(agent_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (agent_dir / "requests.jsonl").read_text().splitlines()]


@pytest.fixture
def agent_bridge(bridge_factory, tmp_path, monkeypatch):
    def start(loads: bool) -> Bridge:
        monkeypatch.setenv("RESTART_AGENT_DIR", str(tmp_path / "agent"))
        monkeypatch.setenv("RESTART_AGENT_LOAD", "1" if loads else "0")
        (tmp_path / "agent").mkdir(exist_ok=True)
        return bridge_factory(["--agent", f"{sys.executable} {AGENT}"])
    return start


def two_conversations_then_restart(phone, bridge: Bridge) -> str:
    """The phone talks in one session, starts a second and talks there, then the bridge restarts; returns the first
    session's id."""
    phone.page.goto(loopback_url(qr_url(bridge), bridge), wait_until="commit")
    phone.wait_ready()
    send(phone, "about tulips")
    wait_until(lambda: "heard: about tulips" in agent_texts(phone), 15, "the first session's answer")
    first = phone.page.evaluate("() => localStorage.getItem('oa-bridge.session')")
    phone.page.get_by_role("button", name="Sessions").click()
    phone.page.locator("#new-session").click()
    wait_until(lambda: phone.page.evaluate("() => localStorage.getItem('oa-bridge.session')") != first, 15, "a second session")
    send(phone, "about roses")
    wait_until(lambda: "heard: about roses" in agent_texts(phone), 15, "the second session's answer")
    assert "heard: about tulips" not in agent_texts(phone)
    bridge.restart()
    phone.wait_ready(timeout=30_000)
    return first


def reopen(phone, title: str) -> None:
    phone.page.get_by_role("button", name="Sessions").click()
    phone.page.locator("#session-list button", has_text=title).click()


def test_a_session_reopened_after_a_restart_is_loaded_by_the_agent_and_goes_on(agent_bridge, phone, tmp_path):
    bridge = agent_bridge(loads=True)
    first = two_conversations_then_restart(phone, bridge)
    restarted_at = len(requests(tmp_path / "agent"))
    reopen(phone, "about tulips")
    wait_until(lambda: "heard: about tulips" in agent_texts(phone), 15, "the reopened session's conversation")
    assert "heard: about roses" not in agent_texts(phone)
    # The bridge restored it through the agent's session/load, once, after the restart.
    loads = [r for r in requests(tmp_path / "agent")[restarted_at:] if r["method"] == "session/load"]
    assert [r["session"] for r in loads] == [first], requests(tmp_path / "agent")
    transcript = phone.page.inner_text("#transcript")
    assert "read-only" not in transcript and "ended" not in transcript, transcript
    send(phone, "more tulips")
    wait_until(lambda: "heard: more tulips" in agent_texts(phone), 15, "an answer in the reopened session")
    assert agent_texts(phone).count("heard: about tulips") == 1, agent_texts(phone)
    prompts = [r for r in requests(tmp_path / "agent") if r["method"] == "session/prompt" and r["text"] == "more tulips"]
    assert [r["session"] for r in prompts] == [first], prompts
    assert not phone.errors and not phone.dialogs


def test_a_session_reopened_after_a_restart_with_an_agent_that_cannot_load_is_read_only(agent_bridge, phone):
    bridge = agent_bridge(loads=False)
    two_conversations_then_restart(phone, bridge)
    reopen(phone, "about tulips")
    line = phone.page.locator("#transcript .system.restored")
    line.wait_for(timeout=15_000)
    assert "agent restarted" in line.inner_text()
    assert "heard: about tulips" in agent_texts(phone) and "heard: about roses" not in agent_texts(phone)
    assert not phone.errors and not phone.dialogs
