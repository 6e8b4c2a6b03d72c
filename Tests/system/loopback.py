"""What the system tests share: a free loopback port, and waiting for `oa-bridge serve` to answer on it."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, proc: subprocess.Popen | None = None, timeout: float = 15.0) -> None:
    """Waits until GET /api/health answers on 127.0.0.1:port; fails early, with its stderr, if `proc` exits."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=0.5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"serve exited ({proc.returncode}) before answering: {str(err)[-2000:]}")
        time.sleep(0.05)
    raise AssertionError(f"serve did not answer /api/health on port {port} within {timeout:.0f} s")
