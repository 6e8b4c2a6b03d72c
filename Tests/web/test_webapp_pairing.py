"""Pairing links, unpairing and the screens around them (issues 27.6 and 29.5): a link never replaces or wipes a
pairing without the user's word, a link opened in an open tab pairs, Unpair forgets everything, dialogs close on a
revoke, and a bridge that answers 401 ends the reconnecting. Debian's Chromium via Playwright, `oa-bridge serve` on
loopback."""

from __future__ import annotations

import base64
import json
import re

import io

import zxingcpp
from PIL import Image

from test_webapp import open_from_qr, send
from web_support import loopback_url, qr_url, wait_until


def link(bridge, payload: dict) -> str:
    text = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"{bridge.origin}/app#{text}"


def stored_tokens(phone):
    return phone.page.evaluate("(JSON.parse(localStorage.getItem('oa-bridge.auth')) || {}).tokens || null")


def test_a_link_without_a_pairing_code_leaves_the_pairing_alone(bridge, phone):
    """`/app#e30` (`{}`) and a full payload without a token: the stored tokens stay, the app connects with them.
    Fails on the old code: the tokens were replaced with {"noAuth": true}."""
    open_from_qr(phone, bridge)
    before = stored_tokens(phone)
    assert before and before["access"]
    info = bridge.get_json("/api/pair/info")
    # The long link (the whole payload as base64url JSON) still works beside the QR code's short one.
    without_token = {k: v for k, v in info.items() if k not in ("token", "url")}
    for url in [bridge.origin + "/app#e30", link(bridge, without_token)]:
        phone.page.goto("about:blank")  # a full load of the link, not a same-page fragment change
        phone.page.goto(url)
        phone.wait_ready()
        assert stored_tokens(phone) == before
        assert phone.page.get_by_role("status").inner_text() == "Connected"
        assert "#" not in phone.page.url
    assert [d["id"] for d in bridge.devices()] == [before["deviceId"]]
    assert not phone.errors and not phone.dialogs


def test_a_new_pairing_code_while_paired_asks_before_replacing(bridge, phone):
    """A link with another code shows a question in the page (never window.confirm): "Keep" keeps the pairing; a
    refused code after "Pair" keeps it too; a good code after "Pair" replaces it (the old device is revoked). Fails on
    the old code: the link was ignored without asking."""
    open_from_qr(phone, bridge)
    before = stored_tokens(phone)
    # Someone else's (or a made-up) code: keep. (Each link is loaded afresh, as from the camera app.)
    phone.page.goto("about:blank")
    phone.page.goto(link(bridge, {"token": "not-a-real-code", "name": "evil"}))
    phone.page.get_by_role("heading", name="Pair this phone again?").wait_for()
    assert "evil" in phone.page.inner_text("#confirm-text")
    phone.page.get_by_role("button", name="Keep the current pairing").click()
    phone.wait_ready()
    assert stored_tokens(phone) == before
    # Said yes to a code the desktop refuses: the pairing the phone had is still there.
    phone.page.goto("about:blank")
    phone.page.goto(link(bridge, {"token": "not-a-real-code", "name": "evil"}))
    phone.page.get_by_role("button", name="Pair with the new code").click()
    phone.page.get_by_role("heading", name="Something went wrong").wait_for()
    assert stored_tokens(phone) == before
    phone.page.get_by_role("button", name="Try again").click()
    phone.wait_ready()
    assert stored_tokens(phone) == before
    # A real new code from the desktop, confirmed: new tokens, a new device, the old one revoked.
    fresh = bridge.new_code()
    phone.page.goto("about:blank")
    phone.page.goto(loopback_url(fresh["url"], bridge))
    phone.page.get_by_role("button", name="Pair with the new code").click()
    phone.wait_ready()
    after = stored_tokens(phone)
    assert after["deviceId"] != before["deviceId"]
    wait_until(lambda: [d["id"] for d in bridge.devices()] == [after["deviceId"]], 5, "the old device revoked")
    assert not phone.errors and not phone.dialogs


