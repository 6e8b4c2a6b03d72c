"""What the system tests share: the binary, the port a server listens on (it picks it: `--port 0`), waiting for
`oa-bridge serve` to answer on it, a `serve` process on loopback that a test starts, restarts on the same port and
stops, a socket that holds a port closed, and the two pieces of a hand-made WebSocket client (its upgrade request and
its masked frames). Tests/pytest.ini puts this folder on `sys.path` for every test folder."""

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


def held_closed_port(host: str = "127.0.0.1") -> socket.socket:
    """A socket bound to a port the kernel picks on `host`, never listening: while the test keeps it open, a connection
    to `socket.getsockname()[1]` is refused and nothing else can take the port (a port bound, closed and handed on can
    be taken by another test first). Close it when done."""
    holder = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    holder.bind((host, 0))
    return holder


def reserved_port(host: str = "127.0.0.1") -> socket.socket:
    """A socket bound with SO_REUSEADDR to a port the kernel picks on `host`, never listening: the port stays this
    test's while it is open (a plain bind and the kernel's own picks for `bind(port 0)` avoid it), and a server that
    binds with SO_REUSEADDR (NIO does, so `oa-bridge serve` does) can still take it over. For a server that must know
    its port before it binds (the QR code and the banner name it); close the socket once the server listens."""
    holder = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind((host, 0))
    return holder


def listening_port_of(pid: int) -> int | None:
    """The TCP port process `pid` listens on now, read from /proc (its socket descriptors and /proc/net/tcp{,6}), or
    None while it listens on none. scripts/bench and bench/profile.sh use it too."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    except OSError:
        return None
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
    return None


def listening_port(proc: subprocess.Popen, timeout: float = 15.0, log: Path | None = None) -> int:
    """The TCP port `proc` listens on (``listening_port_of``): for a server started with `--port 0`, so the kernel
    picks a port nobody else holds and no test has to guess a free one (a port bound, closed and handed on can be
    taken by another test first). Fails early, with `log`'s tail, if `proc` exits."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        port = listening_port_of(proc.pid)
        if port is not None:
            return port
        if proc.poll() is not None:
            err = log.read_text(errors="replace") if log is not None else ""
            raise AssertionError(f"serve exited ({proc.returncode}) before listening: {err[-2000:]}")
        time.sleep(0.05)
    raise AssertionError(f"serve did not listen within {timeout:.0f} s")


def authority(host: str, port: int) -> str:
    """`host:port`, an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def wait_healthy(port: int, proc: subprocess.Popen | None = None, timeout: float = 15.0,
                 log: Path | None = None, host: str = "127.0.0.1") -> None:
    """Waits until GET /api/health answers on host:port; fails early, with its stderr (or the tail of `log`),
    if `proc` exits."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://{authority(host, port)}/api/health", timeout=0.5) as response:
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
    """`oa-bridge serve` on a loopback port the kernel picks (`--port 0`, then ``listening_port``) with discovery off
    and a fresh state directory under `base`; ``restart`` starts it again on the same port and state.

    Its stderr goes to `base/serve.log`, a file and not a pipe: nobody drains a pipe while the test runs, and a full
    one would block the bridge's logging. `extra` arguments follow the defaults and so override them."""

    def __init__(self, *extra: str, prefix: str = "oa-serve-", working_directory: Path | None = None,
                 state: Path | None = None, env: dict | None = None, host: str = "127.0.0.1",
                 base: Path | None = None, known_port: bool = False) -> None:
        """`state`: a state directory to use (kept across restarts) instead of a fresh one; `env`: added to the
        environment; `host`: the address to listen on; `base`: the directory for the log (and the state, unless
        given) instead of a fresh one; `known_port`: serve is told its port (a ``reserved_port``, held until it
        listens) instead of `--port 0`, for tests of what names the port (the QR code's URL, /api/pair/info)."""
        self.base = base if base is not None else Path(tempfile.mkdtemp(prefix=prefix)).resolve()
        self.state = state if state is not None else self.base / "state"
        self.log_path = self.base / "serve.log"
        self.host = host
        self.extra = list(extra)
        self.working_directory = working_directory
        self.env = env
        self.port = 0
        self.known_port = known_port
        self.start()

    def arguments(self) -> list[str]:
        """The command line: the defaults, then `extra` (on a restart, the port the first start got)."""
        arguments = [BIN, "serve", "--discovery", "off", "--host", self.host, "--port", str(self.port),
                     "--state-dir", str(self.state)]
        if self.working_directory is not None:
            arguments += ["--working-directory", str(self.working_directory)]
        return [*arguments, *self.extra]

    def start(self) -> None:
        """Starts serve (on the port of its first start, if it ran before) and waits until it answers."""
        holder = reserved_port(self.host) if self.port == 0 and self.known_port else None
        if holder is not None:
            self.port = holder.getsockname()[1]
        try:
            with open(self.log_path, "a") as log:
                self.proc = subprocess.Popen(self.arguments(), stdout=subprocess.DEVNULL, stderr=log, text=True,
                                             env={**os.environ, **(self.env or {})})
            if self.port == 0:
                self.port = listening_port(self.proc, log=self.log_path)
            self.authority = authority(self.host, self.port)
            self.base_url = f"http://{self.authority}"
            self.ws_url = f"ws://{self.authority}/"
            wait_healthy(self.port, self.proc, log=self.log_path, host=self.host)
        finally:
            if holder is not None:
                holder.close()

    def restart(self, extra: list[str] | None = None) -> None:
        """Stops serve and starts it again on the same port and state directory (with `extra` instead of the
        arguments it had, when given)."""
        self.terminate()
        if extra is not None:
            self.extra = list(extra)
        self.start()

    def terminate(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `grace` seconds."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def stop(self, grace: float = 10.0) -> str:
        """``terminate``, then returns what serve logged."""
        self.terminate(grace)
        return self.log_path.read_text(errors="replace")
