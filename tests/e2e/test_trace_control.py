"""What decides whether a tracepoint collects: conditions, pass counts, enabling and
disabling during a run, tracepoints added during a run, trace state variables.

traced.c runs 10 iterations of record_hit(iteration) then other_hit(iteration); halfway()
runs after record_hit(5). Tracepoints are numbered from 2 (breakpoint 1 took gdb to main).
"""

import re
import time

import pytest

from harness import assert_in_order
from scenario import TO_MAIN, Scenario, trace, trace_to

PROGRAM = "traced"


def tracepoints_and_hits(r, walk: str) -> list[tuple[int, int]]:
    """The walk's rows as (tracepoint, iteration)."""
    return [row[1:] for row in r.frames(walk)]


def test_conditions(e2e):
    """condition N expr and trace ... if expr: only hits where it holds make frames."""
    s = Scenario(e2e, PROGRAM)
    define = s.define(
        trace("record_hit", "collect iteration"),
        "condition 2 iteration % 3 == 0",
        trace("other_hit if iteration > 7", "collect iteration"),
    )
    walk = s.walk("iteration")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), "info tracepoints", walk)
    assert r.status().collected == 6, r.status()
    assert tracepoints_and_hits(r, walk) == [(2, 0), (2, 3), (2, 6), (3, 8), (2, 9), (3, 9)]
    # Hits count only the hits whose condition held.
    assert_in_order(
        r.of("info tracepoints"),
        r"^2\s+tracepoint\s+keep y .* in record_hit ",
        r"^\s+trace only if iteration % 3 == 0$",
        r"^\s+tracepoint already hit 4 times$",
        r"^3\s+tracepoint\s+keep y .* in other_hit ",
        r"^\s+trace only if iteration > 7$",
        r"^\s+tracepoint already hit 2 times$",
    )


def test_passcount_stops_the_trace(e2e):
    """passcount 3: the third hit of tracepoint 2 is collected, then the trace stops."""
    s = Scenario(e2e, PROGRAM)
    define = s.define(
        trace("record_hit", "collect iteration"), "passcount 3 2", trace("other_hit", "collect iteration")
    )
    walk = s.walk("iteration")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstop=False), "info tracepoints", walk, "tstop")
    r.trace_stopped("by tracepoint 2", 5)
    assert_in_order(r.of("info tracepoints"), r"^\s+tracepoint already hit 3 times$", r"^\s+pass count 3 ?$")
    assert tracepoints_and_hits(r, walk) == [(2, 0), (3, 0), (2, 1), (3, 1), (2, 2)]
    assert r.of("tstop").strip() == "Trace is not running."


def test_disable_enable_and_add_during_the_run(e2e):
    """disable/enable act at once (QTDisable/QTEnable); a tracepoint set during the run is
    installed at once. Its actions come from default-collect: an actions list typed after
    the tracepoint exists is not sent until the next tstart."""
    s = Scenario(e2e, PROGRAM)
    define = s.define(trace("record_hit", "collect iteration"))
    walk = s.walk("iteration")
    r = s.gdb(
        *TO_MAIN, define, "break halfway", "break stepped if x == 7", "break finished", "tstart",
        "continue",  # to halfway: record_hit 0..5 traced
        "disable 2", "set default-collect iteration", "trace other_hit",
        "continue",  # to stepped(7): other_hit 5..7 traced
        "enable 2",
        "continue",  # to finished: record_hit and other_hit 8, 9
        "tstop", "tstatus", walk,
    )
    r.stopped_at(1, r"Breakpoint 3, halfway \(\)")
    assert_in_order(r.of("trace other_hit"), r"^Tracepoint 6 at 0x[0-9a-f]+: file .*traced\.c, line \d+\.$")
    r.stopped_at(2, r"Breakpoint 4, stepped \(x=7\)")
    assert r.status().collected == 13, r.status()
    expected = [(2, i) for i in range(6)] + [(6, 5), (6, 6), (6, 7), (2, 8), (6, 8), (2, 9), (6, 9)]
    assert tracepoints_and_hits(r, walk) == expected


def test_trace_state_variables(e2e):
    """teval updates target-side variables; tstatus/info tvariables show their current
    values, frames hold the collected ones; $trace_timestamp is offered by the target."""
    s = Scenario(e2e, PROGRAM)
    before_ns = time.monotonic_ns()
    define = s.define(
        "tvariable $count = 10",
        "tvariable $last",
        trace(
            "record_hit",
            "teval $count = $count + 1, $last = iteration * 7",
            "collect $count, $last, $trace_timestamp",
        ),
    )
    r = s.gdb(
        *TO_MAIN, "info tvariables", define, "break halfway", "break finished", "tstart",
        "continue",  # to halfway: 6 hits
        "info tvariables", "print $count", "continue", "tstop", "tstatus", "info tvariables",
        "tfind 1", "tdump", "print $trace_timestamp", "tfind 2", "print $trace_timestamp",
        "tfind 9", "print $count", "tfind none", "print $last",
    )
    # The target's own variable, uploaded when gdb connects.
    assert re.search(r"^\$trace_timestamp\s+0\s", r.of("info tvariables"), re.M), r
    assert_in_order(
        r.of(define),
        r"^Trace state variable \$count created, with initial value 10\.$",
        r"^Trace state variable \$last created, with initial value 0\.$",
    )
    assert_in_order(r.of("info tvariables", 1), r"^\$count\s+10\s+16\s*$", r"^\$last\s+0\s+35\s*$")
    assert r.value("print $count") == "16"
    assert_in_order(r.of("info tvariables", 2), r"^\$count\s+10\s+20\s*$", r"^\$last\s+0\s+63\s*$")

    r.dumped(
        2, 1,
        r"^\$count = 12$",
        r"^\$last = 7$",
        r"^\$trace_timestamp = \d+$",
    )
    after_ns = time.monotonic_ns()
    stamps = [int(r.value("print $trace_timestamp", n)) for n in (0, 1)]
    assert stamps[0] < stamps[1], stamps
    if e2e.is_gdbserver:
        # gdbserver: wall-clock microseconds, the clock of tstatus's start time.
        start, duration = map(
            float, re.search(r"Trace started at ([\d.]+) secs, stopped ([\d.]+) secs later", r.of("tstatus")).groups()
        )
        assert start - 0.001 <= stamps[0] / 1e6 <= stamps[1] / 1e6 <= start + duration + 0.001, (start, duration, stamps)
    else:
        # tpagent: the system-wide monotonic clock in nanoseconds, so hits can be timed.
        assert before_ns <= stamps[0] < stamps[1] <= after_ns, (before_ns, stamps, after_ns)
    assert r.value("print $count", 1) == "20"
    assert r.value("print $last") == "63"


@pytest.mark.tpagent_only("gdbserver answers qTP with decimal numbers, which gdb reads as hex")
def test_hit_count_is_hex_on_the_wire(e2e):
    """10 hits must show as 10 (gdbserver's "V10:..." reads as 16)."""
    s = Scenario(e2e, PROGRAM)
    define = s.define(trace("record_hit", "collect iteration"))
    # gdb asks for hit counts (qTP) only at tstatus.
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstop=False), "info tracepoints")
    assert_in_order(r.of("info tracepoints"), r"^\s+tracepoint already hit 10 times$")
