"""tpdump --html in headless Chromium: each page of the gdb-written trace files (and of a
few made from them: thousands of frames, hostile names) must load without a console error
or uncaught exception, draw the expected charts and timeline rows, fetch nothing, and give
a screenshot whose plots are not blank. Run by ctest as `tools.tpdump_html`; TPDUMP and
TRACEFILES come from the environment, CHROMIUM names the browser (default
/usr/bin/chromium; without it the module exits 77, which ctest counts as skipped).
SCREENSHOT_DIR, if set, keeps the screenshots."""
import html
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

TPDUMP = os.environ.get("TPDUMP", "tpdump")
DATA = Path(os.environ.get("TRACEFILES", Path(__file__).parents[2] / "tests/data/tracefiles"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
WINDOW = (1400, 1400)


@pytest.fixture(scope="module", autouse=True)
def chromium_present():
    # pytest.exit from a fixture ends the session with this code (raised at import, pytest
    # would report a collection error instead).
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.exit(f"skipped: no Chromium at {CHROMIUM} (set CHROMIUM)", returncode=77)


# ---- running tpdump and Chromium ---------------------------------------------------------

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


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    work = tmp_path_factory.mktemp("html")
    cache = {}

    def get(name, trace=None, *args):
        if name not in cache:
            cache[name] = Page(trace or DATA / f"{name}.tf", work / name, *args)
        return cache[name]
    return get


# ---- what every page must do -------------------------------------------------------------

@pytest.mark.parametrize("name", ["basic", "stepping", "empty"])
def test_page_runs_without_errors(pages, name):
    page = pages(name)
    # Chromium logs console messages as ...:CONSOLE...; the page writes none when it works.
    console = [line for line in page.log.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert not console, "\n".join(console)
    attrs = page.root_attributes()
    assert attrs.get("data-rendered") == "true"
    assert "data-errors" not in attrs, attrs["data-errors"]


@pytest.mark.parametrize("name", ["basic", "stepping", "empty"])
def test_page_fetches_nothing(pages, name):
    text = pages(name).html
    assert not re.search(r"""\b(?:src|href|action|srcset)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?\s*(?:https?:)?//|@import|<link\b|<iframe\b", text, re.I)
    assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I)
    assert "default-src 'none'" in text  # the page's Content-Security-Policy


# ---- what each page shows ----------------------------------------------------------------

def test_basic_charts_and_timeline(pages):
    page = pages("basic")
    charts = page.charts()
    # a trace state variable, globals and arguments named from the tracepoint's source,
    # the elements of `counters[1]@3`, a register that changes
    for name in ["$calls", "glob", "step", "*slot", "counters[1]", "counters[2]", "counters[3]",
                 "rdi"]:
        assert name in charts, sorted(charts)
        assert re.search(r'<path d="M[^"]+L', charts[name]), charts[name][:300]
        assert charts[name].count("<circle") >= 5  # a dot per frame (and the selection mark)
    assert "$trace_timestamp" not in charts  # it is the time axis
    assert "rip" not in charts  # never changes: in the table instead
    assert re.search(r"Registers that never change.*?>rip<", page.dom, re.S)
    assert page.timeline_rows("tracepoint") == {"3": 5}
    assert list(page.timeline_rows("thread").values()) == [5]
    assert "since the first frame ($trace_timestamp)" in page.dom
    # the first frame is shown, its blocks named
    assert "Frame 0" in page.dom
    assert "glob — 0x555555558040, 4 bytes" in page.dom
    assert "counters[1]@3 — 0x555555558068, 24 bytes" in page.dom


def test_stepping_charts_and_timeline(pages):
    page = pages("stepping")
    charts = page.charts()
    assert {"step", "glob", "rip"} <= set(charts), sorted(charts)
    assert charts["glob"].count('data-points="8"') == 1  # the while-stepping frames
    # every tracepoint has a row, the disabled one without hits
    assert page.timeline_rows("tracepoint") == {"3": 10, "4": 0, "5": 4}
    assert "step % 2 == 0" in page.dom and "while-stepping 2" in page.dom
    assert "frame number" in page.dom


def test_empty_trace(pages):
    page = pages("empty")
    assert page.charts() == {}
    assert page.timeline_rows("tracepoint") == {"3": 0}
    assert "No frames were collected" in page.dom


# A script added to a copy of the page: clicks where a chart's third dot and the timeline's
# last hit are drawn, and notes the frame panel's heading after each click.
CLICKS = """<script>
(function () {
  function clickAt(node, x, y) {
    node.dispatchEvent(new MouseEvent('click', { clientX: x, clientY: y, bubbles: true }));
    return document.querySelector('#frame h2').firstChild.textContent;
  }
  const chart = document.querySelector('svg.chart-svg[data-name="glob"]');
  const dot = chart.querySelectorAll('circle')[2].getBoundingClientRect();
  const afterDot = clickAt(chart, dot.left + dot.width / 2, dot.top + dot.height / 2);
  const timeline = document.querySelector('#timeline svg');
  const row = timeline.querySelector('g.timeline-row[data-tracepoint="3"]').getBoundingClientRect();
  const afterHit = clickAt(timeline, row.right - 2, row.top + 11);
  document.documentElement.setAttribute('data-clicked', afterDot + '|' + afterHit);
})();
</script>
"""


def test_clicks_select_frames(pages, tmp_path):
    page = pages("basic")
    clicking = tmp_path / "clicking.html"
    clicking.write_text(page.html.replace("</body>", CLICKS + "</body>"))
    dom = chromium(clicking, tmp_path, "--dump-dom").stdout
    assert 'data-clicked="Frame 2|Frame 4"' in dom, re.search(r"<html[^>]*>", dom).group(0)
    assert "data-errors" not in re.search(r"<html[^>]*>", dom).group(0)


# ---- screenshots -------------------------------------------------------------------------

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


@pytest.mark.parametrize("name", ["basic", "stepping"])
def test_screenshot_shows_the_charts(pages, name):
    page = pages(name)
    box = tuple(int(v) for v in page.root_attributes()["data-plots-box"].split(","))
    assert box[1] < WINDOW[1], f"the plots start below the screenshot: {box}"
    seen = list(pixels(page.screenshot, box))
    assert len(seen) > 10000
    colours = set(seen)
    ink = sum(1 for p in seen if p != (255, 255, 255))
    # lines and dots in the tracepoints' colour (#2563eb and its anti-aliased shades)
    blue = sum(1 for r, g, b in seen if b > 180 and r < 120 and g < 160)
    assert len(colours) > 50, len(colours)
    assert ink > len(seen) // 50, (ink, len(seen))
    assert blue > 200, blue


def test_empty_screenshot_is_not_blank(pages):
    page = pages("empty")
    seen = list(pixels(page.screenshot, (0, 0, WINDOW[0], 400)))
    assert sum(1 for p in seen if p != (255, 255, 255)) > 1000


# ---- made-up trace files -----------------------------------------------------------------

def frames_of(trace: bytes):
    """The text part of a trace file and its frames' bytes."""
    text_end = trace.index(b"\n\n") + 2
    pos, frames = text_end, []
    while True:
        (tracepoint,) = struct.unpack_from("<H", trace, pos)
        if tracepoint == 0:  # the end: a bare zero tracepoint number
            return trace[:text_end], frames
        (length,) = struct.unpack_from("<I", trace, pos + 2)
        frames.append(trace[pos:pos + 6 + length])
        pos += 6 + length


def test_thousands_of_frames_draw_few_nodes(pages, tmp_path):
    text, frames = frames_of((DATA / "basic.tf").read_bytes())
    big = tmp_path / "big.tf"
    big.write_bytes(text + b"".join(frames * 800) + b"\0" * 2)  # 4000 frames
    page = pages("big", big)
    attrs = page.root_attributes()
    assert attrs.get("data-rendered") == "true" and "data-errors" not in attrs
    charts = page.charts()
    assert {"$calls", "glob", "counters[3]"} <= set(charts)
    assert 'data-points="4000"' in charts["glob"]
    # a line per chart, no dot per frame; one tick path per timeline row
    assert page.dom.count("<circle") < 4 * len(charts)
    assert page.timeline_rows("tracepoint") == {"3": 4000}
    drawn = re.sub(r'<script type="application/json".*?</script>', "", page.dom, flags=re.S)
    assert drawn.count("<") < 5000, drawn.count("<")


def test_names_from_the_file_cannot_break_the_page(pages, tmp_path):
    text, frames = frames_of((DATA / "basic.tf").read_bytes())
    hostile = "</script><script>document.title='broken'</script><!--"
    cond = hostile.encode().hex()
    tsv = ("x" + hostile).encode().hex()
    extra = (f"tp Z3:555555555144:cond:0:{len(hostile):x}:{cond}\n"
             f"tsv 9:0:0:{tsv}\n").encode()
    text = text[:-1] + extra + b"\n"  # before the empty line that ends the text
    odd = tmp_path / "hostile.tf"
    odd.write_bytes(text + b"".join(frames) + b"\0" * 2)
    page = pages("hostile", odd)
    attrs = page.root_attributes()
    assert attrs.get("data-rendered") == "true" and "data-errors" not in attrs
    assert page.html.count("</script>") == 3  # the page's own three scripts
    assert page.dom.count("<script") == 3
    assert html.escape(hostile, quote=False) in page.dom  # shown as text
    assert "<title>tpdump: " in page.dom
