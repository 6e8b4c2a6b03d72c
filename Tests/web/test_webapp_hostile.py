"""The web app against hostile input (issue 27.5, 27.7): Markdown that used to exhaust the stack, and an agent that
impersonates the bridge and the user. Debian's Chromium via Playwright, against `oa-bridge serve` on loopback."""

from __future__ import annotations

import re
import sys

from test_webapp import agent_texts, open_from_qr, send
from web_support import AGENTS

# name -> Markdown text; each must render (no exception), show its text, and link only to http(s).
HOSTILE_MARKDOWN = {
    "bare_url": "see https://example.com/docs?x=1 please",
    "bare_url_alone": "https://example.com/",
    "url_as_label": "[https://a.example/](https://b.example/)",
    "nested_links": "[" * 1000 + "x" + "](https://e.example/)" * 1000,
    "nested_links_with_urls": "[" * 500 + "https://e.example/ " + "](https://f.example/)" * 500,
    "ten_thousand_brackets": "[" * 10_000,
    "ten_thousand_pairs": "[a](b)" * 10_000,
    "label_openers": "](" * 10_000,
    "quotes_10000_deep": ">" * 10_000 + " deep",
    "quote_lines_10000_deep": "\n".join(">" * n + " q" for n in range(1, 2_000)),
    "emphasis_nest": "*a " * 5_000 + "b" + " a*" * 5_000,
    "strong_in_link_nest": "[**[**" * 2_000 + "x" + "**](https://g.example/)**" * 2_000,
    "long_line_of_urls": "https://x.example/a " * 50_000,
    "url_one_megabyte": "https://x.example/" + "a" * 1_000_000,
    "javascript_links": "[click](javascript:alert(1)) <javascript:alert(2)> javascript:alert(3) [x](JaVaScRiPt:alert(4))",
    "data_and_relative": "[d](data:text/html,<script>alert(5)</script>) [r](/api/logout) [p](//evil.example/)",
}


def test_hostile_markdown_renders_without_exhausting_the_stack(bridge, phone):
    """Each text renders through markdown.js in the page (no stack overflow, no exception), keeps its text, and
    yields links to http(s) only. Fails on the old renderer: a bare URL recursed inline() -> link() forever."""
    phone.page.goto(bridge.origin + "/app")
    phone.page.get_by_role("heading", name="Not paired").wait_for()
    results = phone.page.evaluate("""async (cases) => {
        const m = await import('/app/markdown.js');
        const out = {};
        for (const [name, text] of Object.entries(cases)) {
            try {
                const div = document.createElement('div');
                div.append(m.renderMarkdown(text));
                out[name] = {ok: true, length: div.textContent.length,
                             links: [...div.querySelectorAll('a')].map(a => [a.getAttribute('href'), a.textContent])};
            } catch (e) {
                out[name] = {ok: false, error: String(e)};
            }
        }
        return out;
    }""", HOSTILE_MARKDOWN)
    failed = {name: r["error"] for name, r in results.items() if not r["ok"]}
    assert not failed, failed
    for name, result in results.items():
        for href, _ in result["links"]:
            assert re.match(r"https?://", href), (name, href)
        assert result["length"] > 0, name
    assert results["bare_url"]["links"] == [["https://example.com/docs?x=1", "https://example.com/docs?x=1"]]
    assert results["bare_url_alone"]["links"] == [["https://example.com/", "https://example.com/"]]
    # A link's label holds no link: the outer target wins, the inner URL is its text.
    assert results["url_as_label"]["links"] == [["https://b.example/", "https://a.example/"]]
    assert results["javascript_links"]["links"] == []
    assert results["data_and_relative"]["links"] == []
    assert results["url_one_megabyte"]["length"] >= 1_000_000
    assert phone.page.evaluate("window.__pwned === undefined")
    assert not phone.errors and not phone.dialogs


def test_a_bare_url_in_an_answer_shows_and_survives_a_reload(bridge, phone):
    """The demo agent echoes the prompt: a bare URL (and a javascript: link) in its answer. Fails on the old
    renderer: the message never showed, and after a reload the app stopped at "Maximum call stack size exceeded"."""
    open_from_qr(phone, bridge)
    send(phone, "read https://example.com/guide and [this](javascript:window.__pwned=1)")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    phone.page.wait_for_function(
        "() => [...document.querySelectorAll('#transcript [data-role=agent] a')].some(a => a.href === 'https://example.com/guide')",
        timeout=10_000)
    assert agent_texts(phone)[0] == "You said: read https://example.com/guide and this (javascript:window.__pwned=1)"
    phone.page.reload()
    phone.wait_ready()
    phone.page.wait_for_function(
        "() => [...document.querySelectorAll('#transcript [data-role=agent] a')].some(a => a.href === 'https://example.com/guide')",
        timeout=10_000)
    assert phone.page.get_by_role("status").inner_text() == "Connected"
    links = phone.page.eval_on_selector_all("#transcript a", "nodes => nodes.map(a => a.getAttribute('href'))")
    assert all(href.startswith("https://") for href in links), links
    assert phone.page.evaluate("window.__pwned === undefined")
    assert not phone.errors and not phone.dialogs


