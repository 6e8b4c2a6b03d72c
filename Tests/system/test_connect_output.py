"""`oa-bridge connect` on a terminal (issues 27.9 and 29.7), against a real `oa-bridge serve` on loopback with the
demo agent: what the agent sends never drives the user's terminal, the answer and the tool lines stay apart, every
failure has a reason, permission questions are asked in a terminal (a pty here) and not asked, once said, without one,
and a bridge that answers 401 is "needs pairing", not "no address answered".

The demo agent echoes the prompt word by word ("You said: …"), then announces a tool call, asks permission for it,
and reports it completed (the time) or failed ("Not run: permission was not given.")."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from loopback import Serve

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

# What a terminal acts on: C0 controls but \n and \t, DEL, C1 controls, bidi overrides and isolates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u202a-\u202e\u2066-\u2069]")


def client_env(base: Path) -> dict:
    """The client keeps its credentials under `base`, never in the user's home."""
    return {**os.environ, "XDG_STATE_HOME": str(base / "client-state"), "HOME": str(base)}


def connect(serve: Serve, *arguments: str, timeout: float = 60, merged: bool = False) -> subprocess.CompletedProcess:
    """`connect 127.0.0.1:PORT …` to `serve`, with stdin not a terminal; `merged`: stderr into stdout, in order."""
    command = [BIN, "connect", f"127.0.0.1:{serve.port}", "--browse-time", "0.2", *arguments]
    return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merged else subprocess.PIPE, text=True, timeout=timeout,
                          env=client_env(serve.base))


@pytest.fixture
def bridge(serve_factory):
    return serve_factory("--auth", "none", prefix="oa-connect-out-")


HOSTILE = ("title\x1b]0;owned\x07 clear\x1b[2J clip\x1b]52;c;ZWNobyBoaQ==\x1b\\ c1\u009b31m "
           "bidi\u202efdp.exe bell\x07 cr\roverwrite")


def test_the_agents_escape_sequences_never_reach_the_terminal(bridge):
    done = connect(bridge, "--prompt", HOSTILE)
    assert done.returncode == 0, done.stderr
    assert "You said: title" in done.stdout, done.stdout
    for name, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        found = sorted({hex(ord(c)) for c in CONTROL.findall(text)})
        assert not found, f"{name} carries control characters {found}:\n{text!r}"
    # Shown, not dropped: the user sees that the agent sent something.
    assert "^[]0;owned^G" in done.stdout and "^[[2J" in done.stdout and "^[]52;c;" in done.stdout, done.stdout
    assert "<U+009B>31m" in done.stdout and "<U+202E>fdp.exe" in done.stdout, done.stdout


def test_text_and_tool_lines_are_apart_and_a_failure_says_why(bridge):
    # stdout and stderr into one pipe, as on a terminal: the tool line starts a line of its own.
    done = connect(bridge, "--prompt", "hello there", merged=True)
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert "You said: hello there" in lines, f"the answer is glued to another line:\n{done.stdout}"
    tools = [line for line in lines if "[tool " in line]
    assert tools and all(line.startswith("[tool ") for line in tools), f"a tool line inside the answer:\n{done.stdout}"
    # The demo agent's tool is rejected without --yes: the failure carries the agent's reason.
    failed = [line for line in tools if "failed" in line]
    assert failed, done.stdout
    for line in failed:
        assert re.search(r"failed[:(]", line) and "permission was not given" in line, line
    assert "[tool Tell the time]" in done.stdout, "updates that repeat only the id are shown with the call's title"
    # Without a terminal the permission is rejected, and that is said once, with how to approve.
    assert done.stdout.count("not a terminal") == 1 and "--yes" in done.stdout, done.stdout


def test_with_yes_the_tool_runs_and_the_answer_goes_on_after_the_tool_line(bridge):
    done = connect(bridge, "--prompt", "what time", "--yes", merged=True)
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert "You said: what time" in lines, done.stdout
    assert any(line.startswith("[tool Tell the time] completed") for line in lines), done.stdout
    assert any(line.startswith(" (The time is") for line in lines), done.stdout


def run_in_pty(command: list[str], answers: dict[str, str], env: dict, timeout: float = 60) -> tuple[int, str]:
    """Runs `command` with a pty as its terminal (stdin, stdout, stderr); when the output so far ends a question
    that matches a key of `answers`, types that answer. Returns the exit status and everything it wrote."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    output = b""
    answered: set[str] = set()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                output += chunk
            text = output.decode(errors="replace")
            for question, answer in answers.items():
                if question not in answered and question in text:
                    answered.add(question)
                    os.write(master, (answer + "\n").encode())
            if proc.poll() is not None and not ready:
                break
        proc.wait(max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)
    return proc.returncode, output.decode(errors="replace")


def test_in_a_terminal_the_permission_is_asked_and_the_answer_is_used(bridge):
    command = [BIN, "connect", f"127.0.0.1:{bridge.port}", "--browse-time", "0.2", "--prompt", "ask me"]
    status, output = run_in_pty(command, {"choose 1-2": "1"}, client_env(bridge.base))
    assert status == 0, output
    assert "[permission] the agent asks to: Tell the time" in output, output
    assert "1) Allow once" in output and "2) Reject" in output, output
    assert "[permission] Tell the time: Allow once" in output, output
    assert "(The time is" in output, f"the allowed tool did not run:\n{output}"
    assert "not a terminal" not in output


def test_in_a_terminal_reject_is_used_too(bridge):
    command = [BIN, "connect", f"127.0.0.1:{bridge.port}", "--browse-time", "0.2", "--prompt", "ask me"]
    status, output = run_in_pty(command, {"choose 1-2": "r"}, client_env(bridge.base))
    assert status == 0, output
    assert "[permission] Tell the time: Reject" in output, output
    assert "(The time is" not in output and "permission was not given" in output, output


def test_a_bridge_that_answers_401_needs_pairing_with_the_command_to_pair():
    serve = Serve(prefix="oa-connect-401-")  # token auth: without a token the upgrade is refused with 401
    try:
        done = connect(serve, "--prompt", "hi", timeout=60)
    finally:
        serve.stop()
    assert done.returncode != 0, done.stdout
    assert "needs pairing" in done.stderr, done.stderr
    assert "no address of the bridge answered" not in done.stderr and "no address answered" not in done.stderr, done.stderr
    assert "oa-bridge pair --json" in done.stderr and "--pair" in done.stderr, done.stderr
    assert "Usage:" not in done.stderr, done.stderr


def test_json_lines_carry_no_control_characters_either(bridge):
    done = connect(bridge, "--json", "--prompt", HOSTILE)
    assert done.returncode == 0, done.stderr
    found = sorted({hex(ord(c)) for c in CONTROL.findall(done.stdout)})
    assert not found, f"--json output carries control characters {found}"
    texts = "".join(json.loads(line).get("text", "") for line in done.stdout.splitlines() if '"agent_message_chunk"' in line)
    assert "\x1b]0;owned\x07" in texts and "\u202efdp.exe" in texts, "the JSON values themselves are unchanged"
