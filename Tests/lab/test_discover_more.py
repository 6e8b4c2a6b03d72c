"""`discover` beyond avahi-browse (issue 17 item 3), in the LAN lab.

1. `--all` lists every service type on the network (the `_services._dns-sd._udp` meta-query): the bridge's
   `_openagents._tcp` from the desk and `_oalabother._tcp` published by avahi-publish on another host, both backends.
2. `--interface`: browsing on eth0 finds the bridge, on lo nothing, an unknown name is exit 2 with the fix;
   `serve --interface lo` is not announced on the LAN, `serve --interface eth0` is.
3. `--resolve desk.local` gives the desk's IPv4 and IPv6 addresses, both backends; an unknown host is exit 1.
4. `--watch` shows a TXT change as a diff: python-zeroconf on a host without avahi updates its TXT in place.
5. Two hosts publishing one instance name: `Twin` and Avahi's `Twin #2`, explained with the fix.
6. A phone whose IPv4 address is removed still finds the desk over mDNS and connects through IPv6.
Every wait is bounded; every host setting changed is restored in a finally block.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from lab_support import SERVICE_TYPE, wait_http, wait_resolved

BACKENDS = ["avahi", "dnssd"]
OTHER_TYPE = "_oalabother._tcp"
OPEN = ["--auth", "none", "--allow-network", "198.18.0.0/15", "--allow-network", "fd00:6f60::/30",
        "--allow-network", "fe80::/10"]


def show(cp) -> str:
    return f"exit {cp.returncode}\n--- stdout:\n{cp.stdout}\n--- stderr:\n{cp.stderr}"


def records(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def start_serve(host, bridge_bin: str, *extra: str, label: str = "serve", name: str = "Desk"):
    serve = host.spawn([bridge_bin, "serve", "--name", name, *OPEN, *extra], label=label)
    wait_http(host, "http://127.0.0.1:9099/api/health", guard=serve)
    return serve


@pytest.mark.parametrize("backend", BACKENDS)
def test_all_lists_the_bridge_type_and_another_type(lab, desk, phone, extra_host, bridge_bin, backend):
    other = extra_host("otherpub")
    serve = start_serve(desk, bridge_bin, label=f"serve-all-{backend}")
    pub = other.spawn(["avahi-publish", "-s", "Other thing", OTHER_TYPE, "4242"], label="avahi-publish-other")
    try:
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        wait_resolved(phone, "Other thing", timeout=10, stype=OTHER_TYPE, guard=pub)
        cp = phone.run([bridge_bin, "discover", "--all", "--json", "--timeout", "6", "--backend", backend], timeout=30)
        assert cp.returncode == 0, show(cp)
        types = {r.get("type") for r in records(cp.stdout) if r.get("event") == "type_added"}
        assert SERVICE_TYPE in types, show(cp)
        assert OTHER_TYPE in types, show(cp)
        # The table says the same for people, and that mDNS works.
        cp = phone.run([bridge_bin, "discover", "--all", "--timeout", "6", "--backend", backend], timeout=30)
        assert cp.returncode == 0, show(cp)
        assert OTHER_TYPE in cp.stdout and SERVICE_TYPE in cp.stdout, show(cp)
    finally:
        pub.stop()
        serve.stop()


def test_all_without_our_type_says_mdns_works_but_the_bridge_is_missing(lab, phone, extra_host, bridge_bin):
    other = extra_host("otherpub2")
    pub = other.spawn(["avahi-publish", "-s", "Only other", OTHER_TYPE, "4243"], label="avahi-publish-only-other")
    try:
        wait_resolved(phone, "Only other", timeout=10, stype=OTHER_TYPE, guard=pub)
        cp = phone.run([bridge_bin, "discover", "--all", "--timeout", "6"], timeout=30)
        assert OTHER_TYPE in cp.stdout, show(cp)
        assert "mDNS works" in cp.stdout and SERVICE_TYPE in cp.stdout, show(cp)
    finally:
        pub.stop()


def test_interface_restricts_browsing(lab, desk, phone, bridge_bin):
    serve = start_serve(desk, bridge_bin, label="serve-iface-browse")
    try:
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        cp = phone.run([bridge_bin, "discover", "--json", "--interface", "eth0", "--timeout", "6"], timeout=30)
        added = [r for r in records(cp.stdout) if r.get("event") == "added" and r.get("name") == "Desk"]
        assert cp.returncode == 0 and added, show(cp)
        assert all(r.get("interfaces") == ["eth0"] for r in added), show(cp)
        # avahi-daemon in the lab uses eth0 only: on lo there is nothing to find.
        cp = phone.run([bridge_bin, "discover", "--json", "--interface", "lo", "--timeout", "3"], timeout=30)
        assert cp.returncode == 1, show(cp)
        assert not [r for r in records(cp.stdout) if r.get("name") == "Desk"], show(cp)
        cp = phone.run([bridge_bin, "discover", "--interface", "nosuch0", "--timeout", "3"], timeout=30)
        assert cp.returncode == 2, show(cp)
        assert "nosuch0" in cp.stderr and "ip link" in cp.stderr, show(cp)
    finally:
        serve.stop()


def test_serve_interface_restricts_advertising(lab, desk, phone, bridge_bin):
    serve = start_serve(desk, bridge_bin, "--interface", "lo", label="serve-iface-lo", name="Loonly")
    try:
        cp = phone.run([bridge_bin, "discover", "--json", "--timeout", "4", "--wait"], timeout=30)
        assert not [r for r in records(cp.stdout) if r.get("name") == "Loonly"], \
            "a bridge announced on lo only was seen on the LAN\n" + show(cp)
    finally:
        serve.stop()
    serve = start_serve(desk, bridge_bin, "--interface", "eth0", label="serve-iface-eth0", name="Ethonly")
    try:
        wait_resolved(phone, "Ethonly", timeout=10, guard=serve)
    finally:
        serve.stop()


@pytest.mark.parametrize("backend", BACKENDS)
def test_resolve_a_host_name(lab, desk, phone, bridge_bin, backend):
    cp = phone.run([bridge_bin, "discover", "--resolve", "desk.local", "--json", "--timeout", "6",
                    "--backend", backend], timeout=30)
    assert cp.returncode == 0, show(cp)
    found = [r for r in records(cp.stdout) if r.get("event") == "resolved"]
    assert found, show(cp)
    ips = {a["ip"] for a in found[0]["addresses"]}
    assert desk.ipv4 in ips, show(cp)
    assert desk.ipv6 in ips or any(ip.startswith("fe80") for ip in ips), show(cp)
    # The text form is avahi-resolve's: name, tab, address.
    cp = phone.run([bridge_bin, "discover", "--resolve", "desk", "--timeout", "6", "--backend", backend], timeout=30)
    assert cp.returncode == 0 and f"desk.local\t{desk.ipv4}" in cp.stdout, show(cp)
    cp = phone.run([bridge_bin, "discover", "--resolve", "nosuchhost.local", "--timeout", "2",
                    "--backend", backend], timeout=30)
    assert cp.returncode == 1, show(cp)
    assert "nosuchhost.local" in cp.stderr, show(cp)


ZEROCONF_SCRIPT = r"""
import signal, socket, sys, time
from pathlib import Path
from zeroconf import IPVersion, ServiceInfo, Zeroconf
ip, go, name = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
zc = Zeroconf(interfaces=[ip], ip_version=IPVersion.V4Only)
def bye(*_):
    zc.unregister_all_services()  # goodbye packets, so no other test sees a stale cache entry
    zc.close()
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
def info(props):
    return ServiceInfo("_openagents._tcp.local.", f"{name}._openagents._tcp.local.", addresses=[socket.inet_aton(ip)],
                       port=9099, properties=props, server=f"{name.lower()}.local.")
