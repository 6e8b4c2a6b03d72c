"""Fixtures for the phone web app tests (issue 13); the helpers are in web_support.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from web_support import ARTIFACTS, ASSETS_DIR, CHROMIUM, Bridge, Phone, require_tools, sync_api


@pytest.fixture
def bridge_factory(serve_factory):
    """Starts the web tests' bridges (Tests/conftest.py's ``serve_factory`` stops them after the test)."""
    require_tools()

    def start(extra: list[str] | None = None) -> Bridge:
        return serve_factory(extra, kind=Bridge)

    return start


@pytest.fixture
def bridge(bridge_factory) -> Bridge:
    return bridge_factory()


@pytest.fixture(scope="module")
def playwright():
    require_tools()
    with sync_api.sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright):
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, timeout=30_000,
        # Nothing but loopback: a dead proxy for everything else (loopback bypasses proxies).
        args=["--proxy-server=http://127.0.0.1:9", "--disable-background-networking",
              "--disable-component-update", "--no-first-run",
              # A page fulfilled by Playwright (OA_WEB_ASSETS_DIR) has no address: Local Network Access would refuse
              # its WebSocket to 127.0.0.1.
              *(["--disable-features=LocalNetworkAccessChecks"] if ASSETS_DIR else [])])
    yield browser
    browser.close()


@pytest.fixture
def phone_factory(browser, playwright):
    phones: list[Phone] = []

    def make(**kwargs) -> Phone:
        phone = Phone(browser, playwright, **kwargs)
        phones.append(phone)
        return phone

    yield make
    for phone in phones:
        phone.close()


@pytest.fixture
def phone(phone_factory) -> Phone:
    return phone_factory()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


