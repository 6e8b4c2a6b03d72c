"""Issue 29 items 2 and 3: the terminal QR code fits 80x24 and scans, and a used code is replaced.

What a user's terminal shows is rebuilt here: `serve` and `pair` write to a pseudo-terminal of a given size, a small
terminal emulator (ANSI colours, autowrap at the right margin, a light or a dark theme) lays the bytes out in cells,
Pillow draws the cells (8x16 px: a half block is one 8x8 module) and zxing-cpp decodes the picture. So a code that
wraps, or a block taller than the window, fails here as it fails on a phone's camera.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import tempfile
import termios
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import zxingcpp
from PIL import Image, ImageDraw, ImageFont

from loopback import BIN, Serve, listening_port, wait_healthy

CELL_W, CELL_H = 8, 16
THEMES = {"dark": ((204, 204, 204), (0, 0, 0)), "light": ((0, 0, 0), (255, 255, 255))}
SGR_FG = {30: (0, 0, 0), 31: (205, 0, 0), 37: (229, 229, 229), 97: (255, 255, 255)}
SGR_BG = {40: (0, 0, 0), 47: (229, 229, 229), 107: (255, 255, 255)}


def terminal_cells(data: str, columns: int, theme: str) -> list[list[tuple[str, tuple, tuple]]]:
    """The rows of cells (char, fg, bg) a terminal `columns` wide shows for `data` (scrollback kept): SGR colours,
    CR, LF, and autowrap when a character arrives past the last column."""
    default_fg, default_bg = THEMES[theme]
    fg, bg = default_fg, default_bg
    rows: list[list] = [[]]
    col = 0
    pending_wrap = False
    i = 0
    while i < len(data):
        ch = data[i]
        if ch == "\x1b":
            match = re.match(r"\x1b\[([0-9;]*)m", data[i:])
            assert match, f"unexpected escape {data[i:i + 8]!r}"
            for code in [int(c) if c else 0 for c in match.group(1).split(";")]:
                if code == 0:
                    fg, bg = default_fg, default_bg
                elif code in SGR_FG:
                    fg = SGR_FG[code]
                elif code in SGR_BG:
                    bg = SGR_BG[code]
            i += len(match.group(0))
            continue
        i += 1
        if ch == "\r":
            col, pending_wrap = 0, False
            continue
        if ch == "\n":
            rows.append([])
            col, pending_wrap = 0, False
            continue
        if pending_wrap:
            rows.append([])
            col, pending_wrap = 0, False
        row = rows[-1]
        while len(row) < col:
            row.append((" ", default_fg, default_bg))
        row.append((ch, fg, bg))
        col += 1
        if col == columns:
            pending_wrap = True
    return rows


def render(rows: list[list], columns: int, theme: str) -> Image.Image:
    """The cells drawn as a terminal draws them: half blocks as two 8x8 squares, text with Pillow's default font."""
    default_fg, default_bg = THEMES[theme]
    image = Image.new("RGB", (columns * CELL_W + 32, len(rows) * CELL_H + 32), default_bg)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    for y, row in enumerate(rows):
        for x, (ch, fg, bg) in enumerate(row):
            left, top = 16 + x * CELL_W, 16 + y * CELL_H
            upper = fg if ch in "█▀" else bg
            lower = fg if ch in "█▄" else bg
            draw.rectangle([left, top, left + CELL_W - 1, top + CELL_H // 2 - 1], fill=upper)
            draw.rectangle([left, top + CELL_H // 2, left + CELL_W - 1, top + CELL_H - 1], fill=lower)
            if ch not in "█▀▄ ":
                draw.text((left, top + 2), ch, fill=fg, font=font)
    return image


def decode(image: Image.Image) -> list[str]:
    return [r.text for r in zxingcpp.read_barcodes(image) if r.format == zxingcpp.BarcodeFormat.QRCode]


def pty_pair(columns: int, rows: int) -> tuple[int, int]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    return master, slave


def read_until(master: int, pattern: str, timeout: float, seen: bytearray) -> str:
    """Reads the pty into `seen` until `pattern` (a regex) matches its text; returns the text."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = seen.decode(errors="replace")
        if re.search(pattern, text, re.S):
            return text
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    raise AssertionError(f"{pattern!r} not seen within {timeout} s:\n{seen.decode(errors='replace')[-3000:]}")


def get_json(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return json.loads(response.read())


def exchange(base: str, token: str, name: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        base + "/api/auth/exchange", method="POST", headers={"Content-Type": "application/json"},
        data=json.dumps({"pairing_token": token, "device_name": name}).encode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def blocks(text: str) -> list[str]:
    """The banners in `text`, each from its first QR row to its last line ('A new code follows each pairing.')."""
    lines = text.replace("\r", "").split("\n")
    found, current = [], None
    for line in lines:
        if current is None and "█" in line:
            current = []
        if current is not None:
            current.append(line)
            if line.rstrip().endswith("each pairing.") or line.rstrip().endswith("new one."):
                found.append("\n".join(current) + "\n")
                current = None
    return found


class PtyServe:
    """`oa-bridge serve` with its stdout on a pseudo-terminal of `columns` x `rows` (stderr in a file)."""

    def __init__(self, columns: int = 80, rows: int = 24, *extra: str) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="oa-qr-")).resolve()
        (self.base / "work").mkdir()
        self.master, slave = pty_pair(columns, rows)
        self.seen = bytearray()
        with open(self.base / "serve.log", "w") as log:
            self.proc = subprocess.Popen(
                [BIN, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", "0", "--state-dir",
                 str(self.base / "state"), "--working-directory", str(self.base / "work"), *extra],
                stdout=slave, stderr=log, stdin=subprocess.DEVNULL)
        os.close(slave)
        self.port = listening_port(self.proc, log=self.base / "serve.log")
        self.base_url = f"http://127.0.0.1:{self.port}"
        wait_healthy(self.port, self.proc, log=self.base / "serve.log")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        os.close(self.master)


@pytest.fixture
def served():
    bridge = PtyServe()
    yield bridge
    bridge.stop()


def assert_scans(block: str, url: str, columns: int = 80) -> None:
    for theme in THEMES:
        cells = terminal_cells(block, columns, theme)
        if cells and not cells[-1]:
            cells.pop()
        # The block and one free row for the cursor fit a 24-row window; no line wrapped into an extra row.
        assert len(cells) <= 23, f"{len(cells)} rows in the {theme} theme"
        assert len(cells) == block.rstrip("\n").count("\n") + 1, "a line wrapped at 80 columns"
        assert decode(render(cells, columns, theme)) == [url], f"{theme} theme"


def test_serve_shows_a_code_that_fits_80x24_and_scans_then_a_new_one_after_each_pairing(served):
    """The banner in an 80x24 terminal: at most 23 rows of 80 columns (fails on the old code: an 81-column, 41-row
    code), scanned from its picture to /api/pair/info's url. After a phone pairs, serve prints a new code that scans
    to the new url, and a second phone pairs with it (issue 29 item 3; fails on the old code: nothing was printed and
    the code on screen answered "already used")."""
    text = read_until(served.master, r"each pairing\.", 20, served.seen)
    first = blocks(text)[0]
    info = get_json(served.base_url, "/api/pair/info")
    assert re.fullmatch(r"https://[^/]+/app#1[0-9]{78}", info["url"]), info["url"]
    assert "\x1b[97;40m" in first, "colours on a terminal"
    assert_scans(first, info["url"])

    status, tokens = exchange(served.base_url, info["token"], "first phone")
    assert status == 200, tokens
    assert tokens["bridge"]["name"] and tokens["bridge"]["pin"] == info["pin"] and "token" not in tokens["bridge"]
    text = read_until(served.master, r"next phone scans this new one.*each pairing\.", 20, served.seen)
    second = blocks(text.split("The pairing code was used or replaced")[1])[0]
    fresh = get_json(served.base_url, "/api/pair/info")
    assert fresh["token"] != info["token"]
    assert_scans(second, fresh["url"])
    status, again = exchange(served.base_url, fresh["token"], "second phone")
    assert status == 200, again
    # The spent code is refused, as before.
    assert exchange(served.base_url, info["token"], "late phone")[0] in (401, 403)


def test_pair_in_a_small_terminal_says_so_and_writes_a_png(served):
    """In a 60x20 terminal `pair` prints no code that would wrap: it says the terminal is too small, with
    `oa-bridge pair --png FILE` and the link. `--png` writes an image (0600) that scans to the same link. Without a
    terminal, the 80x24 layout. Fails on the old code (a 41-row code, no --png)."""
    info = get_json(served.base_url, "/api/pair/info")
    master, slave = pty_pair(60, 20)
    proc = subprocess.Popen([BIN, "pair", "--port", str(served.port)], stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    seen = bytearray()
    text = read_until(master, r"shows a\s+new one\.", 20, seen)
    assert proc.wait(10) == 0
    os.close(master)
    assert "This terminal (60×20) is too small for the pairing QR code" in text, text
    assert f"oa-bridge pair --port {served.port} --png pairing.png" in text
    assert info["url"] in text.replace("\r\n", "\n")
    assert "▀" not in text and "▄" not in text

    png = Path(tempfile.mkdtemp()) / "code.png"
    done = subprocess.run([BIN, "pair", "--port", str(served.port), "--png", str(png)], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert png.stat().st_mode & 0o777 == 0o600
    assert decode(Image.open(png).convert("RGB")) == [info["url"]]

    piped = subprocess.run([BIN, "pair", "--port", str(served.port)], capture_output=True, text=True, timeout=20)
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout
    # No colours: the code assumes light text on a dark background.
    cells = terminal_cells(piped.stdout, 80, "dark")
    assert len([row for row in cells if row]) <= 23
    assert decode(render(cells, 80, "dark")) == [info["url"]]


def test_connect_pairs_from_the_short_link_and_refuses_a_wrong_pin_prefix(served):
    """`connect --pair` with the short link: it completes the link (GET /api/pair/hello, held to the pin prefix),
    pairs, keeps the full pin, and prompts. A link whose pin prefix is another key's is refused before the pairing
    code is sent: the code still pairs afterwards."""
    info = get_json(served.base_url, "/api/pair/info")
    # The link names the LAN address (and, with --port 0, port 0); this bridge listens on 127.0.0.1.
    local = re.sub(r"^https://[^/]+/", f"https://127.0.0.1:{served.port}/", info["url"])
    digits = info["url"].split("#1", 1)[1]
    wrong_pin = f"{(int(digits[39:]) ^ 1):039d}"
    state = Path(tempfile.mkdtemp(prefix="oa-qr-client-"))
    bad = local.split("#")[0] + "#1" + digits[:39] + wrong_pin
    refused = subprocess.run([BIN, "connect", "--pair", bad, "--prompt", "hi", "--browse-time", "0", "--state-dir", str(state)],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "not the one in the QR code" in refused.stderr, refused.stderr
    assert "Usage:" not in refused.stderr
    assert get_json(served.base_url, "/api/pair/info")["token"] == info["token"], "the code was not spent"

    good = local
    done = subprocess.run([BIN, "connect", "--pair", good, "--prompt", "short link", "--browse-time", "0", "--state-dir", str(state)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "You said: short link" in done.stdout
    saved = [json.loads(p.read_text()) for p in (state / "client").glob("*.json") if p.name != "bridges.json"]
    assert [c["pin"] for c in saved] == [info["pin"]], saved


def test_get_root_redirects_to_the_web_app():
    """`GET /` was an empty 404 (issue 29 item 9): now 302 to /app with a small page; /app#… links keep their fragment."""
    bridge = Serve()
    try:
        request = urllib.request.Request(bridge.base_url + "/")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        opener = urllib.request.build_opener(NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as caught:
            opener.open(request, timeout=10)
        assert caught.value.code == 302
        assert caught.value.headers["Location"] == "/app"
        assert b"/app" in caught.value.read()
    finally:
        bridge.stop()
