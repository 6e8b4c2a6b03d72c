"""pytest fixtures for the oa-bridge LAN lab (see lab.py). Needs root; skips with a reason otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lab as labmod  # noqa: E402
from lab_support import REPO, snapshot, wait_service_gone  # noqa: E402

_LAB: labmod.Lab | None = None


def _ensure_avahi_utils() -> str | None:
    """Return None if avahi-browse/avahi-publish are available (installing avahi-utils if needed), else why not."""
    if shutil.which("avahi-browse") and shutil.which("avahi-publish"):
        return None
    try:
        cp = subprocess.run(["apt-get", "install", "-y", "avahi-utils"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"avahi-utils missing and apt-get failed: {e}"
    if shutil.which("avahi-browse") and shutil.which("avahi-publish"):
        return None
    return f"avahi-utils missing and `apt-get install -y avahi-utils` failed:\n{cp.stdout[-2000:]}"


@pytest.fixture(scope="session")
def bridge_bin(lab) -> str:
    """A snapshot of the oa-bridge binary under test ($OA_BRIDGE_BIN, default .build/debug/oa-bridge), copied into
    the lab dir for the session and removed at its end."""
    path = Path(os.environ.get("OA_BRIDGE_BIN", REPO / ".build" / "debug" / "oa-bridge"))
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.skip(f"oa-bridge binary not found at {path} (build it with `swift build` or set OA_BRIDGE_BIN)")
    snap = snapshot(lab, path)
    print(f"\n[lab] testing {path} (modified {time.strftime('%H:%M:%S', time.gmtime(path.stat().st_mtime))} UTC)")
    yield str(snap)
    snap.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def lab():
    """The session's LAN. Hosts 'desk' and 'phone' are created lazily by their fixtures."""
    global _LAB
    try:
        labmod.check_prerequisites()
    except labmod.LabError as e:
        pytest.skip(f"LAN lab unavailable: {e}")
    why = _ensure_avahi_utils()
    if why:
        pytest.skip(why)
    base = os.environ.get("OA_LAB_DIR")
    the_lab = labmod.Lab(base_dir=base, verbose=True)
    _LAB = the_lab
    try:
        yield the_lab
    finally:
        the_lab.close()
        _LAB = None
        print(f"\n[lab] artefacts (logs, configs, timings.json) kept in {the_lab.dir}", file=sys.stderr)


def _host(the_lab: labmod.Lab, name: str) -> labmod.Host:
    h = the_lab.hosts.get(name)
    if h is None:
        h = the_lab.add_host(name)
    assert h.alive(), f"lab host {name} died\n{h.logs()}"
    return h


@pytest.fixture
def desk(lab) -> labmod.Host:
    return _host(lab, "desk")


@pytest.fixture
def phone(lab) -> labmod.Host:
    return _host(lab, "phone")


@pytest.fixture
def extra_host(lab):
    """Factory for per-test hosts; they are destroyed when the test ends."""
    made: list[str] = []

    def make(name: str, avahi: bool = True) -> labmod.Host:
        h = lab.add_host(name, avahi=avahi)
        made.append(name)
        return h

    yield make
    for name in made:
        lab.remove_host(name)


@pytest.fixture(autouse=True)
def _lab_hygiene(request):
    """Stop every process a test spawned in a lab host, then wait until the phone's cache forgets the test's
    services, so one test's goodbye packets never show up in the next test."""
    before = {}
    if _LAB is not None:
        before = {n: len(h.procs) for n, h in _LAB.hosts.items()}
    request.node._lab_before = before
    yield
    if _LAB is None:
        return
    for name, h in list(_LAB.hosts.items()):
        for p in h.procs[before.get(name, 0):]:
            if p.poll() is None:
                p.stop(timeout=3.0)
    phone = _LAB.hosts.get("phone")
    if phone is not None and phone.alive() and phone.with_avahi:
        left = wait_service_gone(phone, timeout=5.0)
        if left:
            print(f"[lab] warning: phone still caches {sorted(left)} after test teardown", file=sys.stderr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not rep.failed or _LAB is None:
        return
    before = getattr(item, "_lab_before", {})
    procs = []
    for name, h in _LAB.hosts.items():
        procs.extend(h.procs[before.get(name, 0):])
    if procs:
        rep.sections.append(("lab processes", "\n".join(p.describe(40) for p in procs)))
    rep.sections.append(("lab daemon logs", _LAB.all_logs(30)))


class Timings:
    """Measured figures, printed (visible with -s) and written to <lab dir>/timings.json."""

    def __init__(self, the_lab: labmod.Lab):
        self.path = the_lab.dir / "timings.json"
        self.data: dict = {}

    def record(self, key: str, value_ms: float, **extra) -> None:
        entry = {"ms": round(value_ms, 1), **extra}
        self.data.setdefault(key, []).append(entry)
        self.path.write_text(json.dumps(self.data, indent=2, sort_keys=True) + "\n")
        print(f"\n[timing] {key}: {value_ms:.1f} ms {extra if extra else ''}".rstrip())


@pytest.fixture(scope="session")
def timings(lab) -> Timings:
    return Timings(lab)


def pytest_collection_modifyitems(session, config, items):
    """Run the lab's own smoke tests first: if the lab is broken, say so before the product tests fail."""
    items.sort(key=lambda it: 0 if "test_lab_smoke" in it.nodeid else 1)