zc.register_service(info({"v": "1", "mode": "a", "keep": "same"}))
print("registered", flush=True)
deadline = time.monotonic() + 30
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
zc.update_service(info({"v": "2", "keep": "same", "new": "x"}))
print("updated", flush=True)
time.sleep(min(20, max(0, deadline - time.monotonic())))
bye()
"""


def wait_for(predicate, timeout: float, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def test_watch_shows_a_txt_change_as_a_diff(lab, phone, extra_host, bridge_bin):
    pytest.importorskip("zeroconf")
    txt = extra_host("txtdesk", avahi=False)
    script = txt.dir / "zc_publish.py"
    script.write_text(ZEROCONF_SCRIPT)
    go = txt.dir / "go"
    pub = txt.spawn([sys.executable, str(script), txt.ipv4, str(go), "Txtdesk"], label="zeroconf-publish")
    watch = None
    try:
        wait_resolved(phone, "Txtdesk", timeout=15, guard=pub)
        watch = phone.spawn([bridge_bin, "discover", "--watch", "--json"], label="discover-watch-txt")

        def seen(event):
            return [r for r in records(watch.stdout()) if r.get("event") == event and r.get("name") == "Txtdesk"]

        assert wait_for(lambda: seen("added"), 10), watch.describe()
        # Change the TXT once the browse has settled (an update sent in the first few hundred ms of a browse was
        # seen to go unreported in one of several runs; the diff is what is tested here).
        assert wait_for(lambda: any(r.get("event") == "all_for_now" for r in records(watch.stdout())), 10), watch.describe()
        go.write_text("go")
        updates = wait_for(lambda: [r for r in seen("updated") if r.get("txt_diff")], 10)
        assert updates, "no updated record with a txt_diff\n" + watch.describe()
        diff = updates[-1]["txt_diff"]
        assert diff["added"] == {"new": "x"}, diff
        assert diff["removed"] == {"mode": "a"}, diff
        assert diff["changed"] == {"v": {"old": "1", "new": "2"}}, diff
        assert "~ v: 1 -> 2" in updates[-1].get("changes", []), updates[-1]
    finally:
        if watch is not None:
            watch.stop()
        pub.stop()


def test_watch_text_shows_the_diff_lines(lab, phone, extra_host, bridge_bin):
    pytest.importorskip("zeroconf")
    txt = extra_host("txtdesk2", avahi=False)
    script = txt.dir / "zc_publish.py"
    script.write_text(ZEROCONF_SCRIPT)
    go = txt.dir / "go"
    pub = txt.spawn([sys.executable, str(script), txt.ipv4, str(go), "Txtlines"], label="zeroconf-publish-text")
    watch = None
    try:
        wait_resolved(phone, "Txtlines", timeout=15, guard=pub)
        watch = phone.spawn([bridge_bin, "discover", "--watch"], label="discover-watch-text")
        assert wait_for(lambda: "added" in watch.stdout() and "Txtlines" in watch.stdout(), 10), watch.describe()
        assert wait_for(lambda: "the daemon has reported" in watch.stdout(), 10), watch.describe()
        go.write_text("go")
        assert wait_for(lambda: "~ v: 1 -> 2" in watch.stdout(), 10), watch.describe()
        out = watch.stdout()
        assert "+ new=x" in out and "- mode=a" in out, watch.describe()
    finally:
        if watch is not None:
            watch.stop()
        pub.stop()


def test_two_hosts_claiming_one_name_are_explained(lab, desk, phone, extra_host, bridge_bin):
    twin = extra_host("twin")
    first = desk.spawn(["avahi-publish", "-s", "Twin", SERVICE_TYPE, "9099"], label="avahi-publish-twin-1")
    second = None
    try:
        wait_resolved(phone, "Twin", timeout=10, guard=first)
        second = twin.spawn(["avahi-publish", "-s", "Twin", SERVICE_TYPE, "9099"], label="avahi-publish-twin-2")
        wait_resolved(phone, "Twin #2", timeout=15, guard=second)
        cp = phone.run([bridge_bin, "discover", "--json", "--timeout", "6"], timeout=30)
        conflicts = [r for r in records(cp.stdout) if r.get("event") == "conflict"]
        assert conflicts, "no conflict reported\n" + show(cp)
        c = conflicts[0]
        assert c["kind"] == "renamed_after_collision", c
        assert set(c["names"]) == {"Twin", "Twin #2"}, c
        assert "twin.local" in c["message"] and "desk.local" in c["message"], c
        assert "--name" in c["fix"], c
        cp = phone.run([bridge_bin, "discover", "--timeout", "6"], timeout=30)
        assert "conflict:" in cp.stdout and "fix:" in cp.stdout, show(cp)
    finally:
        if second is not None:
            second.stop()
        first.stop()


def test_a_phone_without_ipv4_finds_the_desk_over_mdns_and_connects_through_ipv6(lab, desk, phone, bridge_bin):
    serve = start_serve(desk, bridge_bin, label="serve-v6-only-phone-mdns")
    try:
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        phone.run(["ip", "-4", "addr", "flush", "dev", "eth0"], timeout=5)
        v4 = phone.run(["ip", "-4", "-o", "addr", "show", "dev", "eth0"], timeout=5)
        assert "inet " not in v4.stdout, v4.stdout
        cp = phone.run([bridge_bin, "connect", "--prompt", "hi", "--yes"], timeout=60)
        assert cp.returncode == 0, show(cp)
        m = re.search(r"^connected to (\S+) via (\w+)", cp.stderr, re.M)
        assert m, "no 'connected to' line\n" + show(cp)
        assert m.group(1).startswith("ws://["), f"connected over {m.group(1)}, not IPv6\n" + show(cp)
    finally:
        phone.run(["ip", "-4", "addr", "add", f"{phone.ipv4}/24", "dev", "eth0"], timeout=5)
        phone._add_routes()
        serve.stop()
