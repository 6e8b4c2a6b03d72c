#!/usr/bin/env python3
"""One of the chaos test's phones (Tests/lab/test_chaos.py): the bridge's web app in Debian's Chromium, driven by
Playwright, run inside a lab host by the test venv's python (so the page's traffic crosses the lab's links).

Commands on stdin, one JSON object a line; what happened on stdout, one JSON object a line:

    {"cmd": "open", "url": U, "session": ID}    opens the app on session ID (as a phone that had it open before:
                                                the page's stored session), -> {"ev": "ready"}
    {"cmd": "attach", "session": ID}            the user opens session ID again (after the agent restarted the app
                                                gives it up): stored as current, page reloaded -> {"ev": "ready"}
    {"cmd": "prompt", "id": P, "text": T}       typed and sent -> {"ev": "prompt_done"} when the answer is on screen,
                                                {"ev": "prompt_error"} when the page says it was not sent
    {"cmd": "snapshot"}                         -> {"ev": "snapshot", "agent": [the agent's messages on screen], ...}
    {"cmd": "quit"}

and, as they come: every `session/update` frame the page received ("update": session, seq, kind, text), every
`session/prompt` frame it sent ("sent": text, idempotency key), the connection line's state ("state"), and every
line the app writes into the conversation ("system")."""

from __future__ import annotations

import json
import queue
import sys
import threading
import time

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"


def emit(ev: str, **fields) -> None:
    sys.stdout.write(json.dumps({"ev": ev, "t": time.time(), **fields}) + "\n")
    sys.stdout.flush()


