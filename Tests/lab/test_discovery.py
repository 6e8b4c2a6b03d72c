"""Integration tests of the real oa-bridge binary on the lab LAN: desk serves, phone discovers and connects.

The binary comes from $OA_BRIDGE_BIN (default <repo>/.build/debug/oa-bridge). Contract under test (from the lead):

  oa-bridge serve --name NAME [--port 9099] [--host 0.0.0.0] [--backend avahi|dnssd]
  oa-bridge discover [--type T] [--timeout S] [--watch] [--json] [--backend avahi|dnssd] [--probe]

Timings are printed (pytest -s) and written to <lab dir>/timings.json.
"""

from __future__ import annotations

import ipaddress
import json
import re
import sys
import time

import pytest

import lab as labmod
from lab_support import HERE, SERVICE_TYPE, wait_resolved

BACKENDS = ["avahi", "dnssd"]
TXT_KEYS = {"txtvers", "proto", "id", "auth", "path"}
WS_PROBE = HERE / "ws_probe.py"
PROTOCOL_VERSION = "0.2.2"


# -- fixtures and helpers ---------------------------------------------------------------------------------------

@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


_SERVE_FLAG: dict[str, str] = {}


@pytest.fixture(scope="session")
def serve_help(bridge_bin, lab) -> str:
    h = lab.hosts.get("phone") or lab.add_host("phone")
    cp = h.run([bridge_bin, "serve", "--help"], timeout=10)
    return cp.stdout + cp.stderr


@pytest.fixture(autouse=True)
def _serve_backend_flag(request):
    """The contract spells the backend choice of `serve` --backend. If the binary only knows --discovery (same
    values), the behaviour tests use it so they still say something; test_contract_serve_backend_flag fails
    on its own to report the mismatch."""
    if "bridge_bin" in request.fixturenames:
        help_text = request.getfixturevalue("serve_help")
        _SERVE_FLAG["flag"] = "--backend" if re.search(r"--backend\b", help_text) else \
            "--discovery" if re.search(r"--discovery\b", help_text) else "--backend"
    yield


def start_serve(host: labmod.Host, bridge_bin: str, backend: str, name: str = "Desk", *extra: str,
                env: dict | None = None) -> labmod.Proc:
    flag = _SERVE_FLAG.get("flag", "--backend")
    # Discovery and the handshake are under test here, not pairing (test_pairing.py): no token, but
    # only the lab's own networks may connect.
    open_to_lab = ["--auth", "none", "--allow-network", "198.18.0.0/15", "--allow-network", "fd00:6f61::/32"]
    return host.spawn([bridge_bin, "serve", "--name", name, flag, backend, *open_to_lab, *extra], label=f"serve-{backend}",
                      env=env)


def start_watch(host: labmod.Host, bridge_bin: str, backend: str, env: dict | None = None) -> labmod.Proc:
    proc = host.spawn([bridge_bin, "discover", "--watch", "--json", "--backend", backend],
                      label=f"discover-watch-{backend}", env=env)
    # Give the browser a moment to be up before anything is published (all_for_now if the CLI reports it).
    proc.wait_for_line(lambda l: '"all_for_now"' in l, timeout=2.0)
    assert proc.poll() is None, f"discover --watch exited early\n{proc.describe()}"
    return proc


def parse_events(text: str, context: str) -> list[dict]:
    """Every stdout line of `discover --json` must be one JSON object."""
    events = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise AssertionError(f"stdout line {i + 1} of discover --json is not JSON ({e}): {line!r}\n{context}")
        assert isinstance(obj, dict) and isinstance(obj.get("event"), str), \
            f"line {i + 1} is not an event object: {line!r}\n{context}"
        events.append(obj)
    return events


def is_event(line: str, event: str, name: str | None = None) -> bool:
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("event") == event and (name is None or obj.get("name") == name)


def merged_state(events: list[dict], name: str) -> dict:
    """The current view of service `name` after applying added/updated/removed events in order."""
    state: dict = {}
    for e in events:
        if e.get("name") != name or e.get("type", SERVICE_TYPE) != SERVICE_TYPE:
            continue
        if e["event"] in ("added", "updated"):
            state.update(e)
        elif e["event"] == "removed":
            state = {}
    return state


def ipv4s(ev: dict) -> list[str]:
    return [a.get("ip") for a in ev.get("addresses") or [] if a.get("family") == "ipv4"]


