"""The bridge's own files and the agent's terminals under confinement (issue 27, items 2, 3 and 8), on loopback.

The bridge runs with HOME set to `<root>/home`, its state directory at the default `~/.local/state/oa-bridge` (the
TLS key, the install id, and, with tokens, pairing.sqlite) and a config file at the default
`~/.config/oa-bridge/config.yaml`; sessions work in `~/workspace`; `<root>/outside/secret.txt` lies outside the home.
The agent is the official ACP Python SDK's scripted agent (agents/acp_script_agent.py): `read`/`write` make it call
fs/read_text_file / fs/write_text_file, `call terminal/...` the terminal methods. Every loop is bounded in count and time.

Each test fails on the code before the fix (checked against that binary): `--fs-scope home` served the key and the
config file and wrote them; a terminal read the secret outside and wrote there; with the working directory swapped for
a symbolic link, terminals ran outside; and after `kill -9` of the bridge a terminal's command ran on."""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import loopback
from loopback import BIN, Serve

websockets = pytest.importorskip("websockets")

AGENT = Path(__file__).resolve().parent / "agents" / "acp_script_agent.py"
OWN_CODE_AGENT = Path(__file__).resolve().parent / "agents" / "own_code_agent.py"
NO_LANDLOCK = Path(__file__).resolve().parent / "no_landlock.py"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}
RACE_TERMINALS = int(os.environ.get("OA_CONFINE_RACE_TERMINALS", "120"))
RACE_SECONDS = float(os.environ.get("OA_CONFINE_RACE_SECONDS", "60"))

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")


class HomeBridge(Serve):
    """`serve --auth none --fs-scope SCOPE` with the script agent; HOME = `<root>/home`, state and config at their
    default places under it."""

    def __init__(self, scope: str = "workspace", *extra: str, agent: Path = AGENT, no_landlock: bool = False):
        """`no_landlock`: serve runs under tests' no_landlock.py, a kernel without Landlock as far as it can tell."""
        self.root = Path(tempfile.mkdtemp(prefix="oa-confine-")).resolve()
        self.home = self.root / "home"
        self.workspace = self.home / "workspace"
        self.outside = self.root / "outside"
        self.state_dir = self.home / ".local" / "state" / "oa-bridge"
        self.config_dir = self.home / ".config" / "oa-bridge"
        for directory in [self.workspace, self.outside, self.config_dir]:
            directory.mkdir(parents=True)
        (self.outside / "secret.txt").write_text("OUTSIDE secret")
        (self.home / "notes.txt").write_text("home notes")
        self.config = self.config_dir / "config.yaml"
        self.config.write_text("auth: none\nlog-level: info\n")
        env = {"HOME": str(self.home), "XDG_CONFIG_HOME": "", "XDG_STATE_HOME": ""}
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)  # the serve process inherits them
        if no_landlock:
            # Serve starts loopback.BIN: for this bridge, a script that runs it under the seccomp filter (exec keeps
            # the process id that Serve watches).
            wrapper = self.root / "oa-bridge-without-landlock"
            wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {NO_LANDLOCK} {BIN} \"$@\"\n")
            wrapper.chmod(0o755)
            loopback.BIN = str(wrapper)
        try:
            super().__init__("--agent", f"{sys.executable} {agent}", "--fs-scope", scope, *extra,
                             prefix="oa-confine-serve-", working_directory=self.workspace, state=self.state_dir)
        finally:
            loopback.BIN = BIN
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        self.key = self.state_dir / "tls-key.pem"

    def ask(self, *prompts: str, timeout: float = 60) -> list[str]:
        """Sends each prompt to one session in turn; returns the agent's text reply to each."""
        async def scenario():
            async with websockets.connect(self.ws_url, max_size=2**24) as ws:
                session = await open_session(ws)
                return [await prompt(ws, session, text, 10 + n, timeout) for n, text in enumerate(prompts)]
        return asyncio.run(scenario())


async def open_session(ws) -> str:
    await ws.send(json.dumps(INIT))
    assert "result" in json.loads(await asyncio.wait_for(ws.recv(), 15))
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"mcpServers": []}}))
    while True:
        answer = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if answer.get("id") == 2:
            return answer["result"]["sessionId"]


