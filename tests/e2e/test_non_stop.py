"""Non-stop mode (`set non-stop on`): a thread that stops, stops alone; the others run on
while gdb looks at it, and gdb resumes, stops and steps threads one by one. gdb is typed at
on a terminal (stops come in while it waits at its prompt). Runs against both stubs.

non_stop.c: two workers count in counters[] (tick, then tock, each millisecond) until
stop_flag is set; main stops at all_started() once they run."""

import re
import time

import pytest

from harness import assert_in_order
from interactive import InteractiveGdb
from scenario import Scenario

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
        gdb.run("continue", until=STOPPED_AT_ALL_STARTED)
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
