"""--attach: debug a process that is already running, then let it go."""

import re

import pytest

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


def test_attach_after_comm(e2e):
    """`COMM --attach PID`, the order gdb's own testsuite writes (and gdbserver takes), with
    another option after COMM too."""
    ready, report = e2e.tmp / "ready", e2e.tmp / "report"
    target = e2e.spawn(str(e2e.program(PROGRAM)), str(ready), str(report))
    e2e.wait_for_file(ready)
    s = Scenario(e2e, PROGRAM, server=e2e.serve_attach(target.pid, "--once", after_comm=True))
    r = s.gdb("print magic", "set var stop_now = 1", "detach")
    assert r.of("print magic").strip() == "$1 = 4660"
    assert target.wait(timeout=20) == 0
    assert s.server.wait_exit() == 0


def test_attach_to_a_process_another_tracer_holds(e2e):
    """A process another debugger traces cannot be attached to: the server says which one
    holds it, in gdb's words, and ends."""
    holder = Scenario(e2e, PROGRAM, str(e2e.tmp / "ready"), str(e2e.tmp / "report"))
    pid, tracer = holder.pid, holder.server.pid
    server = e2e.start_server("--attach", ":0", str(pid))
    assert server.wait_exit() == 1, server.output
    assert_in_order(server.output,
                    rf"^Cannot attach to process {pid}: Operation not permitted \(1\), "
                    rf"process {pid} is already traced by process {tracer}$", r"^Exiting$")


@pytest.mark.tpagent_only("gdbserver has no --save-dir")
def test_attach_with_options_between_comm_and_pid(e2e):
    """`--attach COMM --save-dir DIR PID`: the option after COMM is taken as one, and PID is
    still found."""
    ready, report = e2e.tmp / "ready", e2e.tmp / "report"
    target = e2e.spawn(str(e2e.program(PROGRAM)), str(ready), str(report))
    e2e.wait_for_file(ready)
    server = e2e._listening(
        e2e.start_server("--attach", ":0", "--save-dir", str(e2e.tmp), str(target.pid)))
    s = Scenario(e2e, PROGRAM, server=server)
    r = s.gdb("print magic", "set var stop_now = 1", "detach")
    assert r.of("print magic").strip() == "$1 = 4660"
    assert target.wait(timeout=20) == 0
