"""CI smoke test of the benchmark harness (scripts/bench, the `bench` executable, bench/*.py) on a tiny setting.

Benchmarks are not tests: this checks only that every loopback section runs and reports sane numbers (requests
answered, relay counts complete, idle connections opened, every discovery and connect figure of the lab section
measured), not that targets are met.
"""

from __future__ import annotations

import json
import shutil
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab_support import REPO, build_dir


def test_bench_harness_runs_on_a_tiny_setting(tmp_path):
    bin_dir = build_dir()
    if not (bin_dir / "bench").is_file():
        pytest.fail(f"{bin_dir / 'bench'} missing: run `swift build` (the bench product is part of the package)")
    out = tmp_path / "bench.json"
    cp = subprocess.run([sys.executable, str(REPO / "scripts" / "bench"), "--quick", "--bin-dir", str(bin_dir),
                         "--sections", "rpc,relay,scale", "--json-out", str(out)],
                        capture_output=True, text=True, timeout=240, cwd=REPO)
    assert cp.returncode == 0, cp.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["machine"]["nproc"] >= 1 and result["machine"]["swift"]
    servers = {r["server"] for r in result["rpc"]}
    # The Go reference (bench/goref) joins when Debian's golang-go and gorilla/websocket are installed.
    go = shutil.which("go") is not None and Path("/usr/share/gocode/src/github.com/gorilla/websocket").is_dir()
    assert servers == {"oa-bridge", "python-websockets", "hummingbird-echo"} | ({"go-gorilla"} if go else set())
    for row in result["rpc"]:
        assert row["errors"] == 0 and row["opened"] == row["clients"], row
        assert row["requests"] > 0 and row["p99_ms"] >= row["p50_ms"] > 0, row
    relay = result["relay"]
    assert relay["pipe_updates_per_s"] > 0
    for key in ("bridge_1", "bridge_10") + (("go_bridge_1", "go_bridge_10") if go else ()):
        assert relay[key]["per_client"] == relay["count"], relay[key]
        assert relay[key]["updates"] == relay["count"] * relay[key]["clients"], relay[key]
    scale = result["scale"]
    assert all(ms > 0 for ms in scale["serve_listening_ms"])
    for label in ("bridge", "hummingbird-echo"):
        assert scale[label]["opened"] == scale[label]["wanted"], scale[label]
        assert scale[label]["rss_open_kb"] > 0


def test_bench_lab_section_runs_on_a_tiny_setting(tmp_path):
    """One repetition of the discovery and connect figures in a lab of the harness's own, with the binaries named by a
    relative --bin-dir (the lab runs them from each host's directory)."""
    bin_dir = build_dir()
    if not (bin_dir / "bench").is_file():
        pytest.fail(f"{bin_dir / 'bench'} missing: run `swift build` (the bench product is part of the package)")
    out = tmp_path / "bench.json"
    cp = subprocess.run([sys.executable, str(REPO / "scripts" / "bench"), "--quick", "--bin-dir", os.path.relpath(bin_dir, REPO),
                         "--sections", "lab", "--json-out", str(out)],
                        capture_output=True, text=True, timeout=240, cwd=REPO)
    assert cp.returncode == 0, cp.stderr[-4000:]
    lab = json.loads(out.read_text())["lab"]
    for key in ("serve_to_resolved", "publish_to_resolved", "running_bridge_fresh_browser", "running_publish_fresh_browser",
                "removal_sigterm", "removal_publish"):
        assert lab[key] and all(isinstance(x, float) and x > 0 for x in lab[key]), (key, lab[key], cp.stderr[-3000:])
    assert lab["connect_ms"] and all(ms > 0 for ms in lab["connect_ms"]), (lab["connect_ms"], cp.stderr[-3000:])
