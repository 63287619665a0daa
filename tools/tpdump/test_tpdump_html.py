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


# ---- what the plots and rows mean ----------------------------------------------------------

def add_lines(text: bytes, lines: str) -> bytes:
    """The text part of a trace file with `lines` added before the empty line that ends it."""
    return text[:-1] + lines.encode() + b"\n"


def tsv_line(number: int, name: str) -> str:
    return f"tsv {number:x}:0:0:{name.encode().hex()}\n"  # hex, as every number of the text


def with_variables(frame: bytes, values: dict) -> bytes:
    """`frame` with a V block (number -> value) added for each of `values`."""
    tracepoint, length = struct.unpack_from("<HI", frame)
    blocks = b"".join(b"V" + struct.pack("<Iq", n, v) for n, v in values.items())
    return struct.pack("<HI", tracepoint, length + len(blocks)) + frame[6:] + blocks


def as_tracepoint(frame: bytes, number: int) -> bytes:
    return struct.pack("<H", number) + frame[2:]


def write_trace(path: Path, text: bytes, frames) -> Path:
    path.write_bytes(text + b"".join(frames) + b"\0" * 2)
    return path


def chart_list(page):
    """The attributes of every chart svg, in page order (page.charts() keeps one per name)."""
    out = []
    for m in re.finditer(r'<svg class="chart-svg"([^>]*)>(.*?)</svg>', page.dom, re.S):
        attrs = {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', m.group(1))}
        attrs["markup"] = m.group(0)
        out.append(attrs)
    return out


def drawn_as_line(markup: str) -> bool:
    return re.search(r'<path d="M[^"]*L', markup) is not None


# threads.tf: two threads hit tracepoint 2 in turn (frames 0, 2, 4 and 1, 3, 5), told apart
# by fs_base. Here frame 0 and frame 3 also collect $trace_thread (7001 and 7002).
TRACE_THREAD = 9


def threads_with_ids(tmp_path):
    text, frames = frames_of((DATA / "threads.tf").read_bytes())
    text = add_lines(text, tsv_line(TRACE_THREAD, "trace_thread"))
    frames[0] = with_variables(frames[0], {TRACE_THREAD: 7001})
    frames[3] = with_variables(frames[3], {TRACE_THREAD: 7002})
    return write_trace(tmp_path / "thread_ids.tf", text, frames)


def test_a_thread_named_both_ways_is_one_thread(pages, tmp_path):
    page = pages("thread_ids", threads_with_ids(tmp_path))
    assert_page_ran(page)
    # fs_base 0x7ffff7dce6c0 is thread 7001 (frame 0 holds both), 0x7ffff75cd6c0 is 7002 (tied
    # by frame 3, after its first frame)
    assert page.timeline_rows("thread") == {"thread 7001": 3, "thread 7002": 3}
    assert "thread @0x" not in page.dom


def test_perfetto_names_that_thread_once_too(tmp_path):
    """tpdump --perfetto's thread tracks follow the same rule: two tracks, by id."""
    import json
    import subprocess
    from html_page import TPDUMP
    out = subprocess.run([TPDUMP, "--perfetto", str(threads_with_ids(tmp_path))], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    names = sorted(e["args"]["name"] for e in json.loads(out.stdout)["traceEvents"]
                   if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 2)
    assert names == ["thread 7001", "thread 7002"], names


def test_a_thread_id_is_not_a_line(pages, tmp_path):
    page = pages("thread_ids", threads_with_ids(tmp_path))
    chart = page.charts()["$trace_thread"]
    assert 'data-role="identifier"' in chart and 'data-lanes="2"' in chart, chart[:400]
    assert not drawn_as_line(chart)
    assert ">7001<" in chart and ">7002<" in chart  # the ids are the lanes' labels


TRACE_PID = 10


def two_processes(tmp_path):
    """threads.tf as a trace that followed a fork: frames 0 and 1 collected $trace_pid 500,
    frames 2 to 5 600 (a forked child has its parent's TLS bases); frame 0 also $trace_thread
    7001, which ties the base of frames 0, 2, 4 to thread 7001 in process 500 only."""
    text, frames = frames_of((DATA / "threads.tf").read_bytes())
    text = add_lines(text, tsv_line(TRACE_THREAD, "trace_thread") + tsv_line(TRACE_PID, "trace_pid"))
    frames = [with_variables(f, {TRACE_PID: 500 if k < 2 else 600, **({TRACE_THREAD: 7001} if k == 0 else {})})
              for k, f in enumerate(frames)]
    return write_trace(tmp_path / "two_processes.tf", text, frames)


def test_threads_of_forked_processes_are_apart(pages, tmp_path):
    page = pages("two_processes", two_processes(tmp_path))
    assert_page_ran(page)
    assert page.timeline_rows("thread") == {
        "process 500 thread 7001": 1,
        "process 500 thread @0x7ffff75cd6c0": 1,
        "process 600 thread @0x7ffff7dce6c0": 2,
        "process 600 thread @0x7ffff75cd6c0": 2,
    }
    chart = page.charts()["$trace_pid"]
    assert 'data-role="identifier"' in chart and 'data-lanes="2"' in chart, chart[:400]


def two_tracepoints(tmp_path):
    """threads.tf with frames 1, 3, 5 made tracepoint 1's, defined after tracepoint 2 with
    the same actions but no `R`: its frames keep their R blocks, which it did not collect."""
    text, frames = frames_of((DATA / "threads.tf").read_bytes())
    actions = re.search(rb"^tp A2:555555555155:(X.*)$", text, re.M).group(1).decode()
    text = add_lines(text, "tp T1:555555555155:E:0:0\n"
                           f"tp A1:555555555155:{actions}\n"
                           f"tp Z1:555555555155:at:0:4:{b'tock'.hex()}\n"
                           "tp V1:555555555155:3:1d37\n")
    frames = [as_tracepoint(f, 1) if k % 2 else f for k, f in enumerate(frames)]
    return write_trace(tmp_path / "two_tracepoints.tf", text, frames)


def test_registers_only_of_tracepoints_that_collected_them(pages, tmp_path):
    page = pages("two_tracepoints", two_tracepoints(tmp_path))
    assert_page_ran(page)
    registers = [(c["data-name"], c.get("data-tracepoint"), c["data-points"])
                 for c in chart_list(page) if c["data-kind"] == "register"]
    assert registers and all(r[1:] == ("2", "3") for r in registers), registers
    assert 'class="constants" data-tracepoint="2"' in page.dom
    assert 'class="constants" data-tracepoint="1"' not in page.dom
    assert "Registers that change, collected by tracepoint 1" not in page.dom


def test_registers_only_those_the_mask_names(pages):
    # stepping.tf's tracepoint 3 collects `step, origin` (gdb's mask: rbp, their frame base)
    # and while stepping `$rip, glob` (rip); every frame's R block holds all registers
    page = pages("stepping")
    charted = {c["data-name"] for c in chart_list(page) if c["data-kind"] == "register"}
    assert charted == {"rip"}, charted
    constants = re.search(r'<table class="constants" data-tracepoint="3">(.*?)</table>', page.dom, re.S)
    assert constants, re.findall(r"<table[^>]*>", page.dom)
    assert re.findall(r"<td>(\w+)</td><td", constants.group(1)) == ["rbp"]


def tracepoint_order(page, pattern):
    return [int(n) for n in re.findall(pattern, page.dom)]


def test_tracepoints_in_number_order(pages, tmp_path):
    stepping = pages("stepping")  # the file lists 4, 5, 3
    assert tracepoint_order(stepping, r'<tr data-tracepoint="(\d+)"') == [3, 4, 5]
    page = pages("two_tracepoints", two_tracepoints(tmp_path))  # the file lists 2, 1
    assert tracepoint_order(page, r'<tr data-tracepoint="(\d+)"') == [1, 2]
    assert tracepoint_order(page, r'data-kind="tracepoint" data-tracepoint="(\d+)"') == [1, 2]
    assert tracepoint_order(page, r"<h3>Memory collected by tracepoint (\d+)") == [1, 2]


def pointers_and_quantities(tmp_path):
    """threads.tf with three variables: $ptr, addresses on the stacks (near rsp); $mstime, a
    clock in milliseconds, and $sent, a count of bytes: both quantities in the range of user
    addresses, far from any mapping."""
    text, frames = frames_of((DATA / "threads.tf").read_bytes())
    text = add_lines(text, tsv_line(10, "ptr") + tsv_line(11, "mstime") + tsv_line(12, "sent"))
    ptr = [0x7ffff7dcde40, 0x7ffff75cce40, 0x7ffff7dcd010, 0x7ffff75cce40, 0x7ffff7dcde98, 0]
    for k in range(len(frames)):
        frames[k] = with_variables(frames[k], {10: ptr[k], 11: 1700000000000 + 37 * (k % 4),
                                               12: 70000 + 1500 * k})
    return write_trace(tmp_path / "pointers.tf", text, frames)


def test_pointers_are_not_lines(pages, tmp_path):
    page = pages("pointers", pointers_and_quantities(tmp_path))
    assert_page_ran(page)
    charts = page.charts()
    # stack, frame and TLS base pointers by their role; rbx and r15 (a pthread and a stack
    # address) and $ptr by their values
    for name in ["rsp", "rbp", "fs_base", "rbx", "r15", "$ptr"]:
        assert 'data-role="address"' in charts[name], (name, charts[name][:300])
        assert not drawn_as_line(charts[name]), name
    assert ">0x7ffff7dcde40<" in charts["$ptr"]
    for name in ["rax", "rdi", "$mstime", "$sent"]:
        assert 'data-role="quantity"' in charts[name], (name, charts[name][:300])
        assert drawn_as_line(charts[name]), name
    assert 'data-role="identifier"' in charts["eflags"]  # flag bits


@pytest.mark.parametrize("name, pointer", [("basic", "*(int64*)0x7fffffffe610"),
                                           ("fast", "*(int64*)0x7fffffffe4c0")])
def test_a_pointer_walking_an_array_is_not_a_line(pages, name, pointer):
    # traced.c's `slot` steps through `counters` (the pointer's own block, read for *slot);
    # fast.tf is built without PIE: its counters lie at 0x404060, among small quantities
    page = pages(name)
    chart = page.charts()[pointer]
    assert 'data-role="address"' in chart and not drawn_as_line(chart), chart[:300]
    assert 'data-role="quantity"' in page.charts()["*slot"]  # the integer it points at
