"""--attach: debug a process that is already running, then let it go."""

import re

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "attachee"


def attached(e2e):
    """attachee started outside any debugger, in its loop (not in the dynamic loader), and a
    server attached to it. The scenario, the process and the file it reports to."""
    ready, report = e2e.tmp / "ready", e2e.tmp / "report"
    target = e2e.spawn(str(e2e.program(PROGRAM)), str(ready), str(report))
    e2e.wait_for_file(ready)
    return Scenario.attach(e2e, PROGRAM, target.pid), target, report


def test_attach_print_set_detach(e2e):
    s, target, report = attached(e2e)
    r = s.gdb("print magic", "print loops > 0", "set var magic = 99", "set var stop_now = 1", "detach")
    assert r.of("print magic").strip() == "$1 = 4660"
    assert r.of("print loops > 0").strip() == "$2 = 1"
    assert_in_order(r.of("detach"), rf"\[Inferior 1 \(process {target.pid}\) detached\]")

    # Detached, the process runs on, sees stop_now and leaves normally with our magic.
    assert target.wait(timeout=20) == 0
    assert re.fullmatch(r"stopped after \d+ loops, magic=99\n", report.read_text())
    # Nothing left to debug: the server ends.
    assert s.server.wait_exit() == 0


def test_attach_then_continue_to_exit(e2e):
    """After attaching, gdb owns the process: resume it and watch it exit."""
    s, target, report = attached(e2e)
    r = s.gdb("set var stop_now = 1", "continue")
    assert_in_order(r.of("continue"), rf"\[Inferior 1 \(process {target.pid}\) exited normally\]")
    assert report.read_text().endswith("magic=4660\n")
    assert s.server.wait_exit() == 0
