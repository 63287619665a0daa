"""Non-stop mode (`set non-stop on`): a thread that stops, stops alone; the others run on
while gdb looks at it, and gdb resumes, stops and steps threads one by one. gdb is typed at
on a terminal (stops come in while it waits at its prompt). Runs against both stubs.

non_stop.c: two workers count in counters[] (tick, then tock, each millisecond) until
stop_flag is set; main stops at all_started() once they run."""

import re
import time

import pytest

from harness import assert_in_order, printed_value
from interactive import InteractiveGdb
from scenario import Scenario, parse_tfind, parse_tstatus, trace

STOPPED_AT_ALL_STARTED = r'Thread 1 "non_stop" hit Breakpoint 1, all_started \(\)'


@pytest.fixture
def gdb_non_stop(e2e):
    """A Scenario for non_stop.c and gdb in non-stop mode connected to it, main stopped at
    all_started() and the workers running."""
    s = Scenario(e2e, "non_stop")
    gdb = InteractiveGdb(e2e, s.program, "set non-stop on")
    try:
        gdb.run(s.connect)
        gdb.run("break all_started")
        gdb.run("continue", until=STOPPED_AT_ALL_STARTED + r"(.|\n)*\(gdb\) $")
        yield s, gdb
    finally:
        gdb.quit()


def counter(gdb, n: int) -> int:
    return int(re.search(r"\$\d+ = (\d+)", gdb.run(f"print counters[{n}]")).group(1))


def running_threads(gdb) -> list[str]:
    return re.findall(r"^\*?\s+(\d+)\s+Thread \S+ .*\(running\)$", gdb.run("info threads"), re.M)


def finish(s, gdb):
    """The program ends normally: stop_flag set, every thread resumed."""
    gdb.run("delete")
    gdb.run("print stop_flag = 1")
    gdb.run("continue -a &")
    gdb.expect(r"\[Inferior 1 \(process \d+\) exited normally\]", timeout=30)
    s.server.wait_for(r"^counters \d+ \d+$")


def test_others_run_while_one_thread_is_stopped(gdb_non_stop):
    s, gdb = gdb_non_stop
    assert running_threads(gdb) == ["2", "3"]
    before = counter(gdb, 0)
    time.sleep(0.3)
    assert counter(gdb, 0) > before  # memory read while the thread that writes it runs
    # interrupt -a: every running thread stops, each reporting its own stop.
    gdb.run("interrupt -a")
    gdb.expect(r'Thread [23] "non_stop" stopped\.')
    gdb.expect(r'Thread [23] "non_stop" stopped\.')
    assert running_threads(gdb) == []
    stopped = counter(gdb, 0)
    time.sleep(0.2)
    assert counter(gdb, 0) == stopped
    # One thread resumed alone: its counter moves, the other's does not.
    other = counter(gdb, 1)
    gdb.run("thread 2")
    gdb.run("continue &")
    time.sleep(0.3)
    assert running_threads(gdb) == ["2"]
    moved = [counter(gdb, 0) != stopped, counter(gdb, 1) != other]
    assert sorted(moved) == [False, True], moved
    finish(s, gdb)


def test_workers_hit_a_breakpoint_and_step_alone(gdb_non_stop):
    """Both workers stop at a breakpoint while main stays stopped elsewhere: two stops
    reported in turn (the second after gdb's vStopped). One worker steps while the other
    stays at the breakpoint; then they go on past it."""
    s, gdb = gdb_non_stop
    gdb.run(f"break {s.at('tick')}")
    gdb.expect(r'Thread ([23]) "non_stop" hit Breakpoint 2, tick \(id=[01]\)')
    gdb.expect(r'Thread ([23]) "non_stop" hit Breakpoint 2, tick \(id=[01]\)')
    assert running_threads(gdb) == []
    gdb.run("delete 2")
    gdb.run("thread 2")
    frame = gdb.run("next")
    assert re.search(r"^\d+\s+\}$", frame, re.M), frame  # tick's last line, in thread 2 only
    where = gdb.run("thread apply 2 3 frame")
    assert_in_order(where, r"Thread 2 .*\n#0 +tick \(id=\d\) at .*non_stop\.c:\d+", r"Thread 3 .*\n#0 +tick \(id=\d\) at .*non_stop\.c:" + str(s.line("tick")))
    # Thread 3 goes on alone from the breakpoint's address (gdb steps it over the breakpoint
    # location while the others keep their places).
    stopped = counter(gdb, 0) + counter(gdb, 1)
    gdb.run("thread 3")
    gdb.run("continue &")
    time.sleep(0.3)
    assert counter(gdb, 0) + counter(gdb, 1) > stopped + 10
    assert running_threads(gdb) == ["3"]
    finish(s, gdb)


def test_tracing_while_threads_run(gdb_non_stop):
    """A trace run started, extended and stopped while the workers run; its frames are read
    back with tfind, as in all-stop."""
    s, gdb = gdb_non_stop
    gdb.run(s.define(trace("tick", "collect id")))
    gdb.run("tstart")
    time.sleep(0.3)
    status = parse_tstatus(gdb.run("tstatus"))
    assert status.running and status.frames and status.frames > 10, status.text
    assert running_threads(gdb) == ["2", "3"]
    # A tracepoint added during the run (InstallInTrace), the workers still running.
    gdb.run(s.define(trace("tock")))
    time.sleep(0.3)
    gdb.run("tstop")
    status = parse_tstatus(gdb.run("tstatus"))
    assert status.stopped == "by a tstop command" and status.frames > 20, status.text
    assert running_threads(gdb) == ["2", "3"]
    found = parse_tfind(gdb.run("tfind tracepoint 2"))
    assert found and found[1] == 2, found
    assert printed_value(gdb.run("print id")) in ("0", "1")
    # (gdb sends a tracepoint made during a run as it is made, before its actions: it
    # collects nothing but its hits.)
    found = parse_tfind(gdb.run("tfind tracepoint 3"))
    assert found and found[1] == 3, found
    gdb.run("tfind none")
    finish(s, gdb)
