"""`oa-bridge serve --fs-scope workspace|home|any` (issue 12 item 10), on loopback, with the hostile fs agent.

The bridge runs with HOME set to `<base>/home`; the session works in `<base>/home/workspace`, a log the agent wants
lies at `<base>/home/logs/run.log`, and `<base>/elsewhere/secret.txt` is outside the home. The agent asks
fs/read_text_file and fs/write_text_file with absolute paths and reports the bridge's answer. Workspace (the default)
refuses the log; home serves it and still refuses `elsewhere`, directly and through symbolic links; any serves both.
`..` stays refused whatever the scope."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from loopback import BIN, Serve
from test_security_fs import AGENT, script_result

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")


class ScopedBridge(Serve):
    """`serve --auth none [--fs-scope SCOPE]` with the hostile agent, HOME = `<base>/home`."""

    def __init__(self, scope: str | None):
        root = Path(tempfile.mkdtemp(prefix="oa-fs-scope-")).resolve()
        self.home = root / "home"
        self.workspace = self.home / "workspace"
        self.logs = self.home / "logs"
        self.elsewhere = root / "elsewhere"
        for directory in [self.workspace, self.logs, self.elsewhere]:
            directory.mkdir(parents=True)
        (self.logs / "run.log").write_text("a log line")
        (self.elsewhere / "secret.txt").write_text("ELSEWHERE secret")
        extra = ["--fs-scope", scope] if scope else []
        saved = os.environ.get("HOME")
        os.environ["HOME"] = str(self.home)  # the serve process inherits it
        try:
            super().__init__("--auth", "none", "--agent", f"{sys.executable} {AGENT}", *extra,
                             prefix="oa-fs-scope-serve-", working_directory=self.workspace)
        finally:
            if saved is None:
                del os.environ["HOME"]
            else:
                os.environ["HOME"] = saved

    def read(self, path: Path | str) -> dict:
        """The bridge's answer to the agent's fs/read_text_file: `{"result": ...}` or `{"error": ...}`."""
        return answer(script_result(self, {"op": "read", "path": str(path)})["answer"])

    def write(self, path: Path | str, content: str = "written") -> dict:
        return answer(script_result(self, {"op": "write", "path": str(path), "content": content})["answer"])


def answer(message: dict) -> dict:
    return {key: value for key, value in message.items() if key in ("result", "error")}


@pytest.fixture
def scoped(request):
    bridge = ScopedBridge(request.param)
    try:
        yield bridge
    finally:
        bridge.stop()


def refused(answer: dict) -> bool:
    return answer.get("error", {}).get("code") == -32602


@pytest.mark.parametrize("scoped", [None, "workspace"], indirect=True, ids=["default", "workspace"])
def test_workspace_refuses_a_file_elsewhere_in_the_home(scoped):
    assert refused(scoped.read(scoped.logs / "run.log")), "the default scope read outside the session's directory"
    error = scoped.read(scoped.logs / "run.log")["error"]
    # The phone has no command line: the setting in words and by its key, no flag (issue 31 item 5).
    assert "file scope" in error["message"] and "--fs-scope" not in error["message"], error
    assert error["data"]["setting"] == "fs-scope", error
    assert refused(scoped.write(scoped.logs / "new.txt"))
    assert not (scoped.logs / "new.txt").exists()
    (scoped.workspace / "notes.txt").write_text("inside")
    assert scoped.read(scoped.workspace / "notes.txt") == {"result": {"content": "inside"}}


@pytest.mark.parametrize("scoped", ["home"], indirect=True)
def test_home_serves_the_home_and_nothing_beyond_it(scoped):
    assert scoped.read(scoped.logs / "run.log") == {"result": {"content": "a log line"}}
    assert scoped.write(scoped.logs / "today" / "new.txt", "from the agent") == {"result": {}}
    assert (scoped.logs / "today" / "new.txt").read_text() == "from the agent"

    assert refused(scoped.read(scoped.elsewhere / "secret.txt"))
    assert refused(scoped.write(scoped.elsewhere / "new.txt"))
    # Symbolic links do not lead beyond the home: from the home, and from the workspace.
    (scoped.home / "away").symlink_to(scoped.elsewhere)
    (scoped.workspace / "up").symlink_to("../../elsewhere")
    for path in [scoped.home / "away" / "secret.txt", scoped.workspace / "up" / "secret.txt"]:
        assert refused(scoped.read(path)), path
        assert refused(scoped.write(path)), path
    assert sorted(os.listdir(scoped.elsewhere)) == ["secret.txt"]
    assert (scoped.elsewhere / "secret.txt").read_text() == "ELSEWHERE secret"
    # Relative paths stay in the workspace, and `..` is refused.
    assert refused(scoped.read(f"{scoped.workspace}/../logs/run.log"))


@pytest.mark.parametrize("scoped", ["any"], indirect=True)
def test_any_serves_any_absolute_path(scoped):
    assert scoped.read(scoped.elsewhere / "secret.txt") == {"result": {"content": "ELSEWHERE secret"}}
    assert scoped.write(scoped.elsewhere / "new.txt") == {"result": {}}
    assert (scoped.elsewhere / "new.txt").read_text() == "written"
    assert refused(scoped.read(f"{scoped.elsewhere}/../elsewhere/secret.txt"))


def test_home_without_a_home_directory_does_not_start_and_says_why(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path / "missing"))
    result = subprocess.run([BIN, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", "0",
                             "--auth", "none", "--state-dir", str(tmp_path / "state"),
                             "--working-directory", str(tmp_path), "--fs-scope", "home"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    # The library says what is wrong; the CLI adds the flag that changes it (issue 31 item 5).
    assert "the file scope 'home' needs the directory" in result.stderr, result.stderr[-2000:]
    assert "choose another file scope. Choose another scope with --fs-scope." in result.stderr, result.stderr[-2000:]


def test_config_show_says_where_the_scope_came_from(tmp_path):
    env = dict(os.environ, OA_BRIDGE_FS_SCOPE="home", HOME=str(tmp_path))
    shown = subprocess.run([BIN, "config", "show"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if line.startswith("fs-scope"))
    assert row.split()[1:] == ["home", "OA_BRIDGE_FS_SCOPE"], row
    bad = subprocess.run([BIN, "config", "show", "--fs-scope", "everything"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode != 0
