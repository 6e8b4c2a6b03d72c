"""The web app gets permessage-deflate from the browser (issue 32 goal 5): Chromium offers it on the app's WebSocket
(wss://, from the QR code's link) and the bridge accepts, as Chrome DevTools Protocol's handshake events show; the
streamed answer then arrives whole. With `--no-compression` the same offer is declined and the app works as before.
"""
from __future__ import annotations

from test_webapp import open_from_qr, send


def handshakes(phone) -> list[dict]:
    """Records the WebSocket handshakes of the phone's page (request and response headers, names in lower case)."""
    seen: list[dict] = []
    session = phone.context.new_cdp_session(phone.page)
    session.send("Network.enable")
    session.on("Network.webSocketWillSendHandshakeRequest", lambda e: seen.append(
        {"id": e["requestId"], "request": {k.lower(): v for k, v in e["request"]["headers"].items()}}))
    session.on("Network.webSocketHandshakeResponseReceived", lambda e: seen.append(
        {"id": e["requestId"], "status": e["response"]["status"],
         "response": {k.lower(): v for k, v in e["response"]["headers"].items()}}))
    return seen


def wait_for_echo(phone) -> None:
    """The demo agent streams the prompt back in chunks before it asks a permission."""
    phone.page.wait_for_function(
        "() => [...document.querySelectorAll('#transcript [data-role=agent]')].some(n => n.textContent.includes('deflated words'))",
        timeout=15_000)


def test_chromium_negotiates_permessage_deflate_and_the_app_streams_through_it(bridge, phone):
    seen = handshakes(phone)
    open_from_qr(phone, bridge)
    send(phone, "deflated words")
    wait_for_echo(phone)
    requests = [e["request"] for e in seen if "request" in e]
    responses = [e for e in seen if e.get("status") == 101]
    assert requests and "permessage-deflate" in requests[-1].get("sec-websocket-extensions", ""), requests
    assert responses, seen
    assert responses[-1]["response"].get("sec-websocket-extensions") == "permessage-deflate; client_no_context_takeover", responses


def test_no_compression_declines_the_browsers_offer(bridge_factory, phone):
    bridge = bridge_factory(["--no-compression"])
    seen = handshakes(phone)
    open_from_qr(phone, bridge)
    send(phone, "deflated words")
    wait_for_echo(phone)
    responses = [e for e in seen if e.get("status") == 101]
    assert responses and "sec-websocket-extensions" not in responses[-1]["response"], responses
