"""The connect chain when multicast does not reach (issue 5): a phone on a routed guest subnet finds
nothing over mDNS but connects by address; a phone whose LAN link is cut connects through the
desktop's Tailscale name over a second link (a stand-in tailnet: a veth pair with CGNAT addresses and
a hosts-file name, only inside the lab). The desktop serves with --auth none for the lab's networks."""

from __future__ import annotations

import subprocess
import time

from lab_support import wait_http

OPEN = ["--auth", "none", "--allow-network", "198.18.0.0/15", "--allow-network", "100.64.0.0/30"]


def test_guest_subnet_manual_address_works_without_mdns(lab, desk, bridge_bin, timings):
    if "router" not in lab.hosts:
        lab.add_router("router", ("sw0", "sw1"))
    guest = lab.add_host("guest", switch="sw1")
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", *OPEN], label="serve-guest")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        found = guest.run([bridge_bin, "discover", "--timeout", "3"], timeout=15)
        assert found.returncode == 1, f"mDNS should not cross the router:\n{found.stdout}"
        assert "No _openagents._tcp services found" in found.stdout
        started = time.monotonic()
        r = guest.run([bridge_bin, "connect", f"{desk.ipv4}:9099", "--prompt", "from the guest network"], timeout=30)
        assert r.returncode == 0, r.stderr
        assert "You said: from the guest network" in r.stdout
        assert "via manual" in r.stderr, r.stderr
        timings.record("connect_manual_guest_subnet", (time.monotonic() - started) * 1000)
    finally:
        serve.stop()
        lab.remove_host("guest")


def test_tailscale_name_when_the_lan_is_cut(lab, desk, phone, bridge_bin, timings):
    # The stand-in tailnet: a point-to-point link desk <-> phone, and the MagicDNS name in phone's hosts file.
    subprocess.run(["ip", "link", "add", "tsd0", "netns", desk.netns, "type", "veth", "peer", "name", "tsp0", "netns", phone.netns], check=True)
    for host, dev, address in ((desk, "tsd0", "100.64.0.1/30"), (phone, "tsp0", "100.64.0.2/30")):
        subprocess.run(["ip", "-n", host.netns, "addr", "add", address, "dev", dev], check=True)
        subprocess.run(["ip", "-n", host.netns, "link", "set", dev, "up"], check=True)
    hosts = phone.dir / "hosts"
    hosts.write_text("127.0.0.1 localhost\n100.64.0.1 desk.tail-lab.ts.net\n")
    mounted = phone.run(["mount", "--bind", str(hosts), "/etc/hosts"], timeout=10)
    assert mounted.returncode == 0, mounted.stderr
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", *OPEN], label="serve-tailnet")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        phone.link_down()
        started = time.monotonic()
        r = phone.run([bridge_bin, "connect", "Desk", "--tailscale", "desk.tail-lab.ts.net", "--prompt", "over the tailnet"], timeout=40)
        assert r.returncode == 0, r.stderr
        assert "You said: over the tailnet" in r.stdout
        assert "via tailscale" in r.stderr, r.stderr
        timings.record("connect_tailscale_lan_cut", (time.monotonic() - started) * 1000)
    finally:
        serve.stop()
        phone.link_up()
        phone.run(["umount", "/etc/hosts"], timeout=10)
        subprocess.run(["ip", "-n", desk.netns, "link", "del", "tsd0"], check=False)


def test_same_lan_connects_through_mdns(lab, desk, phone, bridge_bin, timings):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", *OPEN], label="serve-lan")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        r = None
        deadline = time.time() + 15
        while time.time() < deadline:
            r = phone.run([bridge_bin, "connect", "Desk", "--prompt", "on the LAN"], timeout=30)
            if r.returncode == 0:
                break
            time.sleep(0.5)
        assert r is not None and r.returncode == 0, r.stderr if r else "never ran"
        assert "via mdns" in r.stderr and "You said: on the LAN" in r.stdout, r.stderr
        line = next(l for l in r.stderr.splitlines() if l.startswith("connected to"))
        timings.record("connect_mdns_lan", float(line.split(" in ")[1].split(" ms")[0]))
        print(f"\n[connect] {line}")
    finally:
        serve.stop()
