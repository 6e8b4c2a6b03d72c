"""The official SDK's Streamable HTTP client (`acp.http`) at `https://…/acp` over the bridge's pinned TLS (issue 28
item 5): the whole flow of test_acp_http.py (initialize, new, a permission allowed and rejected, cancel, load from a
second connection, resume from a third), every response checked against the pin of the pairing payload, never
against a CA or a host name. httpx offers ALPN `h2` and `http/1.1` (the SDK's own default client is HTTP/2-enabled);
the test records which one each connection got."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from test_acp_http import HTTPBridge, check_whole_flow, whole_flow
from tls_support import peer_pin, pin_of_der, unverified_context

httpx = pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def bridge():
    served = HTTPBridge()
    try:
        yield served
    finally:
        served.stop()


def test_the_sdk_http_client_runs_the_whole_flow_over_pinned_tls(bridge):
    with urllib.request.urlopen(f"{bridge.base_url}/api/pair/info", timeout=5) as answer:
        pin = json.load(answer)["pin"]
    assert peer_pin("127.0.0.1", bridge.port)[0] == pin, "the bridge presents the certificate the payload pins"
    token = bridge.pair("sdk-https")
    checked: list[str] = []

    async def check_pin(response):
        stream = response.extensions.get("network_stream")
        ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
        assert ssl_object is not None, "not a TLS connection"
        assert pin_of_der(ssl_object.getpeercert(binary_form=True)) == pin, "pin mismatch"
        checked.append(ssl_object.selected_alpn_protocol() or "none")

    context = unverified_context()
    context.set_alpn_protocols(["h2", "http/1.1"])
    url = f"https://127.0.0.1:{bridge.port}/acp"
    result = asyncio.run(asyncio.wait_for(whole_flow(
        url, token, str(bridge.workspace), verify=context, http2=True, event_hooks={"response": [check_pin]}), 120))
    check_whole_flow(result)
    assert len(checked) >= 10, f"only {len(checked)} responses checked"
    assert set(checked) <= {"h2", "http/1.1"}, checked

