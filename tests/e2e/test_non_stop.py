"""Non-stop mode (`set non-stop on`): a thread that stops, stops alone; the others run on
while gdb looks at it, and gdb resumes, stops and steps threads one by one. gdb is typed at
on a terminal (stops come in while it waits at its prompt). Runs against both stubs.

non_stop.c: two workers count in counters[] (tick, then tock, each millisecond) until
stop_flag is set; main stops at all_started() once they run."""

import re
import time

import pytest

from harness import DISCONNECTED, assert_in_order, printed_value
from interactive import InteractiveGdb
from scenario import FastTrace, Scenario, ftrace, parse_tfind, parse_tstatus, trace

# How gdb names the program's threads (the non-PIE build's file name has "-nopie").
THREAD = r'Thread (\d+) "non_stop(?:-nopie)?"'
STOPPED_AT_ALL_STARTED = THREAD + r" hit Breakpoint 1, all_started \(\)"


def non_stop_session(e2e, s: Scenario):
    """gdb in non-stop mode connected to S (non_stop.c), main stopped at all_started() and
    the workers running."""
    gdb = InteractiveGdb(e2e, s.program, "set non-stop on")
    try:
        gdb.run(s.connect)
        gdb.run("break all_started")
        gdb.run("continue", until=STOPPED_AT_ALL_STARTED)
        # A worker just made may not be listed yet (its first stop still to be seen).
        deadline = time.monotonic() + 10
        while len(re.findall(r"^\*?\s+\d+\s+Thread ", gdb.run("info threads"), re.M)) < 3:
            assert time.monotonic() < deadline, "the workers never showed up"
            time.sleep(0.1)
        yield s, gdb
    finally:
        gdb.quit()


@pytest.fixture
def gdb_non_stop(e2e):
    yield from non_stop_session(e2e, Scenario(e2e, "non_stop"))


@pytest.fixture
def gdb_non_stop_fast(e2e):
    yield from non_stop_session(e2e, FastTrace(e2e, "non_stop"))


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
    gdb.expect(THREAD + r" stopped\.")
    gdb.expect(THREAD + r" stopped\.")
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
    gdb.expect(THREAD + r" hit Breakpoint 2, tick \(id=[01]\)")
    gdb.expect(THREAD + r" hit Breakpoint 2, tick \(id=[01]\)")
    assert running_threads(gdb) == []
    gdb.run("delete 2")
    gdb.run("thread 2")
    line = s.line("tick")
    frame = gdb.run("next")
    assert re.search(rf"^{line + 1}\s+counters\[id\]\+\+;$", frame, re.M), frame  # thread 2 only
    where = gdb.run("thread apply 2 3 frame")
    assert_in_order(
        where,
        rf"Thread 2 .*\n#0 +tick \(id=\d\) at .*non_stop\.c:{line + 1}\n",
        rf"Thread 3 .*\n#0 +tick \(id=\d\) at .*non_stop\.c:{line}\n",
    )
    # Thread 3 goes on alone from the breakpoint's address (gdb steps it over the breakpoint
    # location while the others keep their places).
    stopped = counter(gdb, 0) + counter(gdb, 1)
    gdb.run("thread 3")
    gdb.run("continue &")
    time.sleep(0.3)
    assert counter(gdb, 0) + counter(gdb, 1) > stopped
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
    assert status.running and status.frames, status.text
    assert running_threads(gdb) == ["2", "3"]
    # A tracepoint added during the run (InstallInTrace), the workers still running.
    gdb.run(s.define(trace("tock")))
    time.sleep(0.3)
    gdb.run("tstop")
    status = parse_tstatus(gdb.run("tstatus"))
    assert status.stopped == "by a tstop command" and status.frames, status.text
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


def test_gdb_leaves_while_threads_run(gdb_non_stop):
    """gdb disconnects with the workers running: the program is all-stop again, every
    thread stopped, for the next gdb (an all-stop one), which runs it to its end."""
    s, gdb = gdb_non_stop
    gdb.run("disconnect")
    s.server.wait_for(DISCONNECTED)
    r = s.gdb(
        "info threads", "print counters[0] + counters[1]", "shell sleep 0.3",
        "print counters[0] + counters[1]", "delete", "print stop_flag = 1", "continue",
    )
    threads = re.findall(r"^\*?\s+\d+\s+Thread \S+ .*$", r.of("info threads"), re.M)
    assert len(threads) == 3 and not any("(running)" in t for t in threads), r.of("info threads")
    assert r.of("print counters[0] + counters[1]", 0) == r.of("print counters[0] + counters[1]", 1).replace("$2", "$1")
    assert_in_order(r.of("continue"), r"\[Inferior 1 \(process \d+\) exited normally\]")