def test_a_pairing_link_opened_in_an_open_tab_pairs(bridge, phone):
    """The tab shows "Not paired"; the QR code's link opened in it (only the fragment changes: no reload) pairs.
    Then, paired, another code opened the same way asks first. Fails on the old code (ignored until a reload)."""
    phone.page.goto(bridge.origin + "/app")
    phone.page.get_by_role("heading", name="Not paired").wait_for()
    url = loopback_url(qr_url(bridge), bridge)
    phone.page.evaluate("(hash) => { location.hash = hash; }", url.split("#", 1)[1])
    phone.wait_ready()
    assert len(bridge.devices()) == 1
    before = stored_tokens(phone)
    fresh = bridge.new_code()
    phone.page.evaluate("(hash) => { location.hash = hash; }", fresh["url"].split("#", 1)[1])
    phone.page.get_by_role("heading", name="Pair this phone again?").wait_for()
    phone.page.get_by_role("button", name="Keep the current pairing").click()
    phone.page.get_by_label("Message").wait_for()
    assert stored_tokens(phone) == before
    assert phone.page.get_by_role("status").inner_text() == "Connected"
    assert not phone.errors and not phone.dialogs


def test_unpair_revokes_and_forgets_everything(bridge, phone):
    """Sessions → "Unpair this phone…" → "Unpair": the desktop revokes the device (_oa/logout), the phone keeps no
    key of the app in its storage and shows the unpaired screen. Fails on the old code (no such button)."""
    open_from_qr(phone, bridge)
    send(phone, "something private")
    phone.page.get_by_role("button", name="Allow once").click(timeout=10_000)
    phone.page.get_by_role("button", name="Send").wait_for(timeout=10_000)
    phone.page.get_by_role("button", name="Sessions").click()
    phone.page.get_by_role("button", name="Unpair this phone").click()
    # Asked first, in the page.
    phone.page.get_by_role("button", name="Cancel").click()
    assert phone.page.get_by_role("button", name="Unpair this phone").is_visible()
    phone.page.get_by_role("button", name="Unpair this phone").click()
    phone.page.get_by_role("button", name="Unpair", exact=True).click()
    phone.page.get_by_role("heading", name="This phone was unpaired").wait_for(timeout=10_000)
    assert "You unpaired this phone" in phone.page.inner_text("#unpaired-reason")
    assert phone.page.get_by_role("status").inner_text() == "Unpaired"
    assert phone.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('oa-bridge.')).length") == 0
    assert phone.page.evaluate("document.querySelectorAll('dialog[open]').length") == 0
    assert "something private" not in phone.page.inner_text("body")
    assert bridge.devices() == []
    phone.page.reload()
    phone.page.get_by_role("heading", name="Not paired").wait_for()
    assert not phone.errors and not phone.dialogs


def test_the_sessions_dialog_closes_when_the_phone_is_revoked(bridge, phone):
    """Revoked on the desktop while the Sessions dialog is open: the unpaired screen, with no dialog over it. Fails
    on the old code (the dialog stayed open over the unpaired screen)."""
    open_from_qr(phone, bridge)
    phone.page.get_by_role("button", name="Sessions").click()
    phone.page.get_by_role("dialog").wait_for()
    bridge.revoke(bridge.devices()[0]["id"])
    phone.page.get_by_role("heading", name="This phone was unpaired").wait_for(timeout=10_000)
    assert phone.page.evaluate("document.querySelectorAll('dialog[open]').length") == 0
    assert phone.page.get_by_role("heading", name="This phone was unpaired").is_visible()
    assert not phone.errors and not phone.dialogs


def test_a_bridge_that_answers_401_ends_the_reconnecting(bridge, phone):
    """A fresh phone opens a link without a pairing code on a bridge that wants tokens: its WebSocket gets 401. The
    app says the phone needs pairing instead of "Reconnecting" forever. Fails on the old code (it kept reconnecting)."""
    phone.page.goto(bridge.origin + "/app#e30")
    phone.page.get_by_role("heading", name="This phone was unpaired").wait_for(timeout=15_000)
    assert "not paired" in phone.page.inner_text("#unpaired-reason")
    state = phone.page.get_by_role("status").inner_text()
    phone.page.wait_for_timeout(3_000)
    assert phone.page.get_by_role("status").inner_text() == state == "Unpaired"
    assert phone.page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('oa-bridge.')).length") == 0
    assert not phone.dialogs
    assert not [e for e in phone.errors if not re.search(r"WebSocket", e)], phone.errors


