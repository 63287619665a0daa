"""The demo end to end (scripts/demo.py on the build tree under test, TPAGENT_BUILD_DIR): the
gdb tracing session it shows, tpdump's print-out, and its HTML report checked in headless
Chromium (the tracepoints' and the threads' timeline rows, named plots, a screenshot with the
plots drawn). Run by ctest as `demo`."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TPAGENT_BUILD_DIR", ROOT / "build" / "default"))
os.environ.setdefault("TPDUMP", str(BUILD / "bin" / "tpdump"))
sys.path.insert(0, str(ROOT / "tools" / "tpdump"))

from html_page import Page, assert_page_ran, assert_plots_drawn, chromium_found  # noqa: E402


def in_order(text: str, *patterns: str) -> None:
    pos = 0
    for pattern in patterns:
        match = re.compile(pattern, re.M).search(text, pos)
        assert match, f"{pattern!r} not found after offset {pos} in:\n{text}"
        pos = match.end()


@pytest.fixture(scope="module")
def demo():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py"), str(BUILD)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_the_session_traces(demo):
    in_order(
        demo,
        r"^== Start tpagent with the in-process agent",
        r"^Listening on port \d+$",
        r"^Tracepoint 2 at 0x[0-9a-f]+: file .*demo\.c",
        r"^Fast tracepoint 3 at 0x[0-9a-f]+: file .*demo\.c",
        r"^\(gdb\) tstart$",
        r"^Collected (\d+) trace frames\.$",
        r"^\s+tracepoint already hit 80 times$",  # the trap tracepoint: every sample
        r"^Found trace frame 0, tracepoint 2$",
        r"^rip\s+0x[0-9a-f]+\s+0x[0-9a-f]+ <add_sample\+\d+>$",
        r"^\*st = \{count = \d+, sum = \d+, min = -?\d+, max = -?\d+\}$",
        r"^\$trace_thread = \d+$",
        r"^Found trace frame \d+, tracepoint 3$",
        r"^Data collected at tracepoint 3, trace frame \d+:$",
        r"^value = (4[1-9])$",  # the condition: value > 40
        r"^s->stats = \{count = ",
        r"^\(gdb\) tsave -r .*demo\.tf$",
        r"exited normally",
        r"^readings=80$",
        r"^== tpdump: the trace file",
        r"^fast tracepoint 3 at 0x[0-9a-f]+, enabled, \d+ hits",
        r"^tracepoint 2 at 0x[0-9a-f]+, enabled, 80 hits",
        r"^frame 0: tracepoint 2 \(add_sample\)",
        r"^demo finished$",
    )


@pytest.mark.skipif(not chromium_found(), reason="no Chromium (set CHROMIUM)")
def test_the_report_shows_the_trace(demo, tmp_path):
    page = Page(BUILD / "examples" / "demo.tf", tmp_path)
    assert page.html == (BUILD / "examples" / "demo.html").read_text()  # what the demo wrote
    assert_page_ran(page)
    rows = page.timeline_rows("tracepoint")
    assert rows["2"] == 80 and rows["3"] > 0, rows
    threads = page.timeline_rows("thread")
    assert len(threads) == 2 and sum(threads.values()) == 80 + rows["3"], threads
    assert {"$trace_thread", "readings_seen", "value", "rdi", "rsi"} <= set(page.charts()), list(page.charts())
    assert_plots_drawn(page)
