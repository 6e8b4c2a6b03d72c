"""The web app's DPoP (issue 30) in WebKit, Safari's engine (Debian's WebKitGTK MiniBrowser through WebKitWebDriver,
as Tests/web/test_webkit.py drives it): pairing makes a non-extractable P-256 key in IndexedDB and binds the tokens to
it (token_type DPoP); a prompt is answered over the WebSocket opened with `&dpop=`; a refresh with a proof keeps the
family bound; after the bridge restarts (new nonces) the app reconnects and a prompt is answered again. The theft and
migration tests of Chromium (test_webapp_dpop_theft.py, test_webapp_dpop_migration.py) run here too: tokens copied out of
WebKit's localStorage are refused from another client, and a WebKit page paired unbound keeps working under
`--dpop optional` and is told to pair again under `required`. What WebKit cannot show through WebDriver: the requests'
headers (Selenium sees no network), so the proofs on each request are checked in Chromium only
(test_webapp_dpop.py)."""

from __future__ import annotations

from test_webapp_dpop import KEY_CHECK, loading_bridge, restart  # noqa: F401 (fixture)
from test_webapp_dpop_theft import assert_stolen_tokens_refused
from test_webkit import display, js, wait_js, wait_ready, watch, clean, send, webkit  # noqa: F401 (fixtures)
from web_support import loopback_url, qr_url


def answered(driver, text: str, timeout: float = 15) -> None:
    wait_js(driver, "return [...document.querySelectorAll('#transcript [data-role=agent]')]"
                    ".some(n => n.textContent.endsWith(arguments[0]))".replace("arguments[0]", repr(": " + text)),
            timeout, f"the answer to {text!r}")


def tokens(driver) -> dict:
    return js(driver, "return JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens")


def test_webkit_pairs_bound_to_a_key_it_cannot_export_and_goes_on_across_a_refresh_and_a_restart(loading_bridge, webkit):
    bridge = loading_bridge()
    webkit.get(loopback_url(qr_url(bridge), bridge))
    wait_ready(webkit)
    watch(webkit)
    key = webkit.execute_async_script("const done = arguments[arguments.length - 1]; (" + KEY_CHECK + ")().then(done, e => done({error: String(e)}));")
    assert key.get("found") and key["extractable"] is False, key
    assert [r.split(":")[0] for r in key["refused"]] == ["pkcs8", "jwk"], key["refused"]
    held = tokens(webkit)
    assert held["type"] == "DPoP", held.get("type")
    send(webkit, "webkit bound")
    answered(webkit, "webkit bound")
    # A refresh: the access token made due, then the page wakes up.
    js(webkit, """const s = JSON.parse(localStorage.getItem('oa-bridge.auth')); s.tokens.accessExp = Date.now();
                  localStorage.setItem('oa-bridge.auth', JSON.stringify(s)); document.dispatchEvent(new Event('visibilitychange'));""")
    wait_js(webkit, "return JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens.refresh !== arguments[0]".replace(
        "arguments[0]", repr(held["refresh"])), 10, "the refreshed tokens")
    assert tokens(webkit)["type"] == "DPoP"
    restart(bridge)
    wait_js(webkit, "return document.getElementById('connection').textContent.startsWith('Connected') && "
                    "document.documentElement.dataset.ready === 'true'", 30, "connected again after the restart")
    send(webkit, "after the restart")
    answered(webkit, "after the restart")
    assert [d.get("revokedAt") for d in bridge.devices(all_devices=True)] == [None]
    clean(webkit)


def test_webkit_tokens_copied_out_of_local_storage_are_refused_from_another_client(bridge, webkit):
    webkit.get(loopback_url(qr_url(bridge), bridge))
    wait_ready(webkit)
    assert_stolen_tokens_refused(bridge, tokens(webkit))
    # The page itself goes on with the same tokens: nothing the thief did revoked them.
    webkit.refresh()
    wait_ready(webkit)
    watch(webkit)
    send(webkit, "still mine")
    answered(webkit, "still mine")
    assert [d.get("revokedAt") for d in bridge.devices(all_devices=True)] == [None]
    clean(webkit)


def test_webkit_paired_unbound_keeps_working_under_optional_and_is_told_to_pair_again_under_required(loading_bridge, webkit):
    bridge = loading_bridge(["--dpop", "off"])
    webkit.get(loopback_url(qr_url(bridge), bridge))
    wait_ready(webkit)
    watch(webkit)
    assert tokens(webkit)["type"] == "Bearer"
    restart(bridge, ["--dpop", "optional"])
    wait_js(webkit, "return document.getElementById('connection').textContent.startsWith('Connected') && "
                    "document.documentElement.dataset.ready === 'true'", 30, "connected again under optional")
    send(webkit, "old phone")
    answered(webkit, "old phone")
    restart(bridge, ["--dpop", "required"])
    wait_js(webkit, "return !document.getElementById('screen-unpaired').hidden", 30, "the unpaired screen")
    assert "bound to a key" in js(webkit, "return document.getElementById('unpaired-reason').textContent")
    clean(webkit)