async def prompt(ws, session: str, text: str, rid: int, timeout: float) -> str:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
                              "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}))
    said = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        update = message.get("params", {}).get("update", {}) if message.get("method") == "session/update" else {}
        if update.get("sessionUpdate") == "agent_message_chunk":
            said.append(update["content"]["text"])
        elif message.get("id") == rid:
            return "".join(said)
    raise AssertionError(f"no answer to {text!r} within {timeout} s")


def reply(text: str) -> dict:
    """The JSON after the agent's first word (`read {...}`, `call {...}`), or {"error": text} for `error: ...`."""
    body = text.split(" ", 1)[1]
    return {"error": body} if body.startswith("error:") else json.loads(body)


def run_terminal(bridge: HomeBridge, command: str, cwd: Path | None = None) -> tuple[dict, str]:
    """Creates a terminal running `sh -c command` in one session, waits for its end; returns its exit status and
    output."""
    params = {"command": "/bin/sh", "args": ["-c", command]}
    if cwd is not None:
        params["cwd"] = str(cwd)

    async def scenario():
        async with websockets.connect(bridge.ws_url, max_size=2**24) as ws:
            session = await open_session(ws)
            created = reply(await prompt(ws, session, "call terminal/create " + json.dumps(params), 10, 30))
            assert "terminalId" in created, created
            terminal = json.dumps({"terminalId": created["terminalId"]})
            exited = reply(await prompt(ws, session, "call terminal/wait_for_exit " + terminal, 11, 60))
            output = reply(await prompt(ws, session, "call terminal/output " + terminal, 12, 30))
            return exited, output.get("output", str(output))
    return asyncio.run(scenario())


@pytest.fixture
def home_bridge(serve_factory):
    return serve_factory("home", kind=HomeBridge)


@pytest.fixture
def workspace_bridge(serve_factory):
    return serve_factory("workspace", kind=HomeBridge)


def test_fs_scope_home_never_reads_or_writes_the_bridges_own_files(home_bridge):
    bridge = home_bridge
    assert bridge.key.exists()
    key = bridge.key.read_text()
    (bridge.home / "link-to-state").symlink_to(bridge.state_dir)
    install_id = bridge.state_dir / "install-id"
    spellings = [bridge.key, bridge.home / "link-to-state" / "tls-key.pem", install_id, bridge.config,
                 Path(str(bridge.home) + "//.config/./oa-bridge/config.yaml")]
    answers = bridge.ask(*[f"read {path}" for path in spellings],
                         f"write {bridge.config} auth: none",
                         f"write {bridge.key} truncated",
                         f"write {bridge.state_dir / 'pairing.sqlite-journal'} junk",
                         f"write {bridge.home / 'link-to-state' / 'new-file'} junk",
                         f"read {bridge.home / 'notes.txt'}",
                         f"write {bridge.home / 'written.txt'} home write")
    refused, allowed = answers[:-2], answers[-2:]
    for path, text in zip([*spellings, "config write", "key write", "journal", "new file"], refused):
        # The script agent reports `error: <code> <data>`: -32602 with the protected directory or file named.
        assert reply(text).get("error", "").startswith("error: -32602"), (path, text)
        assert '"protected": ' in text, (path, text)
    assert reply(allowed[0]) == {"content": "home notes"}, allowed[0]
    assert "error" not in reply(allowed[1]), allowed[1]
    assert (bridge.home / "written.txt").read_text() == "home write"
    assert bridge.key.read_text() == key
    assert bridge.config.read_text() == "auth: none\nlog-level: info\n"
    assert sorted(os.listdir(bridge.state_dir)) == sorted(n for n in os.listdir(bridge.state_dir) if n != "pairing.sqlite-journal")
    assert not (bridge.state_dir / "pairing.sqlite-journal").exists()
    assert not (bridge.state_dir / "new-file").exists()


