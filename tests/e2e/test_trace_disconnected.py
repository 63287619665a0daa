"""Disconnected tracing: with it on, the trace outlives gdb's connection and a new gdb
picks it up (uploading the tracepoints); with it off, losing gdb stops the trace.
"""

import pytest

from harness import DISCONNECTED, assert_in_order
from scenario import TO_MAIN, Scenario, trace

PROGRAM = "traced"


def looping(e2e) -> tuple[Scenario, str]:
    """traced.c with 0 counted iterations: it loops (10 ms a round, a tick printed every 10)
    until the file it is given exists. The scenario, and the command creating the file."""
    stop_file = e2e.tmp / "stop"
    return Scenario(e2e, PROGRAM, "0", str(stop_file)), f"shell touch {stop_file}"


def test_trace_runs_on_after_detach(e2e):
    """gdb starts the trace and detaches; the program runs on, unwatched, hitting the
    tracepoint; a second gdb finds the trace running, stops it and reads its frames."""
    s, stop = looping(e2e)
    define = s.define(trace("record_hit", "collect iteration"))
    first = s.gdb(*TO_MAIN, define, "set disconnected-tracing on", "tstart", "detach")
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {s.pid}\) detached\]$")

    # 40 rounds pass with no gdb at all.
    s.server.wait_for(r"^tick 40$")
    r = s.gdb(
        "tstatus", "info tracepoints", "tstop", "tstatus",
        "tfind start", "tdump", "tfind 30", "print iteration", "tfind none", stop, "continue",
    )
    # Connecting, gdb learns of the running trace and takes over the target's tracepoint.
    assert_in_order(
        r.of(s.connect),
        r"^Trace is already running on the target\.$",
        r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$",
    )
    running = r.status()
    assert (running.running, running.on_disconnect) == (True, "continue"), running
    assert running.collected >= 40
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in record_hit at .*traced\.c:\d+$",
        r"^\s+collect iteration$",
        r"^\s+installed on target$",
    )
    assert r.status(1).stopped == "by a tstop command", r.status(1)
    r.dumped(1, 0, r"^iteration = 0$")
    assert r.found("tfind 30") == (30, 1)
    assert r.value("print iteration") == "30"
    # The trace is stopped and the program, still whole, runs to its end.
    s.exited(r.of("continue"), 0)


def test_disconnect_stops_the_trace_when_off(e2e):
    """disconnected-tracing off: the trace stops when gdb disconnects, and frames the
    program makes afterwards are not recorded."""
    s = Scenario(e2e, PROGRAM)
    define = s.define(trace("record_hit", "collect iteration"))
    s.gdb(
        *TO_MAIN, define, "set disconnected-tracing off", "break halfway", "tstart",
        "continue",  # record_hit 0..5 traced
        "disconnect",
    )
    s.server.wait_for(DISCONNECTED)
    r = s.gdb("tstatus", "break finished", "continue", "tstatus", "tfind 5", "print iteration", "tfind")
    assert "Trace is already running" not in r.of(s.connect)
    status = r.status()
    assert (status.stopped, status.collected, status.on_disconnect) == ("because of disconnection", 6, "stop"), status
    assert_in_order(r.of("continue"), r"Breakpoint 2, finished \(")
    assert r.status(1).collected == 6, r.status(1)
    assert r.value("print iteration") == "5"
    assert r.found("tfind") is None


@pytest.mark.tpagent_only("gdbserver leaves the stopped program stopped when gdb dies")
def test_trace_survives_gdb_being_killed(e2e):
    """disconnected-tracing on and gdb SIGKILLed while the program is stopped: the program is
    set running again, keeps tracing with no gdb, and a new gdb finds the trace running."""
    s, stop = looping(e2e)
    define = s.define(trace("record_hit", "collect iteration"))
    s.gdb_killed_after(*TO_MAIN, define, "set disconnected-tracing on", "tstart")
    s.server.wait_for(DISCONNECTED)
    # No gdb is attached, yet the program goes on (it prints a tick every 10 rounds).
    s.server.wait_for(r"^tick 30$")
    r = s.gdb("tstatus", "tstop", "tfind 20", "print iteration", stop, "continue")
    assert_in_order(r.of(s.connect), r"^Trace is already running on the target\.$")
    assert r.status().running, r.status()
    assert r.value("print iteration") == "20"
