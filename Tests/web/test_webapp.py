"""The phone web app at /app (issue 13) in a real browser: Debian's Chromium driven by Playwright with Pixel 7
emulation, against `oa-bridge serve` on loopback over TLS (self-signed: the browser context accepts it, as a user
would after the warning). Every wait is bounded."""

from __future__ import annotations

import base64
import json
import re
import sys
import time

import pytest

from web_support import AGENTS, loopback_url, qr_url, wait_until

DEMO_WORD_DELAY = 0.02  # the built-in demo agent streams one word per 20 ms


def open_from_qr(phone, bridge) -> tuple[float, int]:
    """Opens the URL of the bridge's QR code on the phone and waits until it can prompt. Returns (wall seconds from
    navigation to ready, the page's own performance.now() at ready in ms)."""
    url = loopback_url(qr_url(bridge), bridge)
    start = time.monotonic()
    phone.page.goto(url, wait_until="commit")
    phone.wait_ready()
    elapsed = time.monotonic() - start
    return elapsed, int(phone.page.evaluate("Number(document.documentElement.dataset.readyMs)"))


def send(phone, text: str) -> None:
    phone.page.get_by_label("Message").fill(text)
    phone.page.get_by_role("button", name="Send").click()


def agent_texts(phone) -> list[str]:
    phone.page.wait_for_timeout(50)  # one animation frame for the streaming render
    return phone.page.eval_on_selector_all('#transcript [data-role="agent"]', "nodes => nodes.map(n => n.textContent)")


def test_pairs_from_the_qr_code_url_and_is_ready_within_a_second(bridge, phone, artifacts):
    url = qr_url(bridge)
    info = bridge.get_json("/api/pair/info")
    # The QR code holds the short link https://<lan address>:<port>/app#1<pairing code><pin prefix> (issue 29 item 2),
    # the same as /api/pair/info's url.
    assert url == info["url"]
    match = re.fullmatch(r"https://([^/]+):(\d+)/app#1([0-9]{39})([0-9]{39})", url)
    assert match, url
    code = base64.urlsafe_b64encode(int(match.group(3)).to_bytes(16, "big")).decode().rstrip("=")
    assert "oa_p_" + code == info["token"]
    assert int(match.group(4)).to_bytes(16, "big") == base64.b64decode(info["pin"][len("sha256/"):])[:16]
    assert info["http"] == f"https://{match.group(1)}:{match.group(2)}"

    seconds, page_ms = open_from_qr(phone, bridge)
    # The fragment (the pairing token) is gone from the address bar once paired; it never reached the server's log.
    assert "#" not in phone.page.url and phone.page.url.endswith("/app")
    assert info["token"] not in bridge.logs() and match.group(3) not in bridge.logs()
    assert phone.page.get_by_role("status").inner_text() == "Connected"
    devices = bridge.devices()
    assert len(devices) == 1 and "Pixel 7" in devices[0]["name"], devices
    # Accessible names: the prompt box and the send button.
    assert phone.page.get_by_label("Message").is_enabled()
    assert phone.page.get_by_role("button", name="Send").is_visible()

    (artifacts / "time-to-ready.json").write_text(json.dumps({"wall_seconds": round(seconds, 3), "page_ms": page_ms}) + "\n")
    print(f"\ntime from opening the QR URL to ready-to-prompt: {seconds * 1000:.0f} ms wall, {page_ms} ms in the page")
    assert seconds < 5.0, f"ready after {seconds:.2f} s (budget 1 s on loopback; 5 s allowed for a loaded CI machine)"
    assert not phone.errors and not phone.dialogs


