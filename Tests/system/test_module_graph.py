"""README.md's module graph (the code block under "## Development") names, for each library target, exactly the
in-package dependencies Package.swift declares (issue 31): `scripts/module-graph --check README.md`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
SCRIPT = REPO / "scripts" / "module-graph"
README = REPO / "README.md"
pytestmark = pytest.mark.skipif(shutil.which("swift") is None, reason="no swift toolchain on PATH")


@pytest.fixture(scope="module")
def package_json(tmp_path_factory) -> Path:
    """Package.swift as `swift package dump-package` sees it, read once for the module."""
    directory = tmp_path_factory.mktemp("graph")
    # A scratch path of its own: reading the manifest needs no build, so it does not wait for .build's lock.
    out = subprocess.run(["swift", "package", "--scratch-path", str(directory / "scratch"), "dump-package"], cwd=REPO,
                         check=True, capture_output=True, text=True, timeout=300)
    path = directory / "package.json"
    path.write_text(out.stdout)
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_readme_names_the_dependencies_package_swift_declares(package_json):
    result = run("--json", str(package_json), "--check", str(README))
    assert result.returncode == 0, result.stderr


def test_the_script_prints_every_library_with_its_in_package_dependencies(package_json):
    result = run("--json", str(package_json))
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert "BridgeServer" in lines and "BridgeWorkspace" in lines
    assert "CWorkspaceFS" in lines["BridgeWorkspace"]
    assert "BridgeTestKit" not in lines and "CWorkspaceFS" not in lines
    targets = {t["name"]: t for t in json.loads(package_json.read_text())["targets"]}
    for name, line in lines.items():
        named = line.partition("→")[2]
        for dependency in targets[name]["dependencies"]:
            if "byName" in dependency:
                assert dependency["byName"][0] in named, f"{name}: {line}"


@pytest.mark.parametrize("change", ["drop", "add"])
def test_a_readme_that_names_other_dependencies_fails_the_check(package_json, tmp_path, change):
    text = README.read_text()
    row = "BridgeACP           ACP messages, dialects, the stdio agent on SwiftNIO        → BridgeRPC"
    assert row in text
    edited = row.replace("→ BridgeRPC", "→ BridgeTime" if change == "drop" else "→ BridgeRPC, BridgeTime")
    (tmp_path / "README.md").write_text(text.replace(row, edited))
    result = run("--json", str(package_json), "--check", str(tmp_path / "README.md"))
    assert result.returncode == 1
    assert "BridgeACP" in result.stderr
    if change == "drop":
        assert "does not name BridgeRPC" in result.stderr
    assert "names BridgeTime" in result.stderr


def test_a_readme_without_a_row_for_a_library_fails_the_check(package_json, tmp_path):
    text = README.read_text()
    row = "BridgeTime          "
    assert row in text
    lines = [line for line in text.splitlines() if not line.startswith(row)]
    (tmp_path / "README.md").write_text("\n".join(lines) + "\n")
    result = run("--json", str(package_json), "--check", str(tmp_path / "README.md"))
    assert result.returncode == 1
    assert "BridgeTime: no row" in result.stderr
