"""The docs cannot drift from the binary (issue 29 item 1): every flag a usage block in docs/commands.md names is one
the command's --help knows, and the banner examples in README.md and docs/commands.md are what `serve` prints, with
addresses, ports, times and the fingerprint's bytes left as placeholders."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from loopback import listening_port, wait_healthy

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")
COMMANDS = REPO / "docs" / "commands.md"


def _usage_lines() -> list[tuple[str, str]]:
    """(subcommand path, line) for every `oa-bridge …` line (with its continuation lines) of the code blocks."""
    out: list[tuple[str, str]] = []
    in_code, current = False, None
    for line in COMMANDS.read_text().splitlines():
        if line.startswith("```"):
            in_code, current = not in_code, None
            continue
        if not in_code:
            continue
        if line.startswith("oa-bridge "):
            # The subcommand path: the lower-case words after the program name (`devices approve ID` → `devices approve`).
            words = []
            for word in line.split()[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                words.append(word)
            current = " ".join(words)
            out.append((current, line))
        elif current and line.startswith(" "):
            out.append((current, line))
    return out


def _help(command: str) -> str:
    r = subprocess.run([BIN, *command.split(), "--help-hidden"], capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def test_every_flag_in_the_usage_blocks_is_known_to_the_binary():
    lines = _usage_lines()
    assert len(lines) >= 8, lines
    helps: dict[str, str] = {}
    unknown = []
    for command, line in lines:
        # Only the usage part: what comes before two spaces of explanation.
        usage = re.split(r"\s{3,}", line.strip())[0]
        text = helps.setdefault(command, _help(command))
        for flag in re.findall(r"--(?:\[no-\])?[a-z][a-z0-9-]*", usage):
            spelled = flag.replace("[no-]", "")
            if spelled == "--generate-completion-script":  # ArgumentParser's own, left out of every help
                known = subprocess.run([BIN, spelled, "bash"], capture_output=True, timeout=30).returncode == 0
            else:
                known = spelled in text
            if not known:
                unknown.append(f"{command}: {flag}")
    assert not unknown, f"docs/commands.md names flags the binary does not know: {unknown}"


def _normalise(line: str) -> str:
    line = re.sub(r"\d{4}-\d\d-\d\dT[\d:]+[+-]\d{4}", "TIME", line)
    line = re.sub(r"(https?|wss?)://[^/\s]+", r"\1://HOST", line)
    line = re.sub(r"\b[0-9A-F]{2}\b", "XX", line)
    line = re.sub(r"\d+", "N", line)
    return line.rstrip()


def _beside_code(line: str) -> str:
    """The text of a banner line without the QR code's row before it (the text stands 2 columns right of the code,
    whose rows end in its light quiet zone, '██'); a line of the code alone becomes empty."""
    return re.sub(r"^.*██(  |$)", "", line) if set(line) & set("▀▄█") else line


def _example(path: Path, marker: str) -> list[str]:
    text = path.read_text()
    block = text[text.index(marker):].split("```", 2)[1]
    return [_beside_code(line) for line in block.splitlines()[1:] if _beside_code(line)]


def test_the_banner_examples_are_what_serve_prints():
    out_path = Path(tempfile.mkdtemp(prefix="oa-docs-")) / "out"
    err_path = out_path.with_name("err")
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        proc = subprocess.Popen([BIN, "serve", "--name", "desk", "--discovery", "off", "--port", "0",
                                 "--state-dir", tempfile.mkdtemp(prefix="oa-docs-state-")],
                                stdout=out_file, stderr=err_file, text=True)
    try:
        wait_healthy(listening_port(proc), proc)
        deadline = time.monotonic() + 15
        while "expires in" not in out_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    printed = {_normalise(_beside_code(line)) for line in (out_path.read_text() + err_path.read_text()).splitlines()}
    # The serve log line is printed without the "[::]" of the default host when --host is given; here it is the default.
    for path, marker in ((REPO / "README.md", "<!-- banner example -->"), (COMMANDS, "<!-- serve example -->")):
        for line in _example(path, marker):
            if "advertising" in line:  # discovery is off here; the lab tests the advertising line
                continue
            assert _normalise(line) in printed, f"{path.name}: this example line is not what serve prints:\n{line}\n" \
                f"printed:\n" + "\n".join(sorted(printed))
