"""The web app's fallback to Streamable HTTP at /acp (issue 28 item 2): when its WebSocket cannot open (iOS Safari is
reported to refuse wss:// to a self-signed certificate the page itself was accepted with, while fetch works), it
reaches the same bridge over POST and SSE streams read with fetch, says so in its status line, and works as usual:
a prompt is answered. A phone whose WebSocket opens stays on it.

The WebSocket is made to fail in Chromium: Playwright routes every WebSocket of the page and closes it before it
opens (DevTools' Network.setBlockedURLs does not block WebSockets). Fails on the old app (it
retried the WebSocket forever and never became ready)."""

from __future__ import annotations

from test_webapp import agent_texts, open_from_qr, send
from web_support import wait_until


def block_websockets(phone) -> None:
    """Every WebSocket of the page is refused before it opens (Playwright's WebSocket routing closes it at once; the
    page sees a close without an open, as for a refused or failed handshake)."""
    phone.page.route_web_socket("**/*", lambda socket: socket.close(code=1008, reason="refused by the test"))


def test_a_phone_whose_websocket_never_opens_falls_back_to_http_and_says_so(bridge, phone_factory):
    phone = phone_factory()
    block_websockets(phone)
    open_from_qr(phone, bridge)
    status = phone.page.get_by_role("status")
    assert status.inner_text() == "Connected over HTTP"
    assert status.get_attribute("data-transport") == "http"
    assert "HTTP" in (status.get_attribute("title") or "")

    send(phone, "hello over http")
    wait_until(lambda: any("hello over http" in text for text in agent_texts(phone)), 20, "the demo agent's answer over HTTP")

    assert not phone.errors, phone.errors


def test_a_phone_whose_websocket_opens_stays_on_it(bridge, phone):
    open_from_qr(phone, bridge)
    status = phone.page.get_by_role("status")
    assert status.inner_text() == "Connected"
    assert status.get_attribute("data-transport") == "websocket"