def test_csp_and_security_headers_of_every_app_file(bridge, phone):
    response = phone.page.goto(bridge.origin + "/app")
    headers = response.headers
    csp = headers["content-security-policy"]
    directives = {d.strip().split(" ")[0]: d.strip() for d in csp.split(";") if d.strip()}
    assert directives["default-src"] == "default-src 'none'"
    assert directives["script-src"] == "script-src 'self'"
    assert directives["style-src"] == "style-src 'self'"
    assert directives["connect-src"] == "connect-src 'self'"
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    total = 0
    for name in ["index.html", "app.css", "main.js", "auth.js", "rpc.js", "view.js", "markdown.js", "heartbeat.js",
                 "pairing.js", "outbox.js", "manifest.webmanifest", "icon.svg", "icon192.png", "icon512.png"]:
        asset = phone.page.request.get(bridge.origin + "/app/" + ("" if name == "index.html" else name))
        assert asset.status == 200, name
        assert asset.headers["content-security-policy"] == csp and asset.headers["x-content-type-options"] == "nosniff"
        total += len(asset.body())
    print(f"\n/app assets: {total} bytes")
    assert total < 150_000
    # The browser enforces it: an inline script is refused.
    phone.page.evaluate("""() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1';
                                   document.body.append(s); }""")
    assert phone.page.evaluate("window.__inline === undefined")
    # Installable: the manifest names the app and its icons.
    manifest = phone.page.request.get(bridge.origin + "/app/manifest.webmanifest").json()
    assert manifest["start_url"] == "/app" and manifest["display"] == "standalone"
    assert {icon["sizes"] for icon in manifest["icons"]} >= {"192x192", "512x512"}


