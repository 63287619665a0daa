"""Checking tpdump's HTML report in headless Chromium: write a trace file's page, run it
(the DOM after its scripts, Chromium's log, a screenshot), and read what it drew. Shared by
tools/tpdump/test_tpdump_html.py and the demo's test (tests/demo/)."""
import html
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

TPDUMP = os.environ.get("TPDUMP", "tpdump")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
WINDOW = (1400, 1400)


def chromium_found() -> bool:
    return os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)


def write_page(trace: Path, out: Path, *args) -> str:
    proc = subprocess.run([TPDUMP, "--html", *map(str, args), str(trace)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    out.write_bytes(proc.stdout)
    return proc.stdout.decode()


def chromium(page: Path, work: Path, *args) -> subprocess.CompletedProcess:
    """One headless run; a fresh profile per run so runs do not share state."""
    profile = work / f"profile-{len(list(work.glob('profile-*')))}"
    cmd = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--no-first-run",
           "--disable-extensions", "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
           f"--window-size={WINDOW[0]},{WINDOW[1]}", *args, page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    shutil.rmtree(profile, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


class Page:
    """A trace file's page: its HTML, the DOM after the scripts ran, Chromium's log, and a
    screenshot."""

    def __init__(self, trace: Path, work: Path, *args):
        work.mkdir(parents=True, exist_ok=True)
        self.file = work / (trace.stem + ".html")
        self.html = write_page(trace, self.file, *args)
        run = chromium(self.file, work, "--dump-dom")
        self.dom, self.log = run.stdout, run.stderr
        self.screenshot = work / (trace.stem + ".png")
        shot = chromium(self.file, work, f"--screenshot={self.screenshot}")
        self.log += shot.stderr
        if os.environ.get("SCREENSHOT_DIR"):
            shutil.copy(self.screenshot, Path(os.environ["SCREENSHOT_DIR"]) / self.screenshot.name)

    def root_attributes(self) -> dict:
        tag = re.search(r"<html(\b[^>]*)>", self.dom)
        assert tag, self.dom[:200]
        return {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', tag.group(1))}

    def charts(self) -> dict:
        """data-name -> the chart svg's markup."""
        out = {}
        for m in re.finditer(r'<svg class="chart-svg"([^>]*)>(.*?)</svg>', self.dom, re.S):
            name = re.search(r'data-name="([^"]*)"', m.group(1))
            out[html.unescape(name.group(1))] = m.group(0)
        return out

    def timeline_rows(self, kind: str) -> dict:
        """data-tracepoint or data-thread -> data-hits of the timeline's rows."""
        key = "tracepoint" if kind == "tracepoint" else "thread"
        rows = {}
        for m in re.finditer(r'<g class="timeline-row"([^>]*)>', self.dom):
            attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
            if attrs["data-kind"] == kind:
                rows[html.unescape(attrs[f"data-{key}"])] = int(attrs["data-hits"])
        return rows


def read_png(path: Path):
    """(width, height, bytes per pixel, rows of pixel bytes) of an 8-bit RGB(A) PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, bytearray()
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            idat += body
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):  # undo the row's filter (PNG spec, section 9)
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            else:
                break
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def pixels(path: Path, box):
    """The (r, g, b) pixels of the screenshot inside box = (left, top, width, height)."""
    width, height, bpp, rows = read_png(path)
    left, top, w, h = box
    for y in range(max(0, top), min(height, top + h)):
        row = rows[y]
        for x in range(max(0, left), min(width, left + w)):
            yield tuple(row[x * bpp:x * bpp + 3])


def assert_page_ran(page: "Page") -> None:
    """No console message or uncaught exception, and the page says it finished drawing."""
    # Chromium logs console messages as ...:CONSOLE...; the page writes none when it works.
    console = [line for line in page.log.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert not console, "\n".join(console)
    attrs = page.root_attributes()
    assert attrs.get("data-rendered") == "true"
    assert "data-errors" not in attrs, attrs["data-errors"]


def assert_plots_drawn(page: "Page") -> None:
    """The screenshot's plots area holds lines and dots, not a blank."""
    box = tuple(int(v) for v in page.root_attributes()["data-plots-box"].split(","))
    assert box[1] < WINDOW[1], f"the plots start below the screenshot: {box}"
    seen = list(pixels(page.screenshot, box))
    assert len(seen) > 10000
    colours = set(seen)
    ink = sum(1 for p in seen if p != (255, 255, 255))
    # lines and dots in the tracepoints' colours (#2563eb and its anti-aliased shades first)
    blue = sum(1 for r, g, b in seen if b > 180 and r < 120 and g < 160)
    assert len(colours) > 50, len(colours)
    assert ink > len(seen) // 50, (ink, len(seen))
    assert blue > 200, blue
