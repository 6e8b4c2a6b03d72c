"""scripts/setup on a fresh machine (issue 29 item 8): another package manager holding dpkg's lock (unattended-upgrades
in a cloud machine's first minutes) is waited for, with a message saying what for, within a bound; never an
immediate failure. apt-get is replaced by a fake on PATH that records when it ran: nothing is installed."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
LOCK = Path("/var/lib/dpkg/lock-frontend")
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="scripts/setup runs as root"),
    pytest.mark.skipif(shutil.which("fuser") is None, reason="needs fuser (psmisc)"),
]

HOLDER = """
import fcntl, sys, time
f = open(sys.argv[1], "a")
fcntl.lockf(f, fcntl.LOCK_EX)  # apt's own kind of lock: fcntl, not flock
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _fake_apt(bin_dir: Path, log: Path) -> None:
    apt = bin_dir / "apt-get"
    apt.write_text(f"#!/bin/sh\necho \"$(date +%s.%N) $*\" >> {log}\n")
    apt.chmod(0o755)


def _hold_lock(seconds: float) -> subprocess.Popen:
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(LOCK), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _setup(bin_dir: Path, wait: int) -> subprocess.Popen:
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", OA_SETUP_LOCK_WAIT=str(wait))
    return subprocess.Popen(["bash", str(REPO / "scripts/setup"), "--no-start"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_setup_waits_for_the_dpkg_lock_and_says_for_what():
    work = Path(tempfile.mkdtemp(prefix="oa-setup-"))
    log = work / "apt.log"
    _fake_apt(work, log)
    holder = _hold_lock(8)
    held_at = time.time()
    try:
        setup = _setup(work, wait=60)
        out, err = setup.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert setup.returncode == 0, err
    assert "waiting for the package manager's lock" in err and f"pid {holder.pid}" in err, err
    calls = log.read_text().splitlines()
    assert [c.split(" ", 2)[1:2] for c in calls] == [["-o"], ["-o"]], calls
    assert "DPkg::Lock::Timeout=60 update" in calls[0] and "install" in calls[1]
    # apt ran only after the holder let go: it held the lock for 8 s from held_at.
    assert float(calls[0].split(" ", 1)[0]) >= held_at + 7.5, (held_at, calls)
    assert err.count("waiting for the package manager's lock") == 1, "one message, not one per poll"


def test_setup_gives_up_within_its_bound_with_what_to_do():
    work = Path(tempfile.mkdtemp(prefix="oa-setup-"))
    log = work / "apt.log"
    _fake_apt(work, log)
    holder = _hold_lock(60)
    try:
        started = time.monotonic()
        setup = _setup(work, wait=5)
        out, err = setup.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert setup.returncode == 1, err
    assert "gave up after 5s" in err and "OA_SETUP_LOCK_WAIT" in err, err
    assert took < 30
    assert not log.exists(), "apt-get ran while the lock was held"
