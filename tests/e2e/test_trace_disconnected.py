"""Disconnected tracing: with it on, the trace outlives gdb's connection and a new gdb
picks it up (uploading the tracepoints); with it off, losing gdb stops the trace. The
scenarios are shared.py's, which tests/arm64 runs too.
"""

import pytest

import shared
from scenario import Scenario

PROGRAM = "traced"


def looping(e2e) -> tuple[Scenario, str]:
    """traced.c with 0 counted iterations: it loops (10 ms a round, a tick printed every 10)
    until the file it is given exists. The scenario, and the command creating the file."""
    stop_file = e2e.tmp / "stop"
    return Scenario(e2e, PROGRAM, "0", str(stop_file)), f"shell touch {stop_file}"


def test_trace_runs_on_after_detach(e2e):
    """gdb starts the trace and detaches; a second gdb finds it running and reads it."""
    shared.trace_runs_on_after_detach(*looping(e2e))


def test_disconnect_stops_the_trace_when_off(e2e):
    """disconnected-tracing off: the trace stops when gdb disconnects."""
    shared.disconnect_stops_the_trace_when_off(Scenario(e2e, PROGRAM))


def test_trace_survives_gdb_being_killed(e2e):
    """disconnected-tracing on and gdb SIGKILLed while the program is stopped: the program
    stays stopped and the trace running; a new gdb finds both."""
    shared.trace_survives_gdb_being_killed(*looping(e2e))


def test_disconnect_leaves_the_program_where_it_stopped(e2e):
    """disconnected-tracing on, the program stopped at a breakpoint, gdb's `disconnect`: the
    next gdb finds it stopped there and the trace running."""
    shared.disconnect_leaves_the_program_where_it_stopped(*looping(e2e))