def test_a_terminal_reads_and_writes_its_workspace_only_and_never_the_bridges_files(workspace_bridge):
    bridge = workspace_bridge
    (bridge.workspace / "src").mkdir()
    (bridge.workspace / "src" / "main.c").write_text("int main;")
    script = "; ".join([
        "cat src/main.c && echo read-workspace",
        "echo built > src/out.o && echo write-workspace",
        f"cat {bridge.outside / 'secret.txt'} && echo read-outside",
        f"echo x > {bridge.outside / 'planted'} && echo write-outside",
        f"cat {bridge.key} && echo read-key",
        f"cat {bridge.config} && echo read-config",
        f"echo 'auth: none' > {bridge.config} && echo write-config",
        f"cat {bridge.home / 'notes.txt'} && echo read-home",
        "ls /usr/bin >/dev/null && echo read-system",
        "true",
    ])
    status, output = run_terminal(bridge, script)
    assert status.get("exitCode") == 0, (status, output)
    assert "read-workspace" in output and "write-workspace" in output, output
    assert (bridge.workspace / "src" / "out.o").read_text() == "built\n"
    for refused in ["read-outside", "write-outside", "read-key", "read-config", "write-config", "read-home"]:
        assert refused not in output, (refused, output)
    assert "OUTSIDE secret" not in output and "PRIVATE KEY" not in output and "home notes" not in output, output
    assert not (bridge.outside / "planted").exists()
    assert bridge.config.read_text() == "auth: none\nlog-level: info\n"


_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    """Swaps two names atomically (renameat2 RENAME_EXCHANGE)."""
    if _libc.renameat2(-100, str(a).encode(), -100, str(b).encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def test_a_terminal_starts_in_the_directory_checked_even_while_it_is_swapped_for_a_link(workspace_bridge):
    bridge = workspace_bridge
    directory = bridge.workspace / "dir"
    directory.mkdir()
    link = bridge.workspace / "dir.link"
    link.symlink_to(bridge.outside)
    stop = threading.Event()
    swaps = [0]

    def swapper():
        deadline = time.monotonic() + RACE_SECONDS + 5
        while not stop.is_set() and time.monotonic() < deadline and swaps[0] < 50_000_000:
            try:
                exchange(directory, link)
                exchange(directory, link)
                swaps[0] += 2
            except OSError:
                time.sleep(0.001)

    async def scenario():
        ran_outside, ran, refused = 0, 0, 0
        async with websockets.connect(bridge.ws_url, max_size=2**24) as ws:
            session = await open_session(ws)
            deadline = time.monotonic() + RACE_SECONDS
            for n in range(RACE_TERMINALS):
                if time.monotonic() > deadline:
                    break
                params = {"command": "/bin/sh", "args": ["-c", "pwd -P"], "cwd": str(directory)}
                created = reply(await prompt(ws, session, "call terminal/create " + json.dumps(params), 100 + 3 * n, 30))
                if "terminalId" not in created:
                    refused += 1
                    continue
                terminal = json.dumps({"terminalId": created["terminalId"]})
                await prompt(ws, session, "call terminal/wait_for_exit " + terminal, 101 + 3 * n, 30)
                output = reply(await prompt(ws, session, "call terminal/output " + terminal, 102 + 3 * n, 30))["output"]
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 90_000 + n, "method": "session/prompt", "params": {
                    "sessionId": session, "prompt": [{"type": "text", "text": "call terminal/release " + terminal}]}}))
                while json.loads(await asyncio.wait_for(ws.recv(), 30)).get("id") != 90_000 + n:
                    pass
                ran += 1
                if output.strip() == str(bridge.outside):
                    ran_outside += 1
        return ran, ran_outside, refused

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        ran, ran_outside, refused = asyncio.run(scenario())
    finally:
        stop.set()
        thread.join(10)
    assert swaps[0] > 1000, swaps
    assert ran >= 20, (ran, refused)
    assert ran_outside == 0, f"{ran_outside} of {ran} terminals ran in {bridge.outside}"


