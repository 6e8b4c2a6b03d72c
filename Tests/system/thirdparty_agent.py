"""fast-agent (PyPI `fast-agent-mcp`), the real third-party ACP agent of test_acp_thirdparty.py, in a venv of its own.

fast-agent needs Python >= 3.12 and has many dependencies, so it goes into `.venv/thirdparty/` (ignored by git, made
once and reused; pip's cache is not used), never into the test venv. The Python is `$OA_THIRDPARTY_PYTHON`, else
`python3.13`/`python3.12` on PATH, else a pyenv 3.12+.

`python Tests/system/thirdparty_agent.py` installs it ahead of the tests: scripts/test runs that in the background
while Swift builds, so the install (about 80 s) is not added to CI's time. Exit status 0 when installed, 3 when no
Python 3.12 was found (the tests then skip and say why), 1 when pip failed (the tests then try once more)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PACKAGE = "fast-agent-mcp"
VERSION = "0.10.46"  # 0.10.47+ pins certifi>=2026.10.19, newer than the registry this project reaches serves
REPO = Path(__file__).resolve().parent.parent.parent
VENV = REPO / ".venv" / "thirdparty" / f"{PACKAGE}-{VERSION}"
EXECUTABLE = VENV / "bin" / "fast-agent-acp"
INSTALL_SECONDS = 900


class NoPython312(Exception):
    """No Python 3.12 or newer was found to make the agent's venv with."""


class InstallFailed(Exception):
    """pip could not install the agent; the message holds the end of its error output."""


def python_312() -> str | None:
    """A Python 3.12 or newer to make the agent's venv with."""
    candidates = [os.environ.get("OA_THIRDPARTY_PYTHON"), shutil.which("python3.13"), shutil.which("python3.12")]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python")), reverse=True)
    candidates += sorted(glob.glob("/root/.pyenv/versions/3.1[2-9]*/bin/python"), reverse=True)
    for candidate in filter(None, candidates):
        try:
            out = subprocess.run([candidate, "-c", "import sys, venv; print(sys.version_info >= (3, 12))"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == "True":
            return candidate
    return None


def install() -> Path:
    """`fast-agent-acp`, installed on first use (the time it took is printed and kept in the venv's marker)."""
    marker = VENV / "installed"
    if marker.exists() and EXECUTABLE.exists():
        return EXECUTABLE
    python = python_312()
    if python is None:
        raise NoPython312(f"{PACKAGE} needs Python >= 3.12 and none was found (set OA_THIRDPARTY_PYTHON); "
                          "Debian 12 ships 3.11")
    shutil.rmtree(VENV, ignore_errors=True)
    started = time.monotonic()
    subprocess.run([python, "-m", "venv", str(VENV)], check=True, timeout=120)
    result = subprocess.run([str(VENV / "bin" / "pip"), "install", "--quiet", "--no-cache-dir",
                             "--disable-pip-version-check", f"{PACKAGE}=={VERSION}"],
                            capture_output=True, text=True, timeout=INSTALL_SECONDS)
    if result.returncode != 0:
        raise InstallFailed(f"pip install {PACKAGE}=={VERSION} failed:\n{result.stderr[-3000:]}")
    marker.write_text(f"{PACKAGE}=={VERSION} installed in {time.monotonic() - started:.0f} s with {python}\n")
    print(f"\n{PACKAGE}=={VERSION}: venv and install took {time.monotonic() - started:.0f} s")
    return EXECUTABLE


if __name__ == "__main__":
    try:
        print(install())
    except NoPython312 as e:
        print(e, file=sys.stderr)
        sys.exit(3)
    except (InstallFailed, subprocess.SubprocessError) as e:
        print(e, file=sys.stderr)
        sys.exit(1)
