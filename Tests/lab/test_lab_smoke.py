"""The lab itself works: Avahi's own tools see each other across lab hosts, and hosts die cleanly."""

from __future__ import annotations

import os
import signal
import time

import lab as labmod
from lab_support import SERVICE_TYPE, wait_resolved, wait_service_gone


def test_hosts_have_addresses_and_names(desk, phone):
    for h in (desk, phone):
        out = h.run(["ip", "-o", "addr", "show", "dev", "eth0"], timeout=5).stdout
        assert f"inet {h.ipv4}/24" in out, out
        assert f"inet6 {h.ipv6}/64" in out, out
        assert "inet6 fe80::" in out, f"no link-local address on {h.name}:\n{out}"
        assert h.run(["hostname"], timeout=5).stdout.strip() == h.name
        # Each host has its own /run with its own bus and avahi socket.
        assert h.run(["test", "-S", "/run/dbus/system_bus_socket"], timeout=5).returncode == 0, h.logs()
        assert h.avahi_running(), h.logs()
    # The hosts talk to each other over the bridge (TCP over the lab LAN, no multicast needed).
    srv = desk.spawn(["python3", "-c",
                      "import socket;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
                      "s.bind(('0.0.0.0',9199));s.listen();c,_=s.accept();c.sendall(b'hi');c.close()"],
                     label="tcp-listen")
    cp = phone.run(["python3", "-c",
                    "import socket,time,sys\n"
                    "for _ in range(100):\n"
                    "  try:\n"
                    f"    c=socket.create_connection(('{desk.ipv4}',9199),timeout=2);break\n"
                    "  except OSError: time.sleep(0.05)\n"
                    "sys.stdout.write(c.recv(10).decode())"], timeout=10)
    assert cp.stdout == "hi", f"{cp.stdout!r} {cp.stderr}\n{srv.describe()}"
    assert srv.wait(5) == 0


def test_publish_browse_resolve_and_withdraw(desk, phone):
    pub = desk.spawn(["avahi-publish", "-s", "Desk", SERVICE_TYPE, "9099", "txtvers=1"], label="avahi-publish")
    recs = wait_resolved(phone, "Desk")
    v4 = [r for r in recs if r["protocol"] == "IPv4"]
    assert v4, recs
    r = v4[0]
    assert r["interface"] == "eth0"
    assert r["type"] == SERVICE_TYPE and r["domain"] == "local"
    assert r["host"] == "desk.local"
    assert r["address"] == desk.ipv4
    assert r["port"] == 9099
    assert r["txt"] == ["txtvers=1"]
    v6 = [r for r in recs if r["protocol"] == "IPv6"]
    assert v6 and (v6[0]["address"] == desk.ipv6 or v6[0]["address"].startswith("fe80::")), recs

    pub.kill()
    assert pub.wait(3) is not None
    left = wait_service_gone(phone, timeout=5.0)
    assert not left, f"phone still sees {left} 5 s after the publisher was killed\n{desk.logs()}\n{phone.logs()}"


def test_kill_host_leaves_no_processes(lab, extra_host):
    h = extra_host("tmphost")
    pids = h.daemon_pids()
    assert pids["dbus"] and pids["avahi"], f"daemon pids not found: {pids}\n{h.logs()}"
    sleeper = h.spawn(["sleep", "300"], label="sleeper")
    assert sleeper.pid is not None
    pidns = h.pidns
    alive_before = labmod.pids_in_pidns_of(pidns)
    for p in (pids["dbus"], pids["avahi"], sleeper.pid, h.init_pid):
        assert p in alive_before, (p, alive_before)

    h.kill()

    for what, p in (("dbus-daemon", pids["dbus"]), ("avahi-daemon", pids["avahi"]), ("sleep", sleeper.pid),
                    ("init", h.init_pid)):
        assert not os.path.exists(f"/proc/{p}"), f"{what} (pid {p}) survived host.kill()"
    assert labmod.pids_in_pidns_of(pidns) == []
    assert sleeper.poll() is not None


def test_restart_avahi_and_link(desk, phone):
    pub = desk.spawn(["avahi-publish", "-s", "Restartme", SERVICE_TYPE, "9098"], label="avahi-publish")
    wait_resolved(phone, "Restartme")
    old = desk.daemon_pids()["avahi"]
    desk.restart_avahi()
    new = desk.daemon_pids()["avahi"]
    assert new and new != old and not os.path.exists(f"/proc/{old}")
    # avahi-publish exits (or reconnects) when the daemon goes away; the phone forgets the service either way.
    pub.stop(1.0)
    assert not wait_service_gone(phone, timeout=6.0)

    desk.link_down()
    try:
        cp = phone.run(["python3", "-c",
                        f"import socket;socket.create_connection(('{desk.ipv4}',9),timeout=1)"], timeout=5)
        assert cp.returncode != 0
        assert "refused" not in cp.stderr.lower(), "desk answered while its link was down"
    finally:
        desk.link_up()
    cp = phone.run(["python3", "-c",
                    "import socket,time\n"
                    "for _ in range(40):\n"
                    "  try:\n"
                    f"    socket.create_connection(('{desk.ipv4}',9),timeout=1)\n"
                    "  except ConnectionRefusedError: print('refused'); break\n"
                    "  except OSError: time.sleep(0.05)\n"], timeout=10)
    assert cp.stdout.strip() == "refused", f"desk unreachable after link_up: {cp.stdout} {cp.stderr}"


def test_routed_guest_network(lab, desk):
    """A host on the routed guest subnet reaches desk by IP, but mDNS does not cross the router."""
    if "router" not in lab.hosts:
        lab.add_router("router", ("sw0", "sw1"))
    guest = lab.add_host("guest", switch="sw1")
    try:
        assert guest.ipv4.startswith("198.18.1.")
        pub = desk.spawn(["avahi-publish", "-s", "Routed", SERVICE_TYPE, "9097"], label="avahi-publish")
        cp = guest.run(["python3", "-c",
                        "import socket,time\n"
                        "for _ in range(60):\n"
                        "  try:\n"
                        f"    socket.create_connection(('{desk.ipv4}',9),timeout=1)\n"
                        "  except ConnectionRefusedError: print('refused'); break\n"
                        "  except OSError: time.sleep(0.05)\n"], timeout=10)
        assert cp.stdout.strip() == "refused", f"guest cannot reach desk through the router: {cp.stdout} {cp.stderr}"
        time.sleep(1.5)
        cp = guest.run(["avahi-browse", "-pt", SERVICE_TYPE], timeout=8)
        assert "Routed" not in cp.stdout, f"mDNS crossed the router:\n{cp.stdout}"
        pub.stop(2.0)
    finally:
        lab.remove_host("guest")
        lab.remove_host("router")