def wait_state(proc: labmod.Proc, name: str, pred, timeout: float) -> dict:
    """Wait until the merged state of `name` in proc's --json output satisfies pred; return it."""
    deadline = time.monotonic() + timeout
    while True:
        st = merged_state(parse_events(proc.stdout(), proc.describe()), name)
        if st and pred(st):
            return st
        if time.monotonic() >= deadline or proc.poll() is not None:
            return st
        time.sleep(0.02)


_TOKENISH = re.compile(r"^[A-Za-z0-9+/=_-]{20,}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def token_like_txt(txt: dict) -> list[str]:
    """TXT entries that look like a secret: a secret-sounding key, or a long random-looking value.
    The instance `id` may be a UUID or a short id (<= 19 chars); anything longer and random-looking is flagged."""
    bad = []
    for k, v in txt.items():
        v = "" if v is None else str(v)
        if re.search(r"token|secret|pass|pin|otp|nonce|key|cred", k, re.I):
            bad.append(f"{k}={v}")
        elif k == "id" and _UUID.match(v):
            continue
        elif _TOKENISH.match(v):
            bad.append(f"{k}={v}")
    return bad


def ws_probe(host: labmod.Host, url: str, *args: str, timeout: float = 30.0) -> dict:
    cp = host.run([sys.executable, str(WS_PROBE), url, *args], timeout=timeout)
    try:
        return json.loads(cp.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError(f"ws_probe gave no JSON (exit {cp.returncode}):\n{cp.stdout}\n{cp.stderr}")


def check_address_list(ev: dict, ctx: str) -> None:
    addrs = ev.get("addresses")
    assert isinstance(addrs, list) and addrs, f"no addresses: {ev}\n{ctx}"
    for a in addrs:
        assert set(a) >= {"ip", "family", "zone"}, f"address entry lacks ip/family/zone: {a}"
        assert a["family"] in ("ipv4", "ipv6"), a
        ip = ipaddress.ip_address(a["ip"])
        assert (ip.version == 4) == (a["family"] == "ipv4"), a
        if a["family"] == "ipv4" or not ip.is_link_local:
            assert a["zone"] is None, f"zone on a non-link-local address: {a}"
        else:
            assert isinstance(a["zone"], str) and a["zone"], f"link-local address without its zone is unusable: {a}"


# -- tests ----------------------------------------------------------------------------------------------------

def test_serve_is_discovered_and_resolved(bridge_bin, backend, desk, phone, lab, timings):
    watch = start_watch(phone, bridge_bin, backend)
    t0 = time.monotonic()
    serve = start_serve(desk, bridge_bin, backend)
    ctx = lambda: f"{serve.describe()}\n{watch.describe()}\n{desk.logs(15)}\n{phone.logs(15)}"  # noqa: E731

    line = watch.wait_for_line(lambda l: is_event(l, "added", "Desk"), timeout=15, guard=[serve])
    t_added = (time.monotonic() - t0) * 1000
    assert line is not None, f"phone never saw an `added` event for Desk within 15 s\n{ctx()}"
    added = json.loads(line)
    timings.record(f"serve_start_to_added[{backend}]", t_added)

    st = wait_state(watch, "Desk", lambda s: desk.ipv4 in ipv4s(s), timeout=5)
    t_v4 = (time.monotonic() - t0) * 1000
    assert desk.ipv4 in ipv4s(st), f"desk's IPv4 {desk.ipv4} not among addresses of Desk: {st}\n{ctx()}"
    timings.record(f"serve_start_to_resolved_ipv4[{backend}]", t_v4)

    for ev in (added, st):
        assert ev["name"] == "Desk"
        assert ev["type"] == SERVICE_TYPE, ev
        assert ev["domain"].rstrip(".") == "local", ev
        assert ev["port"] == 9099 and isinstance(ev["port"], int), ev
    assert st["host"].rstrip(".") == "desk.local", st
    check_address_list(st, ctx())
    assert not set(ipv4s(st)) & {phone.ipv4}, f"phone's own address listed for desk's service: {st}"
    txt = st["txt"]
    assert isinstance(txt, dict), st
    assert TXT_KEYS <= set(txt), f"TXT lacks {sorted(TXT_KEYS - set(txt))}: {txt}"
    assert all(isinstance(v, str) for v in txt.values()), f"TXT values should be strings: {txt}"
    assert txt["txtvers"].isdigit(), txt
    assert txt["path"].startswith("/"), txt
    assert txt["id"], txt
    assert not token_like_txt(txt), f"token-like value in TXT: {token_like_txt(txt)} (whole TXT: {txt})"
    assert "eth0" in st["interfaces"], st
    assert st["local"] is False and st["own"] is False, st
    assert isinstance(st["resolve_ms"], (int, float)) and st["resolve_ms"] >= 0, st
    assert serve.poll() is None, f"serve exited\n{ctx()}"
    assert watch.poll() is None, f"discover --watch exited\n{ctx()}"


def test_websocket_initialize_handshake(bridge_bin, backend, desk, phone):
    serve = start_serve(desk, bridge_bin, backend)
    # A one-shot browse reports what is there now: wait (with avahi-browse) until Desk is on the wire.
    wait_resolved(phone, "Desk", timeout=15, guard=serve)
    cp = phone.run([bridge_bin, "discover", "--json", "--timeout", "5", "--backend", backend], timeout=20)
    ctx = f"discover exit {cp.returncode}\nstdout:\n{cp.stdout}\nstderr:\n{cp.stderr}\n{serve.describe()}"
    assert cp.returncode == 0, f"one-shot discover did not find the service\n{ctx}\n{phone.logs(15)}"
    st = merged_state(parse_events(cp.stdout, ctx), "Desk")
    assert desk.ipv4 in ipv4s(st), f"Desk not resolved to {desk.ipv4}\n{ctx}"
    path = st["txt"]["path"]
    url = f"ws://{desk.ipv4}:{st['port']}{path}"

    res = ws_probe(phone, url, "--malformed", "--numeric-id", "--wait", "5")
    ctx = f"probe result: {json.dumps(res, indent=1)}\n{serve.describe()}"
    assert "connect_error" not in res, ctx

    init = res["initialize"]
    assert "error" not in init, f"no reply to initialize\n{ctx}"
    assert init["binary"] is False, f"reply must be a text frame\n{ctx}"
    r = init.get("json")
    assert isinstance(r, dict), f"initialize reply is not a JSON object\n{ctx}"
    assert r.get("jsonrpc") == "2.0", ctx
    assert "id" in r and r["id"] == "1" and isinstance(r["id"], str), f"id must come back as the string \"1\"\n{ctx}"
    assert "error" not in r, ctx
    result = r.get("result")
    assert isinstance(result, dict), ctx
    assert result.get("protocol_version") == PROTOCOL_VERSION, ctx
    assert isinstance(result.get("agent_capabilities"), dict), ctx
    assert isinstance(result.get("auth_methods"), list), ctx
    info = result.get("agent_info")
    assert isinstance(info, dict) and all(isinstance(info.get(k), str) and info.get(k)
                                          for k in ("name", "title", "version")), ctx
    meta = result.get("_meta")
    assert isinstance(meta, dict) and isinstance(meta.get("working_directory"), str) \
        and meta["working_directory"].startswith("/"), ctx

    num = res["numeric"]
    assert "error" not in num and isinstance(num.get("json"), dict), f"no reply to numeric-id initialize\n{ctx}"
    nid = num["json"].get("id")
    assert nid == 7 and type(nid) is int, f"numeric id must come back as the number 7, got {nid!r}\n{ctx}"

    bad = res["malformed"]
    assert "error" not in bad, f"malformed JSON got no reply (silence)\n{ctx}"
    e = bad.get("json")
    assert isinstance(e, dict), f"reply to malformed JSON is not JSON\n{ctx}"
    assert e.get("jsonrpc") == "2.0", ctx
    assert isinstance(e.get("error"), dict) and e["error"].get("code") == -32700, ctx
    assert isinstance(e["error"].get("message"), str) and e["error"]["message"], ctx
    assert "id" in e and e["id"] is None, f"parse error reply must carry id null (JSON-RPC 2.0 §5)\n{ctx}"
    assert "result" not in e, ctx
    assert serve.poll() is None, f"serve died\n{ctx}"


def test_sigterm_withdraws_within_2s(bridge_bin, backend, desk, phone, timings):
    watch = start_watch(phone, bridge_bin, backend)
    serve = start_serve(desk, bridge_bin, backend)
    ctx = lambda: f"{serve.describe()}\n{watch.describe()}\n{desk.logs(15)}\n{phone.logs(15)}"  # noqa: E731
    assert watch.wait_for_line(lambda l: is_event(l, "added", "Desk"), timeout=15, guard=[serve]), \
        f"never added\n{ctx()}"
    time.sleep(0.3)  # let resolution settle; the figure below is about withdrawal only

    t0 = time.monotonic()
    serve.terminate()
    line = watch.wait_for_line(lambda l: is_event(l, "removed", "Desk"), timeout=6)
    dt = time.monotonic() - t0
    assert line is not None, f"no `removed` event within 6 s of SIGTERM\n{ctx()}"
    timings.record(f"sigterm_to_removed[{backend}]", dt * 1000)
    removed = json.loads(line)
    assert removed.get("type") == SERVICE_TYPE and removed.get("domain", "").rstrip(".") == "local", removed
    assert dt < 2.0, f"removal took {dt:.2f} s (limit 2 s)\n{ctx()}"
    rc = serve.wait(5)
    assert rc == 0, f"serve exit status after SIGTERM: {rc} (want 0)\n{ctx()}"


def test_same_name_on_two_hosts(bridge_bin, backend, desk, phone, extra_host):
    desk2 = extra_host("desk2")
    watch = start_watch(phone, bridge_bin, backend)
    s1 = start_serve(desk, bridge_bin, backend)
    s2 = None
    ctx = lambda: (f"{s1.describe()}\n{s2.describe() if s2 else ''}\n{watch.describe()}\n"  # noqa: E731
                   f"{desk.logs(15)}\n{desk2.logs(15)}")
    assert watch.wait_for_line(lambda l: is_event(l, "added", "Desk"), timeout=15, guard=[s1]), \
        f"first Desk never added\n{s1.describe()}\n{watch.describe()}"
    s2 = start_serve(desk2, bridge_bin, backend)
    line = watch.wait_for_line(lambda l: is_event(l, "added") and json.loads(l).get("name") != "Desk",
                               timeout=15, guard=[s1, s2])
    assert line is not None, f"second bridge never appeared under another name\n{ctx()}"
    second = json.loads(line)["name"]
    assert second == "Desk #2", f"second bridge named {second!r}, expected 'Desk #2'\n{ctx()}"
    a = wait_state(watch, "Desk", lambda s: bool(ipv4s(s)), 5)
    b = wait_state(watch, "Desk #2", lambda s: bool(ipv4s(s)), 5)
    assert desk.ipv4 in ipv4s(a) and desk2.ipv4 not in ipv4s(a), f"Desk: {a}\n{ctx()}"
    assert desk2.ipv4 in ipv4s(b) and desk.ipv4 not in ipv4s(b), f"Desk #2: {b}\n{ctx()}"
    assert a["txt"]["id"] != b["txt"]["id"], f"two bridges share an id: {a['txt']} / {b['txt']}"
    # The original keeps its name; no event ever removed it.
    evs = parse_events(watch.stdout(), ctx())
    assert not [e for e in evs if e["event"] == "removed" and e.get("name") == "Desk"], ctx()
    assert s1.poll() is None and s2.poll() is None, f"a bridge exited on the name collision\n{ctx()}"


def test_discover_probe(bridge_bin, backend, desk, phone, timings):
    serve = start_serve(desk, bridge_bin, backend)
    # A one-shot browse reports what is there now: wait (with avahi-browse) until Desk is on the wire. The probe
    # itself is not waited for: a bridge must not advertise before it accepts connections.
    wait_resolved(phone, "Desk", timeout=15, guard=serve)
    t0 = time.monotonic()
    cp = phone.run([bridge_bin, "discover", "--probe", "--json", "--timeout", "6", "--backend", backend],
                   timeout=25)
    ctx = f"discover exit {cp.returncode}\nstdout:\n{cp.stdout}\nstderr:\n{cp.stderr}\n{serve.describe()}"
    assert cp.returncode == 0, ctx
    evs = [e for e in parse_events(cp.stdout, ctx) if e.get("name") == "Desk" and "probe" in e]
    assert evs, f"no event for Desk carries `probe`\n{ctx}"
    ok = [e for e in evs if isinstance(e["probe"], dict) and e["probe"].get("ok") is True]
    assert ok, f"probe.ok is never true: {[e['probe'] for e in evs]}\n{ctx}"
    p = ok[0]["probe"]
    assert isinstance(p.get("ms"), (int, float)) and p["ms"] >= 0, p
    timings.record(f"probe_handshake[{backend}]", float(p["ms"]), total_discover_s=round(time.monotonic() - t0, 2))
    # ws://, or wss:// when the bridge says tls=1 in TXT (issue 11: the probe then checks TLS like a phone)
    assert isinstance(p.get("url"), str) and re.match(r"wss?://", p["url"]), p
    hostpart = re.match(r"wss?://(\[[^\]]+\]|[^/:]+)", p["url"]).group(1).strip("[]").split("%")[0]
    assert hostpart in (desk.ipv4, desk.ipv6, "desk.local") or hostpart.startswith("fe80:"), \
        f"probe went to {p['url']}, not to desk\n{ctx}"
    assert p.get("protocol_version") == PROTOCOL_VERSION, p
    assert isinstance(p.get("agent"), dict) and isinstance(p["agent"].get("name"), str) and p["agent"]["name"], p


HOW_TO_START = re.compile(r"(systemctl\s+(enable\s+--now\s+|start\s+)avahi-daemon|service\s+avahi-daemon\s+start"
                          r"|start\s+(the\s+)?avahi|avahi-daemon\s+(-D|--daemonize))", re.I)


def test_avahi_stopped(bridge_bin, backend, phone, extra_host):
    h = extra_host("noavahi")
    h.stop_avahi()
    assert not h.avahi_running(), h.logs()

    cp = h.run([bridge_bin, "discover", "--timeout", "3", "--backend", backend], timeout=15)
    ctx = f"discover exit {cp.returncode}\nstdout:\n{cp.stdout}\nstderr:\n{cp.stderr}"
    assert cp.returncode == 2, f"discover without avahi-daemon must exit 2\n{ctx}"
    assert HOW_TO_START.search(cp.stderr), f"stderr does not say how to start avahi-daemon\n{ctx}"

    cpj = h.run([bridge_bin, "discover", "--json", "--timeout", "3", "--backend", backend], timeout=15)
    ctxj = f"discover --json exit {cpj.returncode}\nstdout:\n{cpj.stdout}\nstderr:\n{cpj.stderr}"
    assert cpj.returncode == 2, f"discover --json without avahi-daemon must exit 2\n{ctxj}"
    evs = parse_events(cpj.stdout, ctxj)
    assert any(e["event"] == "daemon_unavailable" for e in evs) or HOW_TO_START.search(cpj.stderr), ctxj

    serve = start_serve(h, bridge_bin, backend, "Nodisc")
    res = ws_probe(phone, f"ws://{h.ipv4}:9099/", "--wait", "8")
    sctx = f"{json.dumps(res, indent=1)}\n{serve.describe()}"
    assert "connect_error" not in res, f"serve without avahi does not serve WebSocket\n{sctx}"
    r = res["initialize"].get("json") or {}
    assert r.get("id") == "1" and isinstance(r.get("result"), dict), sctx
    assert serve.poll() is None, sctx
    time.sleep(1.5)  # background retries must not repeat the message
    off = [l for l in serve.stderr().splitlines()
           if re.search(r"\b(discovery|advertising|mdns advertising)\b[^.]{0,20}\b(off|disabled|unavailable)\b", l, re.I)]
    assert len(off) == 1, f"want exactly one line saying discovery is off, got {len(off)}: {off}\n{sctx}"
    assert re.search(r"avahi", off[0], re.I), f"the line does not say why (avahi-daemon): {off[0]!r}"


def test_serve_advertises_once_avahi_starts(bridge_bin, backend, phone, extra_host, timings):
    """serve started while avahi-daemon is down keeps serving and advertises as soon as the daemon is back
    (serve --help: "advertises as soon as the daemon appears")."""
    h = extra_host("latedaemon")
    h.stop_avahi()
    serve = start_serve(h, bridge_bin, backend, "Late")
    res = ws_probe(phone, f"ws://{h.ipv4}:9099/", "--wait", "8")
    assert "connect_error" not in res, f"{json.dumps(res)}\n{serve.describe()}"
    t0 = time.monotonic()
    h.start_avahi()
    recs = wait_resolved(phone, "Late", timeout=20, guard=serve)
    timings.record(f"avahi_start_to_advertised[{backend}]", (time.monotonic() - t0) * 1000)
    assert any(r["address"] == h.ipv4 and r["port"] == 9099 for r in recs), recs


def test_contract_serve_backend_flag(serve_help):
    """Contract: `oa-bridge serve ... [--backend avahi|dnssd]` (same flag name as `discover --backend`)."""
    assert re.search(r"--backend\b", serve_help), (
        "contract mismatch: `serve` has no --backend option (the behaviour tests above fell back to "
        f"--discovery if present). serve --help:\n{serve_help}")
