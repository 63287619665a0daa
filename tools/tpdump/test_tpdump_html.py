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
import struct
from pathlib import Path

import pytest

from html_page import CHROMIUM, WINDOW, Page, assert_page_ran, assert_plots_drawn, chromium, chromium_found, pixels

DATA = Path(os.environ.get("TRACEFILES", Path(__file__).parents[2] / "tests/data/tracefiles"))


@pytest.fixture(scope="module", autouse=True)
def chromium_present():
    # pytest.exit from a fixture ends the session with this code (raised at import, pytest
    # would report a collection error instead).
    if not chromium_found():
        pytest.exit(f"skipped: no Chromium at {CHROMIUM} (set CHROMIUM)", returncode=77)


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
    assert_page_ran(pages(name))


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

@pytest.mark.parametrize("name", ["basic", "stepping"])
def test_screenshot_shows_the_charts(pages, name):
    assert_plots_drawn(pages(name))


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