def test_streaming_a_permission_tap_and_stop(bridge, phone):
    open_from_qr(phone, bridge)
    send(phone, "hello **phone**")
    # The demo agent streams the echo, shows a tool call and asks permission: big buttons named after the options.
    allow = phone.page.get_by_role("button", name="Allow once")
    allow.wait_for(timeout=10_000)
    assert phone.page.get_by_role("button", name="Reject").is_visible()
    assert phone.page.get_by_role("button", name="Stop").is_visible()
    box = allow.bounding_box()
    assert box and box["height"] >= 44 and box["width"] >= 200
    allow.click()
    phone.page.wait_for_selector('#transcript .tool[data-status="completed"]', timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    texts = agent_texts(phone)
    assert texts[0] == "You said: hello phone"  # Markdown: **phone** is bold
    assert phone.page.eval_on_selector('#transcript [data-role="agent"] strong', "n => n.textContent") == "phone"
    assert "The time is" in texts[-1]

    # Stop: a long prompt is cancelled mid-stream (session/cancel); the turn ends as cancelled.
    words = " ".join(f"w{i:03d}" for i in range(300))
    send(phone, words)
    phone.page.wait_for_function(
        "() => [...document.querySelectorAll('#transcript [data-role=agent]')].some(n => n.textContent.includes('w010'))",
        timeout=10_000)
    phone.page.get_by_role("button", name="Stop").click()
    phone.page.get_by_text("Stopped.").wait_for(timeout=10_000)
    last = agent_texts(phone)[-1]
    assert last.startswith("You said: w000") and "w299" not in last
    assert phone.page.get_by_role("button", name="Send").is_visible()
    assert not phone.errors and not phone.dialogs


def test_a_reload_keeps_the_pairing_and_the_conversation(bridge, phone):
    open_from_qr(phone, bridge)
    send(phone, "remember me")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.wait_for_selector('#transcript .tool[data-status="completed"]', timeout=10_000)
    # The demo agent's last chunk comes after the tool's completion: read the transcript once it is there.
    phone.page.get_by_text("(The time is", exact=False).wait_for(timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    before = phone.page.inner_text("#transcript")
    phone.page.reload()
    phone.wait_ready()
    assert phone.page.url.endswith("/app")
    assert phone.page.inner_text("#transcript") == before
    assert agent_texts(phone).count("You said: remember me") == 1
    assert phone.page.locator("#transcript .msg.user").count() == 1
    # Still the same device and the same session: nothing paired twice.
    assert len(bridge.devices(all_devices=True)) == 1
    send(phone, "again")
    phone.page.get_by_role("button", name="Allow once").wait_for(timeout=10_000)
    assert "You said: again" in agent_texts(phone)
    assert not phone.errors and not phone.dialogs


def test_network_cut_mid_answer_then_reconnect_and_replay_without_loss_or_duplicates(bridge, phone):
    open_from_qr(phone, bridge)
    words = " ".join(f"w{i:03d}" for i in range(250))  # about 5 s of streaming
    send(phone, words)
    phone.page.wait_for_function(
        "() => [...document.querySelectorAll('#transcript [data-role=agent]')].some(n => n.textContent.includes('w020'))",
        timeout=10_000)
    phone.context.set_offline(True)
    phone.page.wait_for_selector('#connection[data-state="offline"]', timeout=5_000)
    seen_offline = agent_texts(phone)[-1]
    time.sleep(2.0)  # the agent keeps streaming into the bridge's replay buffer
    assert agent_texts(phone)[-1] == seen_offline, "updates arrived while offline"
    phone.context.set_offline(False)
    phone.wait_ready(timeout=15_000)
    # The permission request that came while the phone was away is asked again on resume.
    phone.page.get_by_role("button", name="Allow once").click(timeout=15_000)
    phone.page.wait_for_selector('#transcript .tool[data-status="completed"]', timeout=10_000)
    texts = agent_texts(phone)
    assert texts[0] == "You said: " + words, "lost or duplicated words"
    assert phone.page.locator("#transcript .tool").count() == 1
    assert len(seen_offline) < len(texts[0])
    assert not phone.errors and not phone.dialogs


def test_a_revoke_on_the_desktop_shows_the_unpaired_screen(bridge, phone, phone_factory, browser):
    open_from_qr(phone, bridge)
    desktop = browser.new_context()
    try:
        page = desktop.new_page()
        page.set_default_timeout(10_000)
        page.goto(bridge.local + "/pair")
        device = bridge.devices()[0]
        page.get_by_role("button", name="Revoke " + device["name"]).click()
        page.get_by_text("No phone is paired.").wait_for()
    finally:
        desktop.close()
    phone.page.get_by_role("heading", name="This phone was unpaired").wait_for(timeout=5_000)
    assert phone.page.get_by_role("status").inner_text() == "Unpaired"
    # Nothing of the pairing is kept in the browser.
    assert phone.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('oa-bridge.')).length") == 0
    phone.page.reload()
    phone.page.get_by_role("heading", name="Not paired").wait_for(timeout=5_000)
    assert not phone.errors and not phone.dialogs


def test_require_approval_shows_a_waiting_screen_until_the_desktop_approves(bridge_factory, phone, browser):
    bridge = bridge_factory(["--require-approval"])
    url = loopback_url(qr_url(bridge), bridge)
    phone.page.goto(url)
    phone.page.get_by_role("heading", name="Waiting for approval").wait_for(timeout=10_000)
    assert "#" not in phone.page.url
    pending = wait_until(lambda: [d for d in bridge.devices() if not d["approved"]], 5, "a pending device")
    assert phone.page.inner_text("#waiting-command") == "oa-bridge devices approve " + pending[0]["id"][:8]
    desktop = browser.new_context()
    try:
        page = desktop.new_page()
        page.set_default_timeout(10_000)
        page.goto(bridge.local + "/pair")
        page.get_by_role("button", name="Approve").click()
        page.get_by_role("button", name="Revoke " + pending[0]["name"]).wait_for()
    finally:
        desktop.close()
    phone.wait_ready(timeout=10_000)
    assert not phone.errors and not phone.dialogs


HOSTILE = [
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    "<script>window.__pwned=2;alert(2)</script>",
    "[click me](javascript:window.__pwned=3) and ![pic](javascript:alert(4)) and [data](data:text/html,<script>alert(5)</script>)",
    '<a href="javascript:alert(6)">raw link</a> <iframe src="javascript:alert(7)"></iframe>',
    "[fine](https://example.com/ok) and **bold** and `<b>code</b>`",
]


def test_hostile_agent_output_is_rendered_inert(bridge_factory, phone):
    agent = AGENTS / "hostile_output_agent.py"
    bridge = bridge_factory(["--agent", f"{sys.executable} {agent}"])
    open_from_qr(phone, bridge)
    send(phone, "go")
    # Its permission request names an option with markup: the button carries it as plain text.
    hostile_option = phone.page.get_by_role("button", name="<b onmouseover=alert(8)>Allow</b>")
    hostile_option.click(timeout=20_000)
    started = time.monotonic()
    phone.page.wait_for_function(
        "() => document.querySelector('#transcript').textContent.includes('END-OF-HOSTILE-TURN')", timeout=30_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    print(f"\nthe 1 MB line and the end of the turn rendered {time.monotonic() - started:.2f} s after the tap")

    transcript = phone.page.locator("#transcript")
    text = transcript.text_content()
    for line in HOSTILE[:2]:
        assert line in text  # shown as text, not parsed
    assert phone.page.evaluate("window.__pwned === undefined")
    assert phone.page.locator("#transcript script, #transcript iframe, #transcript img[src='x']").count() == 0
    assert phone.page.locator("#transcript [onerror], #transcript [onclick], #transcript [onmouseover]").count() == 0
    links = phone.page.eval_on_selector_all(
        "#transcript a", "nodes => nodes.map(a => [a.getAttribute('href'), a.rel, a.target])")
    assert links, "the https link is a link"
    for href, rel, target in links:
        assert href.startswith("https://") or href.startswith("http://"), href
        assert rel == "noopener noreferrer" and target == "_blank"
    # The megabyte on one line is there, whole, and wraps inside a phone's width.
    longest = phone.page.evaluate(
        "Math.max(...[...document.querySelectorAll('#transcript [data-role=agent]')].map(n => n.textContent.length))")
    assert longest >= 1_000_000
    assert phone.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    # Tool title, thought, plan and command descriptions with markup: text too.
    assert phone.page.locator("#transcript .tool .title").first.text_content() == "<img src=x onerror=alert(9)>"
    assert "<script>alert(10)</script>" in phone.page.locator("#transcript .plan").text_content()
    phone.page.get_by_label("Message").fill("/")
    assert "<img src=x onerror=alert(11)>" in phone.page.locator("#commands").text_content()
    # A suggestion from available_commands_update fills the message box.
    phone.page.locator("#commands button").filter(has_text="/pwn").click()
    assert phone.page.get_by_label("Message").input_value() == "/pwn "
    assert phone.page.evaluate("window.__pwned === undefined")
    assert phone.dialogs == [], phone.dialogs
    assert phone.errors == [], phone.errors


@pytest.mark.parametrize("width,scheme", [(360, "light"), (430, "dark")])
def test_the_main_screen_fits_phone_widths_in_light_and_dark(bridge, phone_factory, artifacts, width, scheme):
    phone = phone_factory(color_scheme=scheme)
    phone.page.set_viewport_size({"width": width, "height": 800})
    open_from_qr(phone, bridge)
    send(phone, "Show me a **list**:\n\n- one\n- two\n\n```\ncode block\n```")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.wait_for_selector('#transcript .tool[data-status="completed"]', timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    assert phone.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    background = phone.page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(255, 255, 255)") == (scheme == "light"), background
    for control in [phone.page.get_by_label("Message"), phone.page.get_by_role("button", name="Send")]:
        box = control.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1
    shot = artifacts / f"main-screen-{width}-{scheme}.png"
    phone.page.screenshot(path=str(shot))
    print(f"\nscreenshot: {shot}")
    assert shot.stat().st_size > 5_000
    assert not phone.errors and not phone.dialogs


def test_two_tabs_refresh_the_tokens_once_and_stay_paired(bridge, phone):
    """Both tabs find the access token due at once; the Web Locks API lets one refresh, the other takes its result.
    Presenting the rotated refresh token a second time would revoke the device (token family reuse)."""
    open_from_qr(phone, bridge)
    second = phone.context.new_page()
    second.goto(bridge.origin + "/app")
    second.wait_for_selector('html[data-ready="true"]', timeout=15_000)
    before = phone.page.evaluate("JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens")
    phone.page.evaluate("""() => { const s = JSON.parse(localStorage.getItem('oa-bridge.auth'));
                                   s.tokens.accessExp = Date.now(); localStorage.setItem('oa-bridge.auth', JSON.stringify(s)); }""")
    # Both tabs see the phone wake up, in the same instant.
    for page in (phone.page, second):
        page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    wait_until(lambda: phone.page.evaluate("JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens.refresh") != before["refresh"],
               10, "the refreshed tokens")
    time.sleep(1.5)  # room for a second, wrong refresh and the revocation it would cause
    after = phone.page.evaluate("JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens")
    assert after["access"] != before["access"] and after["accessExp"] > time.time() * 1000 + 60_000
    for page in (phone.page, second):
        assert page.get_by_role("status").inner_text() == "Connected"
    # The new access token opens a connection: a reload connects with it.
    second.reload()
    second.wait_for_selector('html[data-ready="true"]', timeout=15_000)
    assert second.get_by_role("status").inner_text() == "Connected"
    assert [d["revokedAt"] if "revokedAt" in d else None for d in bridge.devices(all_devices=True)] == [None]
    assert not phone.errors and not phone.dialogs


def test_a_photo_is_attached_when_the_agent_takes_images(bridge_factory, phone, tmp_path):
    agent = AGENTS / "hostile_output_agent.py"
    bridge = bridge_factory(["--agent", f"{sys.executable} {agent}"])
    open_from_qr(phone, bridge)
    attach = phone.page.get_by_role("button", name="Attach photo")
    assert attach.is_visible()  # the agent's promptCapabilities.image
    from PIL import Image

    photo = tmp_path / "photo.png"
    Image.new("RGB", (2000, 1500), (200, 30, 30)).save(photo)
    phone.page.set_input_files("#photo", str(photo))
    phone.page.wait_for_selector("#attachments img", timeout=10_000)
    send(phone, "look")
    phone.page.get_by_role("button", name="<b onmouseover=alert(8)>Allow</b>").click(timeout=20_000)
    phone.page.wait_for_function(
        "() => document.querySelector('#transcript').textContent.includes('END-OF-HOSTILE-TURN')", timeout=30_000)
    # The agent saw one JPEG image block, shrunk to at most 1280 px.
    assert "images=image/jpeg:1280x960" in phone.page.locator("#transcript").text_content()
    assert phone.page.locator("#transcript .msg.user img").count() == 1
    assert not phone.errors and not phone.dialogs


def test_sessions_new_and_attach_and_the_mode_picker(bridge, phone):
    open_from_qr(phone, bridge)
    send(phone, "first session")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    # The demo agent offers two modes: the picker switches with session/set_mode.
    mode = phone.page.get_by_label("Mode", exact=True)
    assert mode.input_value() == "default"
    mode.select_option("quiet")
    phone.page.wait_for_timeout(300)
    assert not phone.page.get_by_text("The mode was not changed").is_visible()
    # A new session starts empty; the first is listed and attaches again with its conversation.
    phone.page.get_by_role("button", name="Sessions").click()
    phone.page.get_by_role("button", name="New session").click()
    phone.page.wait_for_function("() => document.querySelectorAll('#transcript .msg').length === 0", timeout=10_000)
    send(phone, "second session")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    phone.page.get_by_role("button", name="Sessions").click()
    phone.page.get_by_role("button", name=re.compile("first session")).click()
    phone.page.wait_for_function(
        "() => document.querySelector('#transcript').textContent.includes('You said: first session')", timeout=10_000)
    assert "second session" not in phone.page.inner_text("#transcript")
    assert agent_texts(phone).count("You said: first session") == 1
    send(phone, "back again")
    # The first session is in the Quiet mode: the demo agent echoes and asks nothing (issue 29 item 9).
    phone.page.wait_for_function(
        "() => document.querySelector('#transcript').textContent.includes('You said: back again')", timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    assert phone.page.get_by_role("button", name="Allow once").count() == 0
    assert not phone.errors and not phone.dialogs


def test_a_socket_closed_for_an_expired_token_refreshes_and_resumes(bridge, phone):
    """4001 "access token expired": the app refreshes (the refused token is presented no more) and reconnects with
    the new token, resuming the session. Playwright stands between page and bridge to close the socket as the bridge
    does when a token's lifetime (15 min) ends."""
    routes = []

    def through(route):
        route.connect_to_server()
        routes.append(route)

    phone.context.route_web_socket(re.compile(r"wss://127\.0\.0\.1:\d+/\?token=.*"), through)
    open_from_qr(phone, bridge)
    send(phone, "before expiry")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    assert len(routes) == 1
    first_token = re.search(r"token=([^&]+)", routes[0].url).group(1)
    routes[0].close(code=4001, reason="access token expired; refresh and reconnect")
    # Playwright runs the route handler while the test waits inside a Playwright call, not in time.sleep.
    wait_until(lambda: phone.page.wait_for_timeout(50) or len(routes) == 2, 10, "a second connection", interval=0)
    phone.wait_ready(timeout=10_000)
    second_token = re.search(r"token=([^&]+)", routes[1].url).group(1)
    assert second_token != first_token
    stored = phone.page.evaluate("JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens.access")
    assert stored == second_token.replace("%2D", "-").replace("%5F", "_")
    assert agent_texts(phone).count("You said: before expiry") == 1
    send(phone, "after expiry")
    phone.page.get_by_role("button", name="Allow once").wait_for(timeout=10_000)
    assert "You said: after expiry" in agent_texts(phone)
    assert not phone.errors and not phone.dialogs


def test_without_auth_over_loopback_http_the_app_needs_no_pairing(bridge_factory, phone):
    bridge = bridge_factory(["--auth", "none"])
    url = qr_url(bridge)
    # The short link of a bridge without auth holds only the pin prefix (#3…).
    assert re.fullmatch(r"[0-9]{40}", url.split("#", 1)[1]) and url.split("#", 1)[1].startswith("3"), url
    # Plain http:// on loopback is served too (no redirect to https:// there).
    phone.page.goto(f"http://127.0.0.1:{bridge.port}/app#" + url.split("#", 1)[1])
    phone.wait_ready()
    assert phone.page.url == f"http://127.0.0.1:{bridge.port}/app"
    assert bridge.devices() == []
    send(phone, "no tokens")
    phone.page.get_by_role("button", name="Allow once").wait_for(timeout=10_000)
    assert "You said: no tokens" in agent_texts(phone)
    assert not phone.errors and not phone.dialogs


def test_two_tabs_of_one_phone_show_each_others_messages(bridge, phone):
    """The bridge shows a prompt to the session's other clients (_oa/user_message); each tab shows both, once, in
    order, and keeps them over a reload."""
    open_from_qr(phone, bridge)
    second = phone.context.new_page()
    second.set_default_timeout(15_000)
    second.goto(bridge.origin + "/app")
    second.wait_for_selector('html[data-ready="true"]')
    send(phone, "from tab one")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    second.get_by_label("Message").fill("from tab two")
    second.get_by_role("button", name="Send").click()
    second.get_by_role("button", name="Allow once").click()
    second.get_by_role("button", name="Send").wait_for()
    for page in (phone.page, second):
        page.wait_for_function("() => document.querySelectorAll('#transcript .msg.user').length === 2", timeout=10_000)
        users = page.eval_on_selector_all("#transcript .msg.user", "nodes => nodes.map(n => n.textContent)")
        assert users == ["from tab one", "from tab two"], users
        agents = page.eval_on_selector_all('#transcript [data-role="agent"]', "nodes => nodes.map(n => n.textContent)")
        assert agents.count("You said: from tab one") == 1 and agents.count("You said: from tab two") == 1, agents
    second.reload()
    second.wait_for_selector('html[data-ready="true"]')
    assert second.eval_on_selector_all("#transcript .msg.user", "nodes => nodes.map(n => n.textContent)") == [
        "from tab one", "from tab two"]
    assert not phone.errors and not phone.dialogs