def on_frame(direction: str, payload) -> None:
    if isinstance(payload, bytes):
        return
    try:
        message = json.loads(payload)
    except ValueError:
        return
    if not isinstance(message, dict):
        return
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if direction == "in" and message.get("method") == "session/update":
        update = params.get("update") or {}
        content = update.get("content") if isinstance(update.get("content"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        oa = meta.get("oa") if isinstance(meta.get("oa"), dict) else {}
        emit("update", session=params.get("sessionId"), seq=meta.get("seq"), kind=update.get("sessionUpdate"),
             text=content.get("text"), origin=oa.get("origin"))
    elif direction == "in" and isinstance(message.get("method"), str) and message["method"].startswith("_oa/") \
            and message["method"] != "_oa/ping":
        emit("notice", method=message["method"], params=params)
    elif direction == "out" and message.get("method") == "session/prompt":
        blocks = params.get("prompt") or []
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        oa = meta.get("oa") if isinstance(meta.get("oa"), dict) else {}
        emit("sent", session=params.get("sessionId"), text=text, key=oa.get("idempotencyKey"), rid=message.get("id"))
    elif direction == "in" and "id" in message and "method" not in message and "error" in message:
        emit("rpc_error", rid=message.get("id"), error=message["error"])


def main() -> int:
    commands: queue.Queue = queue.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            if line.strip():
                commands.put(json.loads(line))
        commands.put({"cmd": "quit"})

    threading.Thread(target=read_stdin, daemon=True).start()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, timeout=60_000,
                                    args=["--disable-background-networking", "--disable-component-update",
                                          "--no-first-run"])
        device = dict(p.devices["Pixel 7"])
        device.pop("default_browser_type", None)
        context = browser.new_context(**device, ignore_https_errors=True)
        context.set_default_timeout(30_000)
        page = context.new_page()
        page.on("websocket", lambda ws: (ws.on("framereceived", lambda data: on_frame("in", data)),
                                         ws.on("framesent", lambda data: on_frame("out", data)),
                                         emit("websocket", url=ws.url)))
        page.on("pageerror", lambda error: emit("page_error", error=str(error)[:500]))
        page.on("console", lambda m: emit("console", type=m.type, text=m.text[:500]) if m.type in ("error", "warning") else None)
        # The app's fallback transport (Streamable HTTP at /acp) carries updates this phone does not see frame by
        # frame: said, so the check of seq numbers allows the hole (the screen is still checked).
        page.on("request", lambda r: emit("http_transport", method=r.method, url=r.url[:200])
                if "/acp" in r.url.split("://", 1)[-1].split("?", 1)[0] else None)
        page.on("requestfailed", lambda r: emit("request_failed", url=r.url[:200], failure=str(r.failure)[:200]))
        page.on("dialog", lambda dialog: (emit("dialog", message=dialog.message[:300]), dialog.dismiss()))
        state = {"connection": None, "system": 0}
        base = {"url": None}

        def pump() -> None:
            """Reports the connection line and new conversation lines of the app."""
            try:
                now = page.evaluate("""() => ({
                    connection: document.getElementById('connection')?.dataset.state || null,
                    system: [...document.querySelectorAll('#transcript .system')].map(n => n.textContent)})""")
            except Exception:  # noqa: BLE001  (the page is navigating)
                return
            if now["connection"] != state["connection"]:
                state["connection"] = now["connection"]
                emit("state", state=now["connection"])
            if len(now["system"]) > state["system"]:
                for line in now["system"][state["system"]:]:
                    emit("system", text=line)
            state["system"] = len(now["system"])

        def store_current(session: str) -> None:
            page.evaluate("""(id) => {
                const key = 'oa-bridge.s.' + id;
                if (!localStorage.getItem(key)) localStorage.setItem(key, JSON.stringify({id, lastSeq: 0, log: [], updated: Date.now()}));
                localStorage.setItem('oa-bridge.session', id);
            }""", session)

        def ready() -> None:
            try:
                page.wait_for_selector('html[data-ready="true"]', timeout=60_000)
            except Exception:
                emit("not_ready", url=page.url, text=page.evaluate("() => document.body ? document.body.innerText.slice(0, 1500) : ''"))
                raise
            state["system"] = 0
            emit("ready", session=page.evaluate("() => localStorage.getItem('oa-bridge.session')"))

        def open_app(session: str, url: str) -> None:
            """Opens the app on `session`. A load that fails (the link is down: the browser shows its error page) is
            tried again every second for 90 s, as a user would."""
            origin = url.split("/app")[0]
            deadline = time.monotonic() + 90
            while True:
                try:
                    page.goto(origin + "/api/health")
                    store_current(session)
                    page.goto(url)
                    ready()
                    return
                except Exception as e:  # noqa: BLE001
                    if time.monotonic() > deadline:
                        raise
                    emit("open_retry", error=f"{type(e).__name__}: {e}"[:200])
                    time.sleep(1)

        def prompt(pid: str, text: str) -> None:
            lines_before = page.evaluate("() => document.querySelectorAll('#transcript .system').length")
            page.fill("#message", text)
            page.click("#send")
            deadline = time.monotonic() + 120
            idle_since = None
            while time.monotonic() < deadline:
                got = page.evaluate("""([text, before]) => {
                    // includes: a second prompt running at once in the session puts its answer in the same bubble.
                    const agent = [...document.querySelectorAll('#transcript .msg.agent')].some(n => n.textContent.includes(text));
                    const mine = [...document.querySelectorAll('#transcript .msg.user')].filter(n => n.textContent.startsWith(text));
                    const running = !document.getElementById('stop').hidden;
                    const said = [...document.querySelectorAll('#transcript .system')].slice(before).map(n => n.textContent);
                    return {agent, running, said, states: mine.map(n => n.dataset.state || null)};
                }""", [text, lines_before])
                if got["agent"] and not got["running"]:
                    emit("prompt_done", id=pid, session=page.evaluate("() => localStorage.getItem('oa-bridge.session')"))
                    return
                if "unsent" in got["states"]:
                    emit("prompt_error", id=pid, code=None, message="the page shows it as not sent (Retry)")
                    return
                # The turn is over without the answer, and the page said why in the conversation (the agent's error,
                # the agent stopped): an error the user sees. Waited 2 s for a late answer first.
                waiting = any(s in ("queued", "sending", "checking") for s in got["states"])
                if got["said"] and not got["running"] and not waiting:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > 2:
                        emit("prompt_error", id=pid, code=None, message="the page says: " + " / ".join(got["said"])[:300])
                        return
                else:
                    idle_since = None
                pump()
                page.wait_for_timeout(100)
            emit("prompt_error", id=pid, code=None, message="no answer on screen within 120 s", lost=True)

        while True:
            try:
                cmd = commands.get(timeout=0.2)
            except queue.Empty:
                pump()
                continue
            try:
                if cmd["cmd"] == "quit":
                    break
                if cmd["cmd"] == "open":
                    base["url"] = cmd["url"]
                    open_app(cmd["session"], cmd["url"])
                elif cmd["cmd"] == "attach":
                    # The app again, as after a reload (the pairing it saved stands; no link needed).
                    open_app(cmd["session"], base["url"].split("#", 1)[0])
                elif cmd["cmd"] == "prompt":
                    prompt(cmd["id"], cmd["text"])
                elif cmd["cmd"] == "snapshot":
                    snap = page.evaluate("""() => ({
                        agent: [...document.querySelectorAll('#transcript .msg.agent')].map(n => n.textContent),
                        system: [...document.querySelectorAll('#transcript .system')].map(n => n.textContent),
                        session: localStorage.getItem('oa-bridge.session'),
                        connection: document.getElementById('connection')?.dataset.state || null})""")
                    emit("snapshot", **snap)
            except Exception as e:  # noqa: BLE001  (said, and the phone goes on)
                emit("command_failed", cmd=cmd.get("cmd"), id=cmd.get("id"), error=f"{type(e).__name__}: {e}"[:500])
        context.close()
        browser.close()
    emit("bye")
    return 0


if __name__ == "__main__":
    sys.exit(main())