def processes_with(marker: str) -> list[int]:
    """Process ids whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def test_a_terminals_command_dies_with_a_killed_bridge():
    bridge = HomeBridge("workspace")
    marker = f"{300 + os.getpid() % 1000}.{time.monotonic_ns() % 1000000}"
    try:
        params = {"command": "/bin/sh", "args": ["-c", f"sleep {marker}; echo never"]}
        created = reply(bridge.ask("call terminal/create " + json.dumps(params))[0])
        assert "terminalId" in created, created
        deadline = time.monotonic() + 10
        while not processes_with(f"sleep\0{marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(f"sleep\0{marker}"), "the terminal's sleep never started"
        bridge.proc.send_signal(signal.SIGKILL)
        bridge.proc.wait(10)
        deadline = time.monotonic() + 2
        while processes_with(f"sleep\0{marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        left = processes_with(f"sleep\0{marker}")
        assert not left, f"the terminal's command outlived the bridge: {left}"
    finally:
        for pid in processes_with(f"sleep\0{marker}"):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        bridge.stop()


# --- The agent process itself under Landlock (--sandbox-agent) -------------------------------------------------------
# The agent is agents/own_code_agent.py (the official Python SDK), which opens files with its own code: fs/* refusals
# do not apply to it, only the kernel's. Without --sandbox-agent the same requests succeed (the test would pass on
# nothing otherwise); with it, reads outside the scope and of the bridge's files, and writes outside, are refused.


def own(text: str) -> tuple[str, str]:
    """The agent's `ok ...` / `refused ERRNO` answer as (status, rest)."""
    status, _, rest = text.partition(" ")
    return status, rest


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox-agent", "unconfined-agent"])
def test_an_agents_own_code_reaches_only_the_scope_under_sandbox_agent(sandboxed):
    extra = ["--sandbox-agent"] if sandboxed else []
    bridge = HomeBridge("workspace", *extra, agent=OWN_CODE_AGENT)
    try:
        (bridge.workspace / "src.txt").write_text("workspace text")
        answers = bridge.ask(
            f"own-read {bridge.workspace / 'src.txt'}",
            f"own-write {bridge.workspace / 'made.txt'} made inside",
            f"own-read {bridge.outside / 'secret.txt'}",
            f"own-read {bridge.key}",
            f"own-read {bridge.config}",
            f"own-read {bridge.home / 'notes.txt'}",
            f"own-write {bridge.outside / 'planted'} planted",
            f"own-write {bridge.config} auth: none",
            "whoami")
        inside_read, inside_write, *outside, whoami = answers
        assert own(inside_read) == ("ok", "workspace text"), inside_read
        assert own(inside_write) == ("ok", ""), inside_write
        assert (bridge.workspace / "made.txt").read_text() == "made inside"
        tmpdir = whoami.rsplit(" ", 1)[-1]
        if sandboxed:
            for answer in outside:
                assert own(answer) == ("refused", "EACCES"), (answer, outside)
            assert not (bridge.outside / "planted").exists()
            assert bridge.config.read_text() == "auth: none\nlog-level: info\n"
            # Its own temporary directory, writable, and gone once it has ended.
            assert "oa-bridge-agent-" in tmpdir, whoami
            assert own(bridge.ask(f"own-write {tmpdir}/scratch ok")[0]) == ("ok", "")
        else:
            assert [own(answer)[0] for answer in outside] == ["ok"] * 6, outside
            assert "PRIVATE KEY" in outside[1]
        log = bridge.stop()
        assert ("the agent runs sandboxed by Landlock" in log) == sandboxed, log[-2000:]
        if sandboxed:
            assert not Path(tmpdir).exists(), tmpdir
    finally:
        bridge.stop()


