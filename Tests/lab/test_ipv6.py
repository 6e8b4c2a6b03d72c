"""IPv6 end to end (issue 17 item 2), in the LAN lab.

The desk serves on its default host (dual-stack `::`), auth off for the lab's networks. The phone connects
1. by the desk's global (ULA) IPv6 address, `[fd00:6f61::N]:9099`;
2. by the desk's link-local address with the zone, `[fe80::…%eth0]:9099`;
3. with IPv4 taken off its own interface, through IPv6 only.
Every wait is bounded.
"""

from __future__ import annotations

import re

from lab_support import wait_http

OPEN = ["--auth", "none", "--allow-network", "198.18.0.0/15", "--allow-network", "fd00:6f60::/30",
        "--allow-network", "fe80::/10"]
CONNECTED_RE = re.compile(r"^connected to (\S+) via (\w+) in (\d+) ms", re.M)


def show(cp) -> str:
    return f"exit {cp.returncode}\n--- stdout:\n{cp.stdout}\n--- stderr:\n{cp.stderr}"


def link_local(host) -> str:
    cp = host.run(["ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link"], timeout=5)
    m = re.search(r"inet6 (fe80::[0-9a-f:]+)/64", cp.stdout)
    assert m, f"no link-local address on {host.name} eth0:\n{cp.stdout}{cp.stderr}"
    return m.group(1)


def start_serve(desk, bridge_bin: str, label: str):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", *OPEN], label=label)
    wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
    return serve


def connect(phone, bridge_bin: str, address: str):
    cp = phone.run([bridge_bin, "connect", address, "--prompt", "hi", "--yes"], timeout=40)
    assert cp.returncode == 0, show(cp)
    m = CONNECTED_RE.search(cp.stderr)
    assert m, "no 'connected to' line\n" + show(cp)
    return m.group(1)


def test_connect_over_global_and_link_local_ipv6(lab, desk, phone, bridge_bin):
    serve = start_serve(desk, bridge_bin, "serve-ipv6")
    try:
        url = connect(phone, bridge_bin, f"[{desk.ipv6}]:9099")
        assert url == f"ws://[{desk.ipv6}]:9099/", url
        ll = link_local(desk)
        url = connect(phone, bridge_bin, f"[{ll}%eth0]:9099")
        assert url.startswith(f"ws://[{ll}%25eth0]:9099"), url
    finally:
        serve.stop()


def test_a_phone_without_ipv4_still_connects_through_ipv6(lab, desk, phone, bridge_bin):
    serve = start_serve(desk, bridge_bin, "serve-ipv6-only-phone")
    try:
        phone.run(["ip", "-4", "addr", "flush", "dev", "eth0"], timeout=5)
        v4 = phone.run(["ip", "-4", "-o", "addr", "show", "dev", "eth0"], timeout=5)
        assert "inet " not in v4.stdout, v4.stdout
        url = connect(phone, bridge_bin, f"[{desk.ipv6}]:9099")
        assert url == f"ws://[{desk.ipv6}]:9099/", url
    finally:
        phone.run(["ip", "-4", "addr", "add", f"{phone.ipv4}/24", "dev", "eth0"], timeout=5)
        phone._add_routes()  # the lab's route to the other subnets went with the address
        serve.stop()
