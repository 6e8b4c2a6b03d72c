"""Fixtures every test folder shares (Tests/pytest.ini makes this file apply to Tests/system, Tests/web, Tests/lab,
Tests/autobahn and Tests/deflate): bridges started for a test or a module and always stopped after it.

The classes and helpers themselves live in Tests/system/loopback.py (``Serve``: `oa-bridge serve` on a port it picks,
restartable on that port), which any test file imports by name (Tests/pytest.ini's `pythonpath`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from loopback import Serve


def _bridges() -> Iterator[Callable[..., Serve]]:
    """A starter of bridges: `start(*arguments, kind=Serve, **options)` makes `kind(*arguments, **options)`; every
    bridge it started is stopped, last first, when the fixture ends (whatever the test did)."""
    started: list[Serve] = []

    def start(*arguments, kind: type[Serve] = Serve, **options) -> Serve:
        bridge = kind(*arguments, **options)
        started.append(bridge)
        return bridge

    try:
        yield start
    finally:
        for bridge in reversed(started):
            bridge.stop()


@pytest.fixture
def serve_factory() -> Iterator[Callable[..., Serve]]:
    """Starts bridges for one test (`serve_factory("--auth", "none")`, `serve_factory(kind=Bridge)`) and stops
    them after it."""
    yield from _bridges()


@pytest.fixture(scope="module")
def module_serve_factory() -> Iterator[Callable[..., Serve]]:
    """As ``serve_factory``, for bridges a whole test module shares."""
    yield from _bridges()