def test_a_sandboxed_agent_under_fs_scope_home_reads_the_home_but_never_the_bridges_files():
    bridge = HomeBridge("home", "--sandbox-agent", agent=OWN_CODE_AGENT)
    try:
        answers = bridge.ask(
            f"own-read {bridge.home / 'notes.txt'}",
            f"own-write {bridge.home / 'notes.txt'} home write",
            f"own-write {bridge.workspace / 'made.txt'} made",
            f"own-read {bridge.key}",
            f"own-read {bridge.home / '.local' / 'state' / 'oa-bridge' / '..' / 'oa-bridge' / 'tls-key.pem'}",
            f"own-read {bridge.config}",
            f"own-write {bridge.config} auth: none",
            f"own-write {bridge.state_dir / 'pairing.sqlite-journal'} junk",
            f"own-read {bridge.outside / 'secret.txt'}",
            f"own-write {bridge.home / 'new-in-home.txt'} new")
        assert own(answers[0]) == ("ok", "home notes"), answers[0]
        assert own(answers[1]) == ("ok", ""), answers[1]
        assert own(answers[2]) == ("ok", ""), answers[2]
        assert (bridge.home / "notes.txt").read_text() == "home write"
        for answer in answers[3:-1]:
            assert own(answer) == ("refused", "EACCES"), (answer, answers)
        # The documented limits (docs/security.md): nothing new is made directly in a directory above a protected one
        # (the home directory holds ~/.local/state/oa-bridge), whose existing files and subdirectories are written;
        # and listing a directory above one lists beneath it too, so the protected directory's names (never its
        # files' contents) can be listed.
        assert own(answers[-1]) == ("refused", "EACCES"), answers[-1]
        assert bridge.config.read_text() == "auth: none\nlog-level: info\n"
        assert not (bridge.state_dir / "pairing.sqlite-journal").exists()
    finally:
        bridge.stop()


def test_sandbox_agent_write_gives_the_agent_its_state_directory_but_never_the_bridges_files():
    """An agent's own state (logins, history) lives outside the session: `--sandbox-agent-write DIR` lets it write
    there. Given the whole home directory, the bridge's files beneath it stay out of reach."""
    root = Path(tempfile.mkdtemp(prefix="oa-agent-state-")).resolve()
    state = root / "agent-state"
    state.mkdir()
    (root / "other").mkdir()
    (root / "other" / "private.txt").write_text("not the agent's")
    bridge = HomeBridge("workspace", "--sandbox-agent", "--sandbox-agent-write", str(state), agent=OWN_CODE_AGENT)
    try:
        answers = bridge.ask(f"own-write {state / 'history.json'} []", f"own-read {state / 'history.json'}",
                             f"own-read {root / 'other' / 'private.txt'}")
        assert [own(answer) for answer in answers] == [("ok", ""), ("ok", "[]"), ("refused", "EACCES")], answers
    finally:
        bridge.stop()
    home_wide = HomeBridge("workspace", "--sandbox-agent", "--sandbox-agent-write", "/tmp", agent=OWN_CODE_AGENT)
    try:
        home_wide.ask("noop")
        home = home_wide.home
        answers = home_wide.ask(f"own-write {home / 'notes.txt'} agent state", f"own-read {home_wide.key}",
                                f"own-write {home_wide.config} auth: none")
        assert own(answers[0]) == ("ok", ""), answers
        assert [own(answer) for answer in answers[1:]] == [("refused", "EACCES")] * 2, answers
        assert home_wide.config.read_text() == "auth: none\nlog-level: info\n"
    finally:
        home_wide.stop()


