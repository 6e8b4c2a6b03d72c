"""Runs the Swift live-daemon tests (Tests/BridgeDiscoveryTests/LiveDaemonTests.swift) inside a lab
host, against that host's own avahi-daemon, for both backends. The tests are enabled by
OA_LAB_LIVE=1, which is only ever set here, inside a lab network namespace."""

from __future__ import annotations

import os
import subprocess

import pytest

from lab_support import REPO, build_dir


def test_swift_live_daemon_suite(lab):
    build = build_dir()
    if not (build / "oa-bridgePackageTests.xctest").exists():
        pytest.skip("the Swift test bundle is not built (run 'swift build --build-tests')")
    host = lab.add_host("live")
    try:
        result = host.run(
            ["swift", "test", "--skip-build", "--package-path", str(REPO), "--filter", "LiveDaemonTests"],
            timeout=240,
            env=dict(os.environ, OA_LAB_LIVE="1"),
        )
        output = (result.stdout or "") + (result.stderr or "")
        assert result.returncode == 0, f"live Swift tests failed (exit {result.returncode}):\n{output[-6000:]}\n{host.logs()}"
        # The suite must really have run, not been skipped as disabled.
        assert "Live mDNS daemon" in output and "skipped" not in output, output[-3000:]
    finally:
        lab.remove_host("live")
