"""Helpers the lab's test files import: paths, waits on hosts, the fake tailscale command. They live here, not in
conftest.py, because several test folders have a conftest.py and `from conftest import` would then depend on which
one pytest imported last."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

import lab as labmod  # noqa: E402

REPO = HERE.parent.parent
SERVICE_TYPE = "_openagents._tcp"


def build_dir() -> Path:
    """The directory of the binaries under test: that of $OA_BRIDGE_BIN (default .build/debug), where `swift build`
    also puts bench, PhoneClient and the test bundle."""
    return Path(os.environ.get("OA_BRIDGE_BIN", REPO / ".build" / "debug" / "oa-bridge")).parent


def snapshot(the_lab: labmod.Lab, path: Path) -> Path:
    """A copy of the binary `path` in the lab dir, so a rebuild during the run (ETXTBSY, or a half-written file)
    cannot change what is tested."""
    snap = the_lab.dir / "bin" / path.name
    snap.parent.mkdir(exist_ok=True)
    for _ in range(20):  # a linker may be writing it right now
        st = path.stat()
        shutil.copy2(path, snap)
        if path.stat().st_mtime == st.st_mtime and snap.stat().st_size == st.st_size:
            break
        time.sleep(0.5)
    return snap


def wait_http(host: labmod.Host, url: str, timeout: float = 15.0, guard: labmod.Proc | None = None) -> None:
    """Polls `url` from inside `host` until it answers (any HTTP status); fails at once if `guard` (the server)
    has exited."""
    probe = ("import sys, urllib.request, urllib.error\n"
             "try:\n    urllib.request.urlopen(sys.argv[1], timeout=1)\n"
             "except urllib.error.HTTPError:\n    pass\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if guard is not None and guard.poll() is not None:
            raise AssertionError(f"{guard.label} exited before {url} answered\n{guard.describe()}")
        if host.run(["python3", "-c", probe, url], timeout=5).returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer on {host.name} within {timeout:.0f} s"
                         + (f"\n{guard.describe()}" if guard is not None else ""))


def fake_tailscale(host: labmod.Host, status: dict) -> dict:
    """A fake `tailscale` command for `host` that prints `status` for `tailscale status --json` (never a real
    tailnet); returns the environment (PATH) that puts it first."""
    bindir = host.dir / "fake-tailscale-bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / "tailscale"
    script.write_text("#!/bin/sh\n"
                      "[ \"$1 $2\" = \"status --json\" ] || { echo \"fake tailscale: $*\" >&2; exit 3; }\n"
                      f"echo '{json.dumps(status)}'\n")
    script.chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}


def _browse_names(host: labmod.Host, stype: str = SERVICE_TYPE) -> set[str]:
    cp = host.run(["avahi-browse", "-pt", stype], timeout=5)
    return {e["name"] for e in labmod.parse_avahi_browse(cp.stdout) if e["event"] == "+"}


def wait_resolved(host: labmod.Host, name: str, timeout: float = 8.0, stype: str = SERVICE_TYPE,
                  guard: labmod.Proc | None = None) -> list[dict]:
    """Poll `avahi-browse -rpt` on host until instance `name` resolves over IPv4; return its '=' records.
    Product-independent: used to know a service is on the wire before a one-shot browse is started.
    Fails at once if `guard` (the publisher) has exited."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if guard is not None and guard.poll() is not None:
            raise AssertionError(f"{guard.label} exited while waiting for {name} on {host.name}\n{guard.describe()}")
        cp = host.run(["avahi-browse", "-rpt", stype], timeout=8)
        last = cp.stdout + cp.stderr
        recs = [e for e in labmod.parse_avahi_browse(cp.stdout) if e["event"] == "=" and e["name"] == name]
        if any(r["protocol"] == "IPv4" for r in recs):
            return recs
        time.sleep(0.1)
    raise AssertionError(f"{name} not resolved on {host.name} within {timeout}s; last avahi-browse output:\n{last}")


def wait_service_gone(host: labmod.Host, timeout: float = 5.0, stype: str = SERVICE_TYPE) -> set[str]:
    """Wait until `host`'s avahi cache has no instance of stype; return what is left (empty if clean)."""
    deadline = time.monotonic() + timeout
    left = _browse_names(host, stype)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _browse_names(host, stype)
    return left