def test_disconnected_tracing_goes_on_after_a_detach(gdb_non_stop):
    """disconnected-tracing on, a trace running, gdb detaches: every thread runs and the
    trace goes on collecting, for the next gdb (all-stop) to see."""
    s, gdb = gdb_non_stop
    gdb.run("set disconnected-tracing on")
    gdb.run(s.define(trace("tick", "collect id")))
    gdb.run("tstart")
    gdb.run("detach")
    time.sleep(0.5)
    # (The next gdb stops the program as it connects: the frames are those of the time
    # without gdb, about 1000 in 0.5 s; a handful if the program had stayed stopped.)
    r = s.gdb("tstatus", "tstop", "delete", "print stop_flag = 1", "continue")
    status = r.status()
    assert status.running and status.frames > 40, status.text
    assert_in_order(r.of("continue"), r"\[Inferior 1 \(process \d+\) exited normally\]")


def test_disconnected_tracing_goes_on_after_a_disconnect_with_threads_running(gdb_non_stop):
    """disconnected-tracing on, a trace running and the workers running, gdb disconnects: the
    program runs on (as with gdbserver, which leaves running threads running) and the trace
    goes on collecting."""
    s, gdb = gdb_non_stop
    gdb.run("set disconnected-tracing on")
    gdb.run(s.define(trace("tick", "collect id")))
    gdb.run("tstart")
    gdb.run("disconnect")
    s.server.wait_for(DISCONNECTED)
    time.sleep(0.5)
    r = s.gdb("tstatus", "tstop", "delete", "print stop_flag = 1", "continue")
    status = r.status()
    assert status.running and status.frames > 40, status.text
    assert_in_order(r.of("continue"), r"\[Inferior 1 \(process \d+\) exited normally\]")


@pytest.mark.tpagent_only("with gdbserver the workers die of SIGSEGV in tick() once tstart wrote the jump")
def test_fast_tracing_while_threads_run(gdb_non_stop_fast):
    """The same with a fast tracepoint: its jump is written while the workers are paused,
    and taken out at tstop the same way."""
    s, gdb = gdb_non_stop_fast
    gdb.run(s.define(ftrace(s.at("tick"), "collect id")))
    assert gdb.run("tstart").strip() == ""
    time.sleep(0.3)
    status = parse_tstatus(gdb.run("tstatus"))
    assert status.running and status.frames, status.text
    assert running_threads(gdb) == ["2", "3"]
    gdb.run("tstop")
    status = parse_tstatus(gdb.run("tstatus"))
    assert status.stopped == "by a tstop command", status.text
    found = parse_tfind(gdb.run("tfind start"))
    assert found and found[1] == 2, found
    assert printed_value(gdb.run("print id")) in ("0", "1")
    gdb.run("tfind none")
    finish(s, gdb)


def test_all_stop_over_non_stop_protocol(e2e):
    """`maint set target-non-stop on`: gdb shows all-stop, speaking non-stop to the stub and
    stopping the other threads itself (vCont;t) whenever one stops."""
    s = Scenario(e2e, "non_stop")
    sum_ = "print counters[0] + counters[1]"
    r = e2e.gdb(
        "maint set target-non-stop on", s.connect, "break all_started", "continue", "info threads",
        sum_, "shell sleep 0.3", sum_, f"break {s.at('tick')}", "continue", "delete",
        "print stop_flag = 1", "continue", program=s.program,
    )
    assert_in_order(r.of("continue"), STOPPED_AT_ALL_STARTED)
    assert "(running)" not in r.of("info threads"), r.of("info threads")
    assert printed_value(r.of(sum_, 0)) == printed_value(r.of(sum_, 1))
    assert_in_order(r.of("continue", 1), THREAD + r" hit Breakpoint 2, tick \(id=[01]\)")
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")


def test_attach_in_non_stop_mode(e2e):
    """gdb in non-stop mode connects to a running program the server attached to: the main
    thread is stopped, the others run (gdb was told of no stop of theirs); the program ends
    once gdb has set its flag and resumed it."""
    target = e2e.spawn(str(e2e.program("non_stop")))
    s = Scenario.attach(e2e, "non_stop", target.pid)
    gdb = InteractiveGdb(e2e, s.program, "set non-stop on")
    try:
        gdb.run(s.connect)
        assert running_threads(gdb) == ["2", "3"]
        before = counter(gdb, 0)
        time.sleep(0.3)
        assert counter(gdb, 0) > before
        gdb.run("print stop_flag = 1")
        gdb.run("continue -a &")
        gdb.expect(r"\[Inferior 1 \(process \d+\) exited normally\]", timeout=30)
    finally:
        gdb.quit()
