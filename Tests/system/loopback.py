"""What the system tests share: the binary, a free loopback port, waiting for `oa-bridge serve` to answer on it, and
a `serve` process on loopback that a test starts and stops, and the two pieces of a hand-made WebSocket client (its
upgrade request and its masked frames)."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))


def upgrade_request(host: str) -> bytes:
    """A WebSocket upgrade of `/` (with a fresh key) for a hand-made client on a raw socket."""
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def masked_frame(opcode: int, payload: bytes) -> bytes:
    """One whole client frame (FIN, masked, as RFC 6455 requires of clients) of under 126 bytes."""
    assert len(payload) < 126
    mask = os.urandom(4)
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_port(proc: subprocess.Popen, timeout: float = 15.0, log: Path | None = None) -> int:
    """The TCP port `proc` listens on, read from /proc (its socket descriptors and /proc/net/tcp{,6}): for a server
    started with `--port 0`, so the kernel picks a port nobody else holds and no test has to guess a free one (a port
    bound, closed and handed on can be taken by another test first). Fails early, with `log`'s tail, if `proc` exits."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        inodes = set()
        try:
            for fd in os.listdir(f"/proc/{proc.pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
        except OSError:
            pass
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                # local_address is HEXADDR:HEXPORT; state 0A is LISTEN; field 9 is the inode.
                if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:
                    return int(fields[1].rsplit(":", 1)[1], 16)
        if proc.poll() is not None:
            err = log.read_text(errors="replace") if log is not None else ""
            raise AssertionError(f"serve exited ({proc.returncode}) before listening: {err[-2000:]}")
        time.sleep(0.05)
    raise AssertionError(f"serve did not listen within {timeout:.0f} s")


def wait_healthy(port: int, proc: subprocess.Popen | None = None, timeout: float = 15.0,
                 log: Path | None = None) -> None:
    """Waits until GET /api/health answers on 127.0.0.1:port; fails early, with its stderr (or the tail of `log`),
    if `proc` exits."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=0.5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            err = log.read_text(errors="replace") if log is not None else (proc.stderr.read() if proc.stderr else "")
            raise AssertionError(f"serve exited ({proc.returncode}) before answering: {str(err)[-2000:]}")
        time.sleep(0.05)
    raise AssertionError(f"serve did not answer /api/health on port {port} within {timeout:.0f} s")


class Serve:
    """`oa-bridge serve` on a 127.0.0.1 port the kernel picks (`--port 0`, then ``listening_port``) with discovery
    off and a fresh state directory under `base`.

    Its stderr goes to `base/serve.log`, a file and not a pipe: nobody drains a pipe while the test runs, and a full
    one would block the bridge's logging. `extra` arguments follow the defaults and so override them."""

    def __init__(self, *extra: str, prefix: str = "oa-serve-", working_directory: Path | None = None,
                 state: Path | None = None, env: dict | None = None) -> None:
        """`state`: a state directory to use (kept across restarts) instead of a fresh one; `env`: added to the
        environment."""
        self.base = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
        self.state = state if state is not None else self.base / "state"
        self.log_path = self.base / "serve.log"
        arguments = [BIN, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", "0",
                     "--state-dir", str(self.state)]
        if working_directory is not None:
            arguments += ["--working-directory", str(working_directory)]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([*arguments, *extra], stdout=subprocess.DEVNULL, stderr=log, text=True,
                                         env={**os.environ, **(env or {})})
        self.port = listening_port(self.proc, log=self.log_path)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/"
        wait_healthy(self.port, self.proc, log=self.log_path)

    def stop(self, grace: float = 10.0) -> str:
        """SIGTERM, then SIGKILL after `grace` seconds; returns what serve logged."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.log_path.read_text(errors="replace")
