"""Disconnected tracing: with it on, the trace outlives gdb's connection and a new gdb
picks it up (uploading the tracepoints); with it off, losing gdb stops the trace.
"""

import pytest

from harness import DISCONNECTED, assert_in_order, printed_value

PROGRAM = "traced"
TO_MAIN = ("break main", "continue", "delete")


def test_trace_runs_on_after_detach(e2e):
    """gdb starts the trace and detaches; the program runs on, unwatched, hitting the
    tracepoint; a second gdb finds the trace running, stops it and reads its frames."""
    program = e2e.program(PROGRAM)
    stop_file = e2e.tmp / "stop"
    # 0 counted iterations: the program loops (10 ms a round) until stop_file exists.
    server = e2e.serve(program, "0", str(stop_file))
    define = e2e.command_file("trace record_hit", "actions", "collect iteration", "end")
    first = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "set disconnected-tracing on",
        "tstart",
        "detach",
        program=program,
    )
    assert_in_order(first.of("detach"), rf"^\[Inferior 1 \(process {server.inferior_pid}\) detached\]$")

    # The program prints a tick every 10 rounds: 40 rounds pass with no gdb at all.
    server.wait_for(r"^tick 40$")
    r = e2e.gdb(
        server.remote,
        "tstatus",
        "info tracepoints",
        "tstop",
        "tstatus",
        "tfind start",
        "tdump",
        "tfind 30",
        "print iteration",
        "tfind none",
        f"shell touch {stop_file}",
        "continue",
        program=program,
    )
    # Connecting, gdb learns of the running trace and takes over the target's tracepoint.
    assert_in_order(
        r.of(server.remote),
        r"^Trace is already running on the target\.$",
        r"^Created tracepoint 1 for target's tracepoint 2 at 0x[0-9a-f]+\.$",
    )
    frames = assert_in_order(
        r.of("tstatus"),
        r"^Trace is running on the target\.$",
        r"^Collected (\d+) trace frames\.$",
        r"^Trace will continue if GDB disconnects\.$",
    )[1]
    assert int(frames.group(1)) >= 40
    assert_in_order(
        r.of("info tracepoints"),
        r"^1\s+tracepoint\s+keep y\s+0x[0-9a-f]+ in record_hit at .*traced\.c:\d+$",
        r"^\s+collect iteration$",
        r"^\s+installed on target$",
    )
    assert_in_order(r.of("tstatus", 1), r"^Trace stopped by a tstop command")
    assert_in_order(r.of("tdump"), r"^Data collected at tracepoint 1, trace frame 0:$", r"^iteration = 0$")
    assert r.of("tfind 30").startswith("Found trace frame 30, tracepoint 1\n")
    assert printed_value(r.of("print iteration")) == "30"
    # The trace is stopped and the program, still whole, runs to its end.
    assert_in_order(r.of("continue"), rf"^\[Inferior 1 \(process {server.inferior_pid}\) exited normally\]$")


def test_disconnect_stops_the_trace_when_off(e2e):
    """disconnected-tracing off: the trace stops when gdb disconnects, and frames the
    program makes afterwards are not recorded."""
    program = e2e.program(PROGRAM)
    server = e2e.serve(program)
    define = e2e.command_file("trace record_hit", "actions", "collect iteration", "end")
    e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "set disconnected-tracing off",
        "break halfway",
        "tstart",
        "continue",  # record_hit 0..5 traced
        "disconnect",
        program=program,
    )
    server.wait_for(DISCONNECTED)
    r = e2e.gdb(
        server.remote,
        "tstatus",
        "break finished",
        "continue",
        "tstatus",
        "tfind 5",
        "print iteration",
        "tfind",
        program=program,
    )
    assert "Trace is already running" not in r.of(server.remote)
    assert_in_order(
        r.of("tstatus"),
        r"^Trace stopped because of disconnection\.$",
        r"^Collected 6 trace frames\.$",
        r"^Trace will stop if GDB disconnects\.$",
    )
    assert_in_order(r.of("continue"), r"Breakpoint 2, finished \(")
    assert_in_order(r.of("tstatus", 1), r"^Collected 6 trace frames\.$")
    assert printed_value(r.of("print iteration")) == "5"
    assert r.of("tfind").strip() == "No trace frame found"


@pytest.mark.tpagent_only("gdbserver leaves the stopped program stopped when gdb dies")
def test_trace_survives_gdb_being_killed(e2e):
    """disconnected-tracing on and gdb SIGKILLed while the program is stopped: the program is
    set running again, keeps tracing with no gdb, and a new gdb finds the trace running."""
    program = e2e.program(PROGRAM)
    stop_file = e2e.tmp / "stop"
    server = e2e.serve(program, "0", str(stop_file))
    define = e2e.command_file("trace record_hit", "actions", "collect iteration", "end")
    marker = e2e.tmp / "gdb-reached-the-end"
    gdb = e2e.gdb_start(
        server.remote,
        *TO_MAIN,
        define,
        "set disconnected-tracing on",
        "tstart",
        f"shell touch {marker}",
        "python import time; time.sleep(60)",
        program=program,
    )
    e2e.wait_for_file(marker)
    gdb.kill()
    server.wait_for(DISCONNECTED)
    # No gdb is attached, yet the program goes on (it prints a tick every 10 rounds).
    server.wait_for(r"^tick 30$")
    r = e2e.gdb(server.remote, "tstatus", "tstop", "tfind 20", "print iteration", f"shell touch {stop_file}",
                "continue", program=program)
    assert_in_order(r.of(server.remote), r"^Trace is already running on the target\.$")
    assert_in_order(r.of("tstatus"), r"^Trace is running on the target\.$")
    assert printed_value(r.of("print iteration")) == "20"
