"""A phone paired before DPoP (issue 30; here: paired with `--dpop off`, its tokens unbound, token_type Bearer) keeps
working when the bridge runs `--dpop optional` (the default), and when the bridge turns to `--dpop required` it is
refused (invalid_dpop_proof) and the app says to pair again (it cannot bind old tokens by itself: a new pairing code
is needed). Debian's Chromium against a real `oa-bridge serve` restarted on the same port and state; WebKit's run of
the same steps is in test_webapp_dpop_webkit.py."""

from __future__ import annotations

from test_webapp_dpop import answered, loading_bridge, open_from_qr, restart, send, tokens  # noqa: F401 (fixture)


def test_a_device_paired_unbound_keeps_working_under_optional_and_is_told_to_pair_again_under_required(loading_bridge, phone):
    bridge = loading_bridge(["--dpop", "off"])
    open_from_qr(phone, bridge)
    assert tokens(phone)["type"] == "Bearer"
    restart(bridge, ["--dpop", "optional"])
    phone.wait_ready(timeout=30_000)
    send(phone, "old phone")
    answered(phone, "old phone")
    restart(bridge, ["--dpop", "required"])
    phone.page.wait_for_selector("#screen-unpaired:not([hidden])", timeout=30_000)
    assert "bound to a key" in phone.page.inner_text("#unpaired-reason")
    assert not phone.errors