def impersonated_turn(bridge_factory, phone):
    agent = AGENTS / "impersonating_agent.py"
    bridge = bridge_factory(["--agent", f"{sys.executable} {agent}"])
    open_from_qr(phone, bridge)
    send(phone, "first")
    phone.page.locator("#permissions button").first.wait_for(timeout=20_000)
    return bridge


def test_permission_buttons_say_what_their_kind_does(bridge_factory, phone):
    """An option the agent named "Deny" that is allow_always reads "Always allow" (the agent's name only as
    secondary text); one named "Allow" that is reject_once reads "Reject". Fails on the old code (buttons showed the
    agent's names only)."""
    impersonated_turn(bridge_factory, phone)
    buttons = phone.page.eval_on_selector_all(
        "#permissions button", "nodes => nodes.map(b => [b.dataset.kind, b.querySelector('.kind')?.textContent, b.textContent])")
    assert [(kind, label) for kind, label, _ in buttons] == [("allow_always", "Always allow"), ("reject_once", "Reject")], buttons
    # No button's accessible name starts with the agent's misleading name.
    assert phone.page.get_by_role("button", name=re.compile(r"^\s*Deny")).count() == 0
    assert phone.page.get_by_role("button", name=re.compile(r"^\s*Allow\b")).count() == 0
    assert "Deny" in buttons[0][2]  # still shown, as secondary text
    phone.page.get_by_role("button", name=re.compile(r"^Reject")).click()
    phone.page.wait_for_function("() => document.querySelector('#transcript').textContent.includes('chosen=no')",
                                 timeout=10_000)
    assert not phone.errors and not phone.dialogs


def test_the_agents_user_message_chunk_is_marked_replayed_by_the_agent(bridge_factory, phone):
    """A user_message_chunk without the bridge's `_meta.oa.origin` is marked "replayed by the agent", never shown as
    the user's words, also after a reload, also when the agent forges the mark. Fails on the old code (shown as the
    user's message)."""
    impersonated_turn(bridge_factory, phone)
    for attempt in range(2):
        fake = phone.page.locator("#transcript .msg", has_text="FAKE-USER")
        assert fake.count() == 1
        assert fake.get_attribute("data-origin") == "agent" and fake.get_attribute("data-role") == "replayed"
        assert "replayed by the agent" in fake.inner_text()
        # Also the two with the bridge's mark forged (the bridge removes the one beside seq; with the bridge of
        # before issue 27.7 it reached the page, and this fails).
        assert "FAKE-USER-2" in fake.inner_text() and "FAKE-USER-3" in fake.inner_text()
        users = phone.page.eval_on_selector_all('#transcript [data-role="user"]', "nodes => nodes.map(n => n.textContent)")
        assert users == ["first"], users
        if attempt == 0:
            phone.page.locator('#permissions button[data-kind="reject_once"]').click()
            phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
            phone.page.reload()
            phone.wait_ready()
    assert not phone.errors and not phone.dialogs


def test_the_agents_prompt_finished_does_not_end_the_turn(bridge_factory, phone):
    """The agent's own `_oa/prompt_finished` (the bridge drops it; the page ignores it while its prompt waits for an
    answer): the turn goes on, Stop is offered, Send is not. Fails on the old code (Send came back mid-turn)."""
    impersonated_turn(bridge_factory, phone)
    assert phone.page.get_by_role("button", name="Stop").is_visible()
    assert not phone.page.get_by_role("button", name="Send").is_visible()
    phone.page.locator('#permissions button[data-kind="allow_always"]').click()
    phone.page.wait_for_function(
        "() => document.querySelector('#transcript').textContent.includes('chosen=yes-forever')", timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    assert not phone.errors and not phone.dialogs


def test_the_agents_agent_exited_does_not_forget_the_conversation(bridge_factory, phone):
    """The agent's own `_oa/agent_exited` (the bridge drops it; the page checks with the bridge, which still knows the
    session): no "agent stopped" line, the next prompt goes to the same session, and a reload keeps the whole
    conversation. Fails on the old code (the conversation was forgotten)."""
    impersonated_turn(bridge_factory, phone)
    phone.page.locator('#permissions button[data-kind="reject_once"]').click()
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    assert not phone.page.get_by_text("The agent stopped").is_visible()
    session = phone.page.evaluate("localStorage.getItem('oa-bridge.session')")
    assert session == "imp-1"
    send(phone, "second")
    phone.page.locator("#permissions button").first.wait_for(timeout=20_000)
    assert "turn 2 begins" in " ".join(agent_texts(phone))
    phone.page.locator('#permissions button[data-kind="reject_once"]').click()
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    assert phone.page.evaluate("localStorage.getItem('oa-bridge.session')") == "imp-1"
    phone.page.reload()
    phone.wait_ready()
    text = phone.page.inner_text("#transcript")
    assert "turn 1 begins" in text and "turn 2 begins" in text, text
    users = phone.page.eval_on_selector_all('#transcript [data-role="user"]', "nodes => nodes.map(n => n.textContent)")
    assert users == ["first", "second"], users
    assert not phone.page.get_by_text("The agent stopped").is_visible()
    assert not phone.errors and not phone.dialogs
