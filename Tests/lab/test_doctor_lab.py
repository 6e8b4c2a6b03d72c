"""`doctor` findings (issue 17 item 4), in the LAN lab.

Each test breaks one thing on a lab host and checks doctor names it with its fix:
1. an interface without the MULTICAST flag (`ip link set dev eth0 multicast off`);
2. IPv6 disabled on the interface (sysctl);
3. a bridge listening on loopback only (`serve --host 127.0.0.1`);
4. a bridge that mDNS shows but that does not answer: nothing listens on its port, or its address has no ARP
   neighbour (the service was announced for an address that is not on this link, as a router's reflector does);
5. the self-check: a short-lived test service published through the daemon and browsed on the same host; it fails
   when the daemon is stopped.
Every host setting changed is restored in a finally block (hosts are shared across lab files); waits are bounded.
"""

from __future__ import annotations

import json

from lab_support import SERVICE_TYPE, wait_http, wait_resolved


def show(cp) -> str:
    return f"exit {cp.returncode}\n--- stdout:\n{cp.stdout}\n--- stderr:\n{cp.stderr}"


def doctor(host, bridge_bin: str, *extra: str) -> tuple[list[dict], object]:
    cp = host.run([bridge_bin, "doctor", "--json", *extra], timeout=90)
    start = cp.stdout.find("[")
    assert start >= 0, "doctor printed no JSON\n" + show(cp)
    return json.loads(cp.stdout[start:]), cp


def named(checks: list[dict], prefix: str) -> list[dict]:
    return [c for c in checks if c["name"].startswith(prefix)]


def test_interface_without_multicast(lab, extra_host, bridge_bin):
    host = extra_host("nomcast")
    try:
        host.run(["ip", "link", "set", "dev", "eth0", "multicast", "off"], timeout=5, check=True)
        checks, cp = doctor(host, bridge_bin)
        found = [c for c in named(checks, "multicast") if c["status"] != "ok" and "eth0" in c["detail"]]
        assert found, "no multicast finding naming eth0\n" + show(cp)
        assert "ip link set dev eth0 multicast on" in (found[0].get("fix") or ""), found[0]
    finally:
        host.run(["ip", "link", "set", "dev", "eth0", "multicast", "on"], timeout=5)


def test_ipv6_disabled(lab, extra_host, bridge_bin):
    host = extra_host("nosix")
    try:
        host.run(["sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1"], timeout=5, check=True)
        checks, cp = doctor(host, bridge_bin)
        found = [c for c in named(checks, "IPv6") if c["status"] != "ok"]
        assert found, "no IPv6 finding\n" + show(cp)
        assert "eth0" in found[0]["detail"], found[0]
        assert "disable_ipv6=0" in (found[0].get("fix") or ""), found[0]
    finally:
        host.run(["sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=0"], timeout=5)
        # Addresses given with nodad come back only if re-added; the lab's global address is static.
        host.run(["ip", "-6", "addr", "add", f"{host.ipv6}/64", "dev", "eth0", "nodad"], timeout=5)


def test_ipv6_enabled_is_ok(lab, desk, bridge_bin):
    checks, cp = doctor(desk, bridge_bin)
    found = named(checks, "IPv6")
    assert found and all(c["status"] == "ok" for c in found), show(cp)


def test_bridge_listening_on_loopback_only(lab, desk, bridge_bin):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Loopdesk", "--host", "127.0.0.1"], label="serve-loopback-only")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        checks, cp = doctor(desk, bridge_bin)
        found = [c for c in named(checks, "listening") if c["status"] != "ok"]
        assert found, "no finding about a loopback-only listener\n" + show(cp)
        assert "127.0.0.1" in found[0]["detail"], found[0]
        assert "--host" in (found[0].get("fix") or ""), found[0]
    finally:
        serve.stop()


def test_bridge_listening_on_every_address_is_ok(lab, desk, bridge_bin):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Alldesk"], label="serve-all-addresses")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        checks, cp = doctor(desk, bridge_bin)
        found = named(checks, "listening")
        assert found and all(c["status"] == "ok" for c in found), show(cp)
    finally:
        serve.stop()


def test_service_announced_but_nothing_answers(lab, desk, phone, bridge_bin):
    # Announced by avahi-publish on the desk, port 9011 where nothing listens: TCP refused.
    pub = desk.spawn(["avahi-publish", "-s", "Deafdesk", SERVICE_TYPE, "9011"], label="avahi-publish-deaf")
    try:
        wait_resolved(phone, "Deafdesk", timeout=10, guard=pub)
        checks, cp = doctor(phone, bridge_bin)
        found = [c for c in named(checks, "reach Deafdesk") if c["status"] != "ok"]
        assert found, "no reachability finding for Deafdesk\n" + show(cp)
        assert desk.ipv4 in found[0]["detail"] and "9011" in found[0]["detail"], found[0]
        assert found[0].get("fix"), found[0]
    finally:
        pub.stop()


def test_service_reflected_for_an_address_with_no_neighbour(lab, desk, phone, bridge_bin):
    # What a router's mDNS reflector does: a service whose address is not on this link. ARP gets no answer.
    ghost_ip = "198.18.0.250"
    addr = desk.spawn(["avahi-publish", "-a", "-R", "ghost.local", ghost_ip], label="avahi-publish-ghost-addr")
    pub = desk.spawn(["avahi-publish", "-s", "-H", "ghost.local", "Ghostdesk", SERVICE_TYPE, "9099"],
                     label="avahi-publish-ghost")
    try:
        wait_resolved(phone, "Ghostdesk", timeout=10, guard=pub)
        checks, cp = doctor(phone, bridge_bin)
        found = [c for c in named(checks, "reach Ghostdesk") if c["status"] != "ok"]
        assert found, "no reachability finding for Ghostdesk\n" + show(cp)
        assert ghost_ip in found[0]["detail"], found[0]
        assert "neighbour" in found[0]["detail"], found[0]
        assert "reflect" in found[0]["detail"] or "reflect" in (found[0].get("fix") or ""), found[0]
    finally:
        pub.stop()
        addr.stop()


def test_self_check_publishes_and_browses_through_the_daemon(lab, desk, bridge_bin):
    checks, cp = doctor(desk, bridge_bin)
    found = named(checks, "self-check")
    assert found, "no self-check row\n" + show(cp)
    assert found[0]["status"] == "ok", found[0]
    assert "published" in found[0]["detail"], found[0]


def test_self_check_fails_without_the_daemon(lab, extra_host, bridge_bin):
    host = extra_host("nodaemon")
    try:
        host.stop_avahi()
        checks, cp = doctor(host, bridge_bin)
        found = named(checks, "self-check")
        assert found and found[0]["status"] == "fail", show(cp)
        assert found[0].get("fix"), found[0]
    finally:
        host.start_avahi()
