"""Issue 25 item 1: `serve` always starts or fails fast, and always stops, on a lab host with real D-Bus and
avahi-daemon. A taken port is the "already in use" error whatever the discovery setting, naming the holder;
SIGTERM and SIGINT end `serve` in every state: starting, waiting for avahi-daemon, waiting for a D-Bus that does
not answer (SIGSTOPped), serving, and shutting down with a client that does not go.

Bounds: the issue asks for 1 s to fail and 2 s to stop; the assertions allow STOP_BOUND_S (half a second more) on a
loaded 2-core CI machine running a debug build, and the measured times are printed (pytest -s) for the issue note.
Stopping while a killed agent is restarted and with a connection that sent nothing (raw TCP, TLS) are shown by
Tests/system/test_restart_stops.py."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

import lab as labmod

STOP_BOUND_S = 2.5
FAIL_BOUND_S = 1.5
PORT = 9099

HOLD_PORT = r"""
import socket, sys, time
# The serve of the test before may still be letting the port go: try for up to 15 s.
deadline = time.monotonic() + 15
while True:
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    # As every server does (serve too): the earlier tests' connections in TIME_WAIT must not keep the port.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("::", int(sys.argv[1])))
        break
    except OSError:
        s.close()
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
s.listen()
print("listening", flush=True)
time.sleep(120)
"""


def _serve(host: labmod.Host, bridge_bin: str, *extra: str) -> labmod.Proc:
    return host.spawn([bridge_bin, "serve", "--name", "Desk", "--auth", "none", "--port", str(PORT),
                       "--allow-network", "198.18.0.0/15", *extra], label="serve-lifecycle")


def _wait_log(proc: labmod.Proc, text: str, timeout: float) -> None:
    """Waits for `text` in serve's log (stderr; Proc.wait_for_line reads stdout)."""
    deadline = time.monotonic() + timeout
    while text not in proc.stderr():
        assert proc.poll() is None, f"serve exited waiting for {text!r}\n{proc.describe()}"
        assert time.monotonic() < deadline, f"no {text!r} in {timeout} s\n{proc.describe()}"
        time.sleep(0.05)


def _wait_serving(proc: labmod.Proc, timeout: float = 30.0) -> None:
    _wait_log(proc, "serving ws", timeout)


def _stop_time(proc: labmod.Proc, sig: int = signal.SIGTERM, bound: float = STOP_BOUND_S) -> float:
    started = time.monotonic()
    proc.signal(sig)
    code = proc.wait(timeout=bound + 10)
    took = time.monotonic() - started
    assert code is not None, f"serve ignored signal {sig} for {bound + 10} s\n{proc.describe()}"
    assert took <= bound, f"serve took {took:.2f} s to stop after signal {sig}\n{proc.describe()}"
    return took


@pytest.mark.parametrize("discovery", ["avahi", "off"])
def test_a_taken_port_fails_fast_naming_the_holder(desk, bridge_bin, discovery):
    holder = desk.spawn(["python3", "-c", HOLD_PORT, str(PORT)], label="port-holder")
    try:
        assert holder.wait_for_line(lambda l: "listening" in l, timeout=20), holder.describe()
        started = time.monotonic()
        proc = _serve(desk, bridge_bin, "--discovery", discovery)
        code = proc.wait(timeout=FAIL_BOUND_S + 20)
        took = time.monotonic() - started
        print(f"\n[serve-lifecycle] port taken, discovery {discovery}: exit {code} after {took:.2f} s")
        assert code not in (None, 0), proc.describe()
        assert took <= FAIL_BOUND_S, f"{took:.2f} s\n{proc.describe()}"
        err = proc.stderr()
        assert f"port {PORT}" in err and "already in use" in err, err[-800:]
        assert "python3" in err, f"the holder is not named\n{err[-800:]}"
    finally:
        holder.kill()


def test_a_second_serve_names_the_first(desk, bridge_bin):
    first = _serve(desk, bridge_bin)
    try:
        _wait_serving(first)
        second = _serve(desk, bridge_bin)
        code = second.wait(timeout=FAIL_BOUND_S + 20)
        assert code not in (None, 0), second.describe()
        err = second.stderr()
        assert "another oa-bridge" in err and "oa-bridge pair" in err, err[-800:]
    finally:
        first.stop()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stops_while_serving(desk, bridge_bin, sig):
    proc = _serve(desk, bridge_bin)
    _wait_serving(proc)
    _wait_log(proc, "advertising 'Desk'", 15)
    took = _stop_time(proc, sig)
    print(f"\n[serve-lifecycle] serving, advertised: stopped {took:.2f} s after signal {sig}")
    assert proc.returncode == 0, proc.describe()


def test_stops_while_starting(desk, bridge_bin):
    proc = _serve(desk, bridge_bin)
    time.sleep(0.05)  # inside start-up: before listening, in the TLS identity or the token store
    took = _stop_time(proc)
    print(f"\n[serve-lifecycle] starting: stopped {took:.2f} s after SIGTERM")


def test_stops_while_avahi_daemon_is_away(desk, bridge_bin):
    desk.stop_avahi()
    try:
        proc = _serve(desk, bridge_bin)
        _wait_serving(proc)
        _wait_log(proc, "discovery is off", 15)
        took = _stop_time(proc)
        print(f"\n[serve-lifecycle] avahi-daemon stopped: stopped {took:.2f} s after SIGTERM")
    finally:
        desk.start_avahi()


def test_stops_while_dbus_does_not_answer(desk, bridge_bin):
    dbus = desk.daemon_pids()["dbus"]
    assert dbus, desk.logs()
    os.kill(dbus, signal.SIGSTOP)
    try:
        proc = _serve(desk, bridge_bin)
        _wait_serving(proc)
        time.sleep(1.0)  # the Avahi client is now inside its D-Bus handshake, which gets no answer
        took = _stop_time(proc)
        print(f"\n[serve-lifecycle] D-Bus stopped (SIGSTOP): stopped {took:.2f} s after SIGTERM")
    finally:
        os.kill(dbus, signal.SIGCONT)


def test_stops_while_shutting_down_with_a_client_that_stays(desk, bridge_bin):
    proc = _serve(desk, bridge_bin)
    _wait_serving(proc)
    # A client that completes the WebSocket upgrade and then never reads or answers the bridge's close.
    client = desk.spawn(["python3", "-c", STUBBORN_CLIENT, str(PORT)], label="stubborn-client")
    try:
        assert client.wait_for_line(lambda l: "upgraded" in l, timeout=10), client.describe()
        took = _stop_time(proc)
        print(f"\n[serve-lifecycle] a client that ignores the close: stopped {took:.2f} s after SIGTERM")
    finally:
        client.kill()


def test_a_second_signal_ends_a_shutdown_at_once(desk, bridge_bin):
    proc = _serve(desk, bridge_bin)
    _wait_serving(proc)
    client = desk.spawn(["python3", "-c", STUBBORN_CLIENT, str(PORT)], label="stubborn-client")
    try:
        assert client.wait_for_line(lambda l: "upgraded" in l, timeout=10), client.describe()
        proc.signal(signal.SIGTERM)
        time.sleep(0.2)
        took = _stop_time(proc, signal.SIGINT, bound=1.5)
        print(f"\n[serve-lifecycle] second signal during shutdown: stopped {took:.2f} s after it")
    finally:
        client.kill()


STUBBORN_CLIENT = r"""
import base64, os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
assert b" 101 " in head.split(b"\r\n")[0], head
print("upgraded", flush=True)
time.sleep(120)  # never reads again, never closes
"""