def test_a_link_without_a_pairing_code_does_not_end_a_wait_for_approval(bridge_factory, phone):
    """A phone waiting for the desktop's approval opens a link without a code: it keeps waiting, and is let in once
    approved. Fails on the old code (the pending pairing was replaced with {"noAuth": true})."""
    bridge = bridge_factory(["--require-approval"])
    phone.page.goto(loopback_url(qr_url(bridge), bridge))
    phone.page.get_by_role("heading", name="Waiting for approval").wait_for(timeout=10_000)
    phone.page.goto("about:blank")
    phone.page.goto(bridge.origin + "/app#e30")
    phone.page.get_by_role("heading", name="Waiting for approval").wait_for(timeout=10_000)
    pending = wait_until(lambda: [d for d in bridge.devices() if not d["approved"]], 5, "a pending device")
    bridge.post_json("/api/pair/approve", {"device_id": pending[0]["id"]})
    phone.wait_ready(timeout=15_000)
    assert stored_tokens(phone)["deviceId"] == pending[0]["id"]
    assert not phone.errors and not phone.dialogs


def page_qr(page) -> str:
    """The text of the QR code the /pair page shows, read from a screenshot of it by zxing-cpp."""
    png = page.locator("#qr svg").screenshot()
    found = [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(png))) if r.format == zxingcpp.BarcodeFormat.QRCode]
    assert len(found) == 1, found
    return found[0]


def test_the_pairing_page_updates_itself_and_a_second_phone_meets_a_fresh_code(bridge_factory, phone_factory, browser):
    """Issue 29 item 3, with --require-approval: /pair stays open (no reload: a marker in the page survives). A phone
    scans its code: the page shows the device waiting for approval and a new code by itself within seconds; Approve
    moves the device to the paired list; a second phone scans the code now on the page and is not told "already used"
    (it waits for approval too). Fails on the old code: the page never changed without a reload."""
    bridge = bridge_factory(["--require-approval"])
    desktop = browser.new_context()
    first, second = phone_factory(), phone_factory()
    try:
        page = desktop.new_page()
        page.set_default_timeout(10_000)
        page.goto(bridge.local + "/pair")
        page.evaluate("window.__marker = 'not reloaded'")
        shown = page_qr(page)
        assert shown == bridge.get_json("/api/pair/info")["url"]
        page.get_by_text("No device is waiting for approval.").wait_for()

        first.page.goto(loopback_url(shown, bridge))
        first.page.get_by_role("heading", name="Waiting for approval").wait_for(timeout=10_000)
        page.get_by_role("button", name="Approve").wait_for(timeout=6_000)
        assert "Chrome on Pixel 7" in page.inner_text("#pending-section")
        def new_code():
            try:
                text = page_qr(page)
            except AssertionError:
                return None  # caught while the page swapped it
            return text if text != shown else None

        replaced = wait_until(new_code, 6, "a new code on the page", interval=0.3)
        assert replaced == bridge.get_json("/api/pair/info")["url"]
        assert page.evaluate("window.__marker") == "not reloaded"

        page.get_by_role("button", name="Approve").click()
        first.wait_ready(timeout=10_000)
        page.get_by_text("No device is waiting for approval.").wait_for(timeout=6_000)
        assert "Chrome on Pixel 7" in page.inner_text("#devices-section")

        second.page.goto(loopback_url(page_qr(page), bridge))
        second.page.get_by_role("heading", name="Waiting for approval").wait_for(timeout=10_000)
        page.get_by_role("button", name="Approve").wait_for(timeout=6_000)
        assert page.evaluate("window.__marker") == "not reloaded"
        assert not first.errors and not second.errors and not first.dialogs and not second.dialogs
    finally:
        desktop.close()
