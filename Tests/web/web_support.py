"""What the phone web app tests (issue 13) share: `oa-bridge serve` on loopback over TLS, and Debian's Chromium
driven by Playwright with phone emulation. No browser is downloaded: Playwright launches /usr/bin/chromium.

Artifacts (screenshots, the measured time to ready) go to $OA_WEB_ARTIFACTS, by default .build/web-tests/."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from loopback import Serve

REPO = Path(__file__).resolve().parent.parent.parent

BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
CHROMIUM = os.environ.get("OA_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("OA_WEB_ARTIFACTS", str(REPO / ".build" / "web-tests")))
# For development and for checking that a test fails on older code: serve the app's files from this directory instead
# of the binary's embedded copies (the bridge's own headers are kept). Unset in CI: the embedded files are tested.
ASSETS_DIR = os.environ.get("OA_WEB_ASSETS_DIR")
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
                 ".js": "text/javascript; charset=utf-8", ".webmanifest": "application/manifest+json",
                 ".svg": "image/svg+xml", ".png": "image/png"}
AGENTS = Path(__file__).resolve().parent / "agents"

try:
    from playwright import sync_api
except ImportError:  # skipped below, by the fixtures
    sync_api = None


def require_tools() -> None:
    """Skips the test when the binary, Chromium or Playwright is missing (scripts/test fails CI on any skip)."""
    if not Path(BIN).exists():
        pytest.skip(f"no oa-bridge binary at {BIN}")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    if sync_api is None:
        pytest.skip("no Playwright for Python (pip install -r Tests/requirements.txt)")


class Bridge(Serve):
    """`oa-bridge serve` on 127.0.0.1 (TLS on by default, so the app is opened over https://) with its own state."""

    def __init__(self, extra: list[str] | None = None):
        # The agent's directory apart from the bridge's state: the bridge's own files are in no session's scope.
        self.work = tempfile.mkdtemp(prefix="oa-web-work-")
        # The QR code names the port: serve is told it (a port held for it until it listens), not `--port 0`.
        super().__init__("--log-level", "info", *(extra or []), prefix="oa-web-", working_directory=Path(self.work),
                         known_port=True)
        self.local = f"http://127.0.0.1:{self.port}"
        self.origin = f"https://127.0.0.1:{self.port}"

    def get_json(self, path: str):
        with urllib.request.urlopen(self.local + path, timeout=5) as response:
            return json.load(response)

    def get_bytes(self, path: str) -> bytes:
        with urllib.request.urlopen(self.local + path, timeout=5) as response:
            return response.read()

    def post_json(self, path: str, body: dict):
        request = urllib.request.Request(self.local + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)

    def new_code(self) -> dict:
        """A fresh pairing code, as the pairing page's "new code" button asks for it: /api/pair/info's answer."""
        return self.post_json("/api/pair/refresh", {})

    def revoke(self, device_id: str) -> dict:
        return self.post_json("/api/pair/revoke", {"device_id": device_id})

    def devices(self, all_devices: bool = False) -> list[dict]:
        return self.get_json("/api/pair/devices" + ("?all=1" if all_devices else ""))

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, grace: float = 15.0) -> str:
        """Stops serve and removes its directories (a second call finds nothing left to do)."""
        self.terminate(grace)
        logged = self.logs() if self.log_path.exists() else ""
        shutil.rmtree(self.base, ignore_errors=True)
        shutil.rmtree(self.work, ignore_errors=True)
        return logged


class Phone:
    """One emulated phone: a browser context (Pixel 7, touch, self-signed certificate accepted), its page, and every
    dialog, page error and console error it produced."""

    def __init__(self, browser, playwright, color_scheme: str = "light"):
        device = dict(playwright.devices["Pixel 7"])
        device.pop("default_browser_type", None)
        self.context = browser.new_context(**device, ignore_https_errors=True, color_scheme=color_scheme)
        self.context.set_default_timeout(15_000)
        if ASSETS_DIR:
            self.context.route(re.compile(r"^https?://[^/]+/app(/[^/?#]*)?([?#].*)?$"), _serve_asset)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.console_errors: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: self.console_errors.append(message.text) if message.type == "error" else None)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def wait_ready(self, timeout: float = 15_000) -> None:
        self.page.wait_for_selector('html[data-ready="true"]', timeout=timeout)

    def close(self) -> None:
        self.context.close()


def _serve_asset(route) -> None:
    """Fulfils a request for /app or /app/<file> from ASSETS_DIR, with the headers the bridge sent for it."""
    from urllib.parse import urlsplit

    name = urlsplit(route.request.url).path[len("/app"):].lstrip("/") or "index.html"
    file = Path(ASSETS_DIR) / name
    if "/" in name or not file.is_file():
        route.continue_()
        return
    response = route.fetch()
    headers = dict(response.headers)
    headers["content-type"] = CONTENT_TYPES.get(file.suffix, "application/octet-stream")
    headers.pop("content-length", None)
    route.fulfill(status=200, headers=headers, body=file.read_bytes())


def qr_url(bridge: Bridge) -> str:
    """The text of the QR code /api/pair/qr draws, read by zxing-cpp."""
    import io

    import zxingcpp
    from PIL import Image

    png = bridge.get_bytes("/api/pair/qr?scale=6")
    found = [r for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(png))) if r.format == zxingcpp.BarcodeFormat.QRCode]
    assert len(found) == 1, f"found {len(found)} QR codes"
    return found[0].text


def loopback_url(url: str, bridge: Bridge) -> str:
    """The QR code's URL pointed at 127.0.0.1: the bridge under test listens on loopback only, and the QR code names the
    machine's LAN address. Scheme, port, path and fragment are kept as the QR code has them."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    assert parts.port == bridge.port, url
    return urlunsplit((parts.scheme, f"127.0.0.1:{parts.port}", parts.path, parts.query, parts.fragment))


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05):
    """Polls `predicate` until it returns something truthy (returned), failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
