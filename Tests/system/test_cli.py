"""Operating the CLI (issue 6): JSON logs, shell completions, a taken port, config show, and the
systemd unit, on loopback."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from loopback import listening_port, reserved_port, wait_healthy

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")


def test_json_logs_are_one_object_per_line_and_never_hold_a_token():
    logs = Path(tempfile.mkdtemp(prefix="oa-cli-logs-"))
    with open(logs / "out", "w") as out_file, open(logs / "err", "w") as err_file:
        proc = subprocess.Popen([BIN, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", "0",
                                 "--state-dir", tempfile.mkdtemp(prefix="oa-cli-"), "--log-format", "json"],
                                stdout=out_file, stderr=err_file, text=True)
    try:
        port = listening_port(proc, log=logs / "err")  # the kernel's pick: no free port guessed by bind-and-close
        wait_healthy(port, proc)
        # Serving, and done starting up: the pairing banner (printed once listening) is out.
        deadline = time.monotonic() + 15
        while "Scan with the phone's camera" not in (logs / "out").read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    out, err = (logs / "out").read_text(), (logs / "err").read_text()
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert lines, "no log lines"
    assert all({"ts", "level", "label", "msg"} <= line.keys() for line in lines), lines[:3]
    assert any("serving wss://127.0.0.1:" in line["msg"] for line in lines)
    assert "oa_p_" not in err, "the pairing token reached the log"
    assert "Scan with the phone's camera" in out  # the QR banner goes to stdout


def test_a_taken_port_is_a_clear_error():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        r = subprocess.run([BIN, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", str(port),
                            "--state-dir", tempfile.mkdtemp(prefix="oa-cli-")], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert f"port {port}" in r.stderr and "--port" in r.stderr, r.stderr[-500:]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_know_the_commands(shell):
    r = subprocess.run([BIN, "--generate-completion-script", shell], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    for command in ("serve", "discover", "connect", "pair", "devices", "doctor", "config", "install-service"):
        assert command in r.stdout, f"{shell} completion lacks {command}"


def test_config_show_json_names_sources():
    env = dict(os.environ, OA_BRIDGE_PORT="9555", HOME=tempfile.mkdtemp(prefix="oa-home-"))
    env.pop("XDG_CONFIG_HOME", None)
    r = subprocess.run([BIN, "config", "show", "--json", "--name", "Flag"], capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["port"] == {"value": "9555", "source": "OA_BRIDGE_PORT"}
    assert shown["name"] == {"value": "Flag", "source": "--name"}
    assert shown["auth"]["source"] == "default"


def test_install_service_print_shows_the_unit():
    r = subprocess.run([BIN, "install-service", "--print", "--", "--name", "Studio"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "ExecStart=" in r.stdout and "serve --name Studio" in r.stdout and "[Install]" in r.stdout


def test_the_banner_shows_the_served_certificates_fingerprint_as_browsers_do():
    """Issue 29 item 4: the banner says what the phone's first screen will be and prints the SHA-256 fingerprint of
    the certificate the bridge actually serves (checked with openssl against the TLS handshake), in the form browsers
    show it: upper-case hex bytes separated by spaces."""
    state = tempfile.mkdtemp(prefix="oa-cli-")
    out_path = Path(tempfile.mkdtemp(prefix="oa-cli-out-")) / "out"
    # The banner's URL names the port, so serve is told one (held for it until it listens), not `--port 0`.
    holder = reserved_port()
    port = holder.getsockname()[1]
    with open(out_path, "w") as out_file:
        proc = subprocess.Popen([BIN, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", str(port),
                                 "--state-dir", state], stdout=out_file, stderr=subprocess.DEVNULL, text=True)
    try:
        wait_healthy(port, proc)
        holder.close()
        deadline = time.monotonic() + 15
        while "expires in" not in out_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        served = subprocess.run(
            ["sh", "-c", f"openssl s_client -connect 127.0.0.1:{port} </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256"],
            capture_output=True, text=True, timeout=30).stdout
    finally:
        holder.close()
        proc.terminate()
        proc.wait(timeout=15)
    text = out_path.read_text()
    assert "Your connection is not private" in text and "oa-bridge app" not in text, text[-1200:]
    assert re.search(rf"https://\S+:{port}/app\n", text), text[-1200:]
    hex_bytes = served.strip().split("=", 1)[1].split(":")
    assert len(hex_bytes) == 32, served
    # The text stands beside the QR code (issue 29 item 2): the words without the code's rows, the bytes in order.
    beside = " ".join(re.sub(r"^.*██(  |$)", "", line).strip() for line in text.splitlines())
    assert " ".join(hex_bytes) in beside, (served, text[-1200:])
