"""The phone web app in WebKit, Safari's engine (issue 29.5): Debian's WebKitGTK (MiniBrowser) driven by its
WebKitWebDriver through Selenium, on an Xvfb display. A subset of the Chromium tests: pairing from the QR code's URL
to ready, a prompt with a permission answered by its kind's button and a bare URL in the answer (kept over a reload),
hostile Markdown rendered without exhausting the stack, a link without a pairing code leaving the pairing alone, a
dead link (the bridge SIGSTOPped) seen by the heartbeat with the prompt typed meanwhile sent once, and Unpair.
The emulated phone of the Chromium tests has no WebKit counterpart here: the window is a desktop window."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from test_webapp_hostile import HOSTILE_MARKDOWN
from web_support import AGENTS, loopback_url, qr_url, require_tools, wait_until

WEBDRIVER = os.environ.get("OA_WEBKIT_DRIVER", "/usr/bin/WebKitWebDriver")
MINIBROWSER = os.environ.get("OA_WEBKIT_BROWSER", "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser")


@pytest.fixture
def display(artifacts):
    """An Xvfb display of its own for each test (MiniBrowser is a GTK window); the display number is Xvfb's choice.
    Its output goes to artifacts/xvfb.log."""
    require_tools()
    for tool in (WEBDRIVER, MINIBROWSER):
        if not os.path.exists(tool):
            pytest.skip(f"no {tool} (apt-get install webkit2gtk-driver)")
    if not shutil.which("Xvfb"):
        pytest.skip("no Xvfb (apt-get install xvfb)")
    read, write = os.pipe()
    log = open(artifacts / "xvfb.log", "ab")
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1024x900x24", "-nolisten", "tcp", "-noreset"],
                            pass_fds=(write,), stdout=log, stderr=log)
    os.close(write)
    # Xvfb writes the number and the newline apart, and dies when a write fails: read to the newline, and keep the
    # pipe open while Xvfb runs.
    said = b""
    while not said.endswith(b"\n") and len(said) < 16:
        chunk = os.read(read, 16)
        if not chunk:
            break
        said += chunk
    number = said.decode().strip()
    try:
        assert number.isdigit(), "Xvfb did not say its display (see xvfb.log)"
        yield xvfb, ":" + number
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=10)
        os.close(read)
        log.close()


@pytest.fixture
def webkit(display):
    import threading

    from selenium import webdriver
    from selenium.webdriver.webkitgtk.options import Options
    from selenium.webdriver.webkitgtk.service import Service

    xvfb, name = display
    options = Options()
    options.binary_location = MINIBROWSER
    options.add_argument("--automation")
    options.accept_insecure_certs = True  # the bridge's self-signed certificate, as a user accepts it once
    service = Service(executable_path=WEBDRIVER, env=dict(os.environ, DISPLAY=name))
    # WebKitWebDriver waits without end for a browser that cannot start: bounded here (the driver is killed).
    started = threading.Event()
    watchdog = threading.Timer(60, lambda: started.is_set() or (service.process and service.process.kill()))
    watchdog.start()
    try:
        driver = webdriver.WebKitGTK(options=options, service=service)
    finally:
        started.set()
        watchdog.cancel()
    assert xvfb.poll() is None, "Xvfb exited (see xvfb.log)"
    driver.set_page_load_timeout(20)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def wait_js(driver, script: str, timeout: float, what: str):
    return wait_until(lambda: js(driver, script), timeout, what, interval=0.1)


def wait_ready(driver, timeout: float = 15) -> None:
    wait_js(driver, "return document.documentElement.dataset.ready === 'true'", timeout, "the app ready")


def watch(driver) -> None:
    """Counts page errors and alert/confirm/prompt calls from now on (window.__errors, window.__dialogs)."""
    js(driver, """window.__errors = []; window.__dialogs = [];
        addEventListener('error', e => window.__errors.push(String(e.message)));
        addEventListener('unhandledrejection', e => window.__errors.push(String(e.reason)));
        for (const name of ['alert', 'confirm', 'prompt']) window[name] = (m) => { window.__dialogs.push(name + ': ' + m); };""")


def clean(driver) -> None:
    assert js(driver, "return window.__errors") == [], js(driver, "return window.__errors")
    assert js(driver, "return window.__dialogs") == [], js(driver, "return window.__dialogs")
    assert js(driver, "return window.__pwned === undefined")


def send(driver, text: str) -> None:
    box = driver.find_element("id", "message")
    box.clear()
    box.send_keys(text)
    driver.find_element("id", "send").click()


def test_webkit_pairs_prompts_and_keeps_a_bare_url_answer_over_a_reload(bridge, webkit):
    webkit.get(loopback_url(qr_url(bridge), bridge))
    wait_ready(webkit)
    watch(webkit)
    assert js(webkit, "return location.hash") == ""
    assert js(webkit, "return document.getElementById('connection').textContent") == "Connected"
    devices = bridge.devices()
    assert len(devices) == 1 and "Safari" in devices[0]["name"], devices
    send(webkit, "see https://example.com/guide")
    allow = wait_js(webkit, "return document.querySelector('#permissions button[data-kind=allow_once]')", 10,
                    "the permission buttons")
    assert allow.text == "Allow once"
    allow.click()
    wait_js(webkit, "return !document.getElementById('send').hidden", 10, "the end of the turn")
    links = wait_js(webkit, """const a = [...document.querySelectorAll('#transcript [data-role=agent] a')];
        return a.length ? a.map(x => x.getAttribute('href')) : null""", 10, "the link in the answer")
    assert links == ["https://example.com/guide"]
    clean(webkit)
    webkit.refresh()
    wait_ready(webkit)
    watch(webkit)
    assert js(webkit, "return document.querySelector('#transcript').textContent").count("You said: see https://example.com/guide") == 1
    clean(webkit)


def test_webkit_renders_hostile_markdown_without_exhausting_the_stack(bridge, webkit):
    webkit.get(bridge.origin + "/app")
    wait_js(webkit, "return !document.getElementById('screen-nopair').hidden", 10, "the not-paired screen")
    results = webkit.execute_async_script("""const [cases, done] = arguments;
        import('/app/markdown.js').then(m => {
            const out = {};
            for (const [name, text] of Object.entries(cases)) {
                try {
                    const div = document.createElement('div');
                    div.append(m.renderMarkdown(text));
                    out[name] = {ok: true, length: div.textContent.length,
                                 links: [...div.querySelectorAll('a')].map(a => a.getAttribute('href'))};
                } catch (e) {
                    out[name] = {ok: false, error: String(e)};
                }
            }
            done(out);
        }, e => done({import: {ok: false, error: String(e)}}));""", HOSTILE_MARKDOWN)
    failed = {name: r["error"] for name, r in results.items() if not r["ok"]}
    assert not failed, failed
    for name, result in results.items():
        assert all(href.startswith(("https://", "http://")) for href in result["links"]), (name, result["links"])
    assert results["bare_url"]["links"] == ["https://example.com/docs?x=1"]
    assert results["javascript_links"]["links"] == []


def test_webkit_a_link_without_a_pairing_code_leaves_the_pairing_alone(bridge, webkit):
    webkit.get(loopback_url(qr_url(bridge), bridge))
    wait_ready(webkit)
    before = js(webkit, "return JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens")
    webkit.get("about:blank")
    webkit.get(bridge.origin + "/app#e30")
    wait_ready(webkit)
    watch(webkit)
    assert js(webkit, "return JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens") == before
    assert js(webkit, "return document.getElementById('connection').textContent") == "Connected"
    clean(webkit)
    # And a new code asks first, in the page.
    payload = base64.urlsafe_b64encode(json.dumps({"token": "not-a-real-code"}).encode()).decode().rstrip("=")
    webkit.get("about:blank")
    webkit.get(bridge.origin + "/app#" + payload)
    wait_js(webkit, "return !document.getElementById('screen-confirm').hidden", 10, "the question")
    watch(webkit)
    webkit.find_element("id", "confirm-keep").click()
    wait_ready(webkit)
    assert js(webkit, "return JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens") == before
    time.sleep(0.2)
    clean(webkit)


def test_webkit_sees_a_dead_link_and_sends_the_prompt_typed_meanwhile_once(bridge_factory, webkit, tmp_path):
    log = tmp_path / "prompts.log"
    bridge = bridge_factory(["--agent", f"{sys.executable} {AGENTS / 'counting_agent.py'} {log}"])
    webkit.get(loopback_url(qr_url(bridge), bridge))
    wait_ready(webkit)
    watch(webkit)
    os.kill(bridge.proc.pid, signal.SIGSTOP)
    try:
        stopped = time.monotonic()
        send(webkit, "typed on a dead link")
        wait_js(webkit, "return document.getElementById('connection').dataset.state === 'reconnecting'", 20,
                "Reconnecting")
        seen = time.monotonic() - stopped
        print(f"\nWebKit saw the dead link after {seen:.1f} s")
        assert seen < 14.0
        assert js(webkit, "return document.querySelector('#transcript .msg.user').dataset.state") == "queued"
    finally:
        os.kill(bridge.proc.pid, signal.SIGCONT)
    wait_js(webkit, "return document.querySelector('#transcript').textContent.includes('You said: typed on a dead link')",
            30, "the answer after the link is back")
    time.sleep(1.5)
    assert [json.loads(line) for line in log.read_text().splitlines()] == ["typed on a dead link"]
    clean(webkit)


def test_webkit_unpair_forgets_everything(bridge, webkit):
    webkit.get(loopback_url(qr_url(bridge), bridge))
    wait_ready(webkit)
    watch(webkit)
    webkit.find_element("id", "sessions-button").click()
    webkit.find_element("id", "unpair").click()
    webkit.find_element("id", "unpair-yes").click()
    wait_js(webkit, "return !document.getElementById('screen-unpaired').hidden", 10, "the unpaired screen")
    assert js(webkit, "return Object.keys(localStorage).filter(k => k.startsWith('oa-bridge.')).length") == 0
    assert js(webkit, "return document.querySelectorAll('dialog[open]').length") == 0
    assert bridge.devices() == []
    clean(webkit)
