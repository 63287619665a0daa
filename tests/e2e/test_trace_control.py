"""What decides whether a tracepoint collects: conditions, pass counts, enabling and
disabling during a run, tracepoints added during a run, trace state variables.

traced.c runs 10 iterations of record_hit(iteration) then other_hit(iteration); halfway()
runs after record_hit(5). Tracepoints are numbered from 2 (breakpoint 1 took gdb to main).
Most scenarios are shared.py's, which tests/arm64 runs too.
"""


import pytest

from harness import assert_in_order
import shared
from scenario import TO_MAIN, Scenario, trace, trace_to

PROGRAM = "traced"


def test_conditions(e2e):
    """condition N expr and trace ... if expr: only hits where it holds make frames."""
    r = shared.conditions(Scenario(e2e, PROGRAM))
    shared.conditions_counted(r, r"^\s+trace only if iteration > 7$", r"^\s+tracepoint already hit 2 times$")


def test_passcount_stops_the_trace(e2e):
    """passcount 3: the third hit of tracepoint 2 is collected, then the trace stops."""
    shared.passcount_stops_the_trace(Scenario(e2e, PROGRAM))


def test_disable_enable_and_add_during_the_run(e2e):
    """disable/enable act at once; a tracepoint set during the run is installed at once."""
    shared.disable_enable_and_add_during_the_run(Scenario(e2e, PROGRAM))


def test_trace_state_variables(e2e):
    """teval, tstatus/info tvariables, collected values; $trace_timestamp (wall-clock
    microseconds, as gdbserver's)."""
    shared.trace_state_variables(Scenario(e2e, PROGRAM))


@pytest.mark.tpagent_only("gdbserver answers qTP with decimal numbers, which gdb reads as hex")
def test_hit_count_is_hex_on_the_wire(e2e):
    """10 hits must show as 10 (gdbserver's "V10:..." reads as 16)."""
    s = Scenario(e2e, PROGRAM)
    define = s.define(trace("record_hit", "collect iteration"))
    # gdb asks for hit counts (qTP) only at tstatus.
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstop=False), "info tracepoints")
    assert_in_order(r.of("info tracepoints"), r"^\s+tracepoint already hit 10 times$")