# Only the sandboxed agent runs under the supervisor: an unconfined one starts with Foundation's Process again
# (BridgeAgentLauncher says why) and may outlive a bridge killed with SIGKILL.
@pytest.mark.parametrize("sandboxed", [True], ids=["sandbox-agent"])
def test_the_agent_and_what_it_started_die_with_a_killed_bridge(sandboxed):
    """The agent's tool process (a `sleep` it started and did not wait for) outlived a bridge killed with SIGKILL: the
    agent itself ends on its stdin's end, its children do not. Now they are in the agent's process group, which the
    supervisor kills when the bridge is gone."""
    extra = ["--sandbox-agent"] if sandboxed else []
    bridge = HomeBridge("workspace", *extra, agent=OWN_CODE_AGENT)
    marker = f"{400 + os.getpid() % 1000}.{time.monotonic_ns() % 1000000}"
    try:
        whoami, spawned = bridge.ask("whoami", f"own-spawn sleep {marker}")
        agent_pid = int(whoami.split()[1])
        assert spawned.startswith("ok"), spawned
        deadline = time.monotonic() + 10
        while not processes_with(f"sleep\0{marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(f"sleep\0{marker}"), "the agent's child never started"
        bridge.proc.send_signal(signal.SIGKILL)
        bridge.proc.wait(10)
        deadline = time.monotonic() + 3
        while (processes_with(f"sleep\0{marker}") or alive(agent_pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not processes_with(f"sleep\0{marker}"), "the agent's child outlived the bridge"
        assert not alive(agent_pid), "the agent outlived the bridge"
    finally:
        for pid in processes_with(f"sleep\0{marker}"):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        bridge.stop()


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- A kernel without Landlock (issue 27: say so, turn terminals off and tell the agent, unless unconfined) -----------
# no_landlock.py answers the Landlock system calls with ENOSYS for serve and its children (seccomp), the kernel's
# own answer where Landlock is missing; the last test is the real kernel's path (ABI 7 here).


def test_without_landlock_serve_says_so_tells_the_agent_terminal_false_and_refuses_terminals():
    bridge = HomeBridge("workspace", agent=OWN_CODE_AGENT, no_landlock=True)
    try:
        caps, created = bridge.ask("caps", "terminal echo ran")
        assert json.loads(caps).get("terminal") is False, caps
        assert created.startswith("error -32601"), created
        assert "Landlock" in created and "--no-terminal" not in created, created
        log = bridge.stop()
        started = [line for line in log.splitlines() if "terminals are off (the agent is told terminal: false)" in line]
        assert len(started) == 1 and "no Landlock" in started[0], log[-3000:]
    finally:
        bridge.stop()


def test_without_landlock_and_terminal_confinement_unconfined_terminals_run():
    bridge = HomeBridge("workspace", "--terminal-confinement", "unconfined", agent=OWN_CODE_AGENT, no_landlock=True)
    try:
        caps, created = bridge.ask("caps", "terminal echo ran")
        assert json.loads(caps).get("terminal") is True, caps
        assert created.startswith("ok term-"), created
        assert "terminals run unconfined" in bridge.stop()
    finally:
        bridge.stop()


def test_without_landlock_a_sandboxed_agent_is_not_started_and_says_why():
    bridge = HomeBridge("workspace", "--sandbox-agent", agent=OWN_CODE_AGENT, no_landlock=True)

    async def scenario():
        async with websockets.connect(bridge.ws_url, max_size=2**24) as ws:
            await ws.send(json.dumps(INIT))
            return json.loads(await asyncio.wait_for(ws.recv(), 30))
    try:
        answer = asyncio.run(scenario())
        message = answer.get("error", {}).get("message", "")
        assert "cannot be sandboxed" in message and "no Landlock" in message, answer
        assert "sandbox agent: false" in message and "--sandbox-agent" not in message, answer
    finally:
        bridge.stop()


def test_doctor_names_a_kernel_without_landlock_and_the_real_one():
    env = {**os.environ}
    without = subprocess.run([sys.executable, str(NO_LANDLOCK), BIN, "doctor", "--role", "desk"],
                             capture_output=True, text=True, timeout=120, env=env)
    line = next((l for l in without.stdout.splitlines() if "terminal confinement" in l), "")
    assert line.startswith("warn") and "no Landlock" in line and "terminal: false" in line, without.stdout[-3000:]
    real = subprocess.run([BIN, "doctor", "--role", "desk"], capture_output=True, text=True, timeout=120, env=env)
    line = next((l for l in real.stdout.splitlines() if "terminal confinement" in l), "")
    assert line.startswith("ok") and "Landlock ABI" in line, real.stdout[-3000:]


def test_on_this_kernel_terminals_are_confined_and_the_agent_is_told_terminal_true():
    bridge = HomeBridge("workspace", agent=OWN_CODE_AGENT)
    try:
        caps, created = bridge.ask("caps", "terminal echo ran")
        assert json.loads(caps).get("terminal") is True, caps
        assert created.startswith("ok term-"), created
        assert "terminals run confined by Landlock" in bridge.stop()
    finally:
        bridge.stop()
