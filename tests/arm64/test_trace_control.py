"""What decides whether a tracepoint collects, on the arm64 board, against each stub:
conditions, pass counts (the trace stopped by tracepoint N, the program still right),
a full linear buffer, disable/enable and a tracepoint added during the run, trace state
variables with teval and $trace_timestamp.

traced.c runs 10 iterations of record_hit(iteration) then other_hit(iteration); halfway()
runs after record_hit(5). passcount.c calls traced(i) ITERATIONS times (in THREADS threads
at once when asked) and says "right" when every value came out right. Tracepoints are
numbered from 2 (breakpoint 1 took gdb to main).
"""

import re

import pytest

from harness import assert_in_order
from scenario import TO_MAIN, trace, trace_to
from board import BoardScenario

PROGRAM = "traced"


def tracepoints_and_hits(r, walk: str) -> list[tuple[int, int]]:
    """The walk's rows as (tracepoint, iteration)."""
    return [row[1:] for row in r.frames(walk)]


def test_conditions(arm64):
    """condition N expr and trace ... if expr: only hits where it holds make frames."""
    s = BoardScenario(arm64, PROGRAM)
    define = s.define(
        trace("record_hit", "collect iteration"),
        "condition 2 iteration % 3 == 0",
        trace("other_hit if iteration > 7", "collect iteration"),
    )
    walk = s.walk("iteration")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished"), walk)
    assert r.status().collected == 6, r.status()
    assert tracepoints_and_hits(r, walk) == [(2, 0), (2, 3), (2, 6), (3, 8), (2, 9), (3, 9)]


@pytest.mark.tpagent_only("gdbserver answers qTP with decimal numbers, which gdb reads as hex")
def test_hit_counts(arm64):
    """Hits count only the hits whose condition held: 4 and 2 (gdbserver's 'V4:'... would
    read right here, but 10 hits read as 16)."""
    s = BoardScenario(arm64, PROGRAM)
    define = s.define(
        trace("record_hit", "collect iteration"),
        "condition 2 iteration % 3 == 0",
        trace("other_hit", "collect iteration"),
    )
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstop=False), "info tracepoints")
    assert_in_order(
        r.of("info tracepoints"),
        r"^2\s+tracepoint\s+keep y .* in record_hit ",
        r"^\s+trace only if iteration % 3 == 0$",
        r"^\s+tracepoint already hit 4 times$",
        r"^3\s+tracepoint\s+keep y .* in other_hit ",
        r"^\s+tracepoint already hit 10 times$",
    )


def test_passcount_stops_the_trace(arm64):
    """passcount 3: the third hit of tracepoint 2 is collected, then the trace stops."""
    s = BoardScenario(arm64, PROGRAM)
    define = s.define(
        trace("record_hit", "collect iteration"), "passcount 3 2", trace("other_hit", "collect iteration")
    )
    walk = s.walk("iteration")
    r = s.gdb(*TO_MAIN, define, *trace_to("finished", tstop=False), "info tracepoints", walk, "tstop")
    r.trace_stopped("by tracepoint 2", 5)
    assert_in_order(r.of("info tracepoints"), r"^\s+tracepoint already hit 3 times$", r"^\s+pass count 3 ?$")
    assert tracepoints_and_hits(r, walk) == [(2, 0), (3, 0), (2, 1), (3, 1), (2, 2)]
    assert r.of("tstop").strip() == "Trace is not running."


def program_right(s: BoardScenario, text: str, iterations: int, threads: int = 1) -> None:
    """passcount.c ran to its end and says its values are right."""
    each = iterations * (iterations - 1) // 2
    s.exited(text, 0)
    s.server.wait_for(rf"^hits={threads * iterations} total={threads * each} sum={3 * threads * each} right$")


@pytest.mark.parametrize("threads", [1, 4])
def test_passcount_stop_leaves_the_program_right(arm64, threads):
    """passcount 5 stops the trace during the fifth hit (the tracepoint removed while a
    thread is stopped on it); that thread, and any other already trapped there, runs the
    original instruction exactly once: every value the program computes stays right."""
    iterations = 10 if threads == 1 else 30
    s = BoardScenario(arm64, "passcount", str(iterations), str(threads))
    define = s.define(trace("traced", "collect n"), "passcount 5 2")
    r = s.gdb(
        *TO_MAIN, define, "break finished", "tstart", "continue", "tstatus",
        "print hits", "print total", "tfind 4", "print n", "tfind none", "delete", "continue",
    )
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    assert r.status().stopped == "by tracepoint 2", r.status()
    assert r.status().collected == 5 if threads == 1 else r.status().collected >= 5, r.status()
    assert r.value("print hits") == str(iterations * threads)
    assert r.value("print total") == str(threads * iterations * (iterations - 1) // 2)
    assert r.found("tfind 4") == (4, 2)
    if threads == 1:
        assert r.value("print n") == "4"
    program_right(s, r.of("continue", 2), iterations, threads)


def test_full_buffer_stops_the_trace(arm64):
    """A linear buffer of 8 KiB, 1 KiB collected per hit: a hit that finds the buffer full
    stops the trace; the program runs on untraced, and right."""
    iterations, buffer_size = 30, 8192
    s = BoardScenario(arm64, "passcount", str(iterations))
    define = s.define(trace("traced", "collect n, block"))
    r = s.gdb(
        *TO_MAIN, define, f"set trace-buffer-size {buffer_size}", "set circular-trace-buffer off",
        "break finished", "tstart", "continue", "tstatus", "print hits",
        "tfind start", "print n", "print block[1023]", "tfind 1", "print n", "print block[5]",
        "tfind none", "delete", "continue",
    )
    r.stopped_at(1, r"Breakpoint 3, finished \(\)")
    assert r.status().stopped == "because the buffer was full", r.status()
    # Each frame holds the block and a register block (the stub's size of the registers).
    assert 2 < r.status().collected < 8, r.status()
    assert r.value("print hits") == str(iterations)
    assert r.found("tfind start") == (0, 2)
    assert r.value("print n") == "0"
    assert r.value("print block[1023]") == "0 '\\000'"  # before the first fill
    assert r.value("print n", 1) == "1"
    assert r.value("print block[5]") == "5 '\\005'"  # filled by traced(0): 0 + 5
    program_right(s, r.of("continue", 2), iterations)


def test_disable_enable_and_add_during_the_run(arm64):
    """disable/enable act at once; a tracepoint set during the run is installed at once
    (its actions from default-collect)."""
    s = BoardScenario(arm64, PROGRAM)
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


def test_trace_state_variables(arm64):
    """teval updates target-side variables; tstatus/info tvariables show their current
    values, frames hold the collected ones; $trace_timestamp is offered by the target."""
    s = BoardScenario(arm64, PROGRAM)
    define = s.define(
        "tvariable $count = 10",
        "tvariable $last",
        trace(
            "record_hit",
            "teval $count = $count + 1, $last = iteration * 7",
            "collect $count, $last, $trace_timestamp",
        ),
    )
    before_ns = arm64.board.monotonic_ns()
    r = s.gdb(
        *TO_MAIN, "info tvariables", define, "break halfway", "break finished", "tstart",
        "continue",  # to halfway: 6 hits
        "info tvariables", "print $count", "continue", "tstop", "tstatus", "info tvariables",
        "tfind 1", "tdump", "print $trace_timestamp", "tfind 2", "print $trace_timestamp",
        "tfind 9", "print $count", "tfind none", "print $last",
    )
    after_ns = arm64.board.monotonic_ns()
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
    r.dumped(2, 1, r"^\$count = 12$", r"^\$last = 7$", r"^\$trace_timestamp = \d+$")
    stamps = [int(r.value("print $trace_timestamp", n)) for n in (0, 1)]
    assert stamps[0] < stamps[1], stamps
    if arm64.is_gdbserver:
        # gdbserver: wall-clock microseconds, the clock of tstatus's start time.
        start, duration = map(
            float, re.search(r"Trace started at ([\d.]+) secs, stopped ([\d.]+) secs later", r.of("tstatus")).groups()
        )
        seconds = [stamp / 1e6 for stamp in stamps]
        assert start - 0.001 <= seconds[0] <= seconds[1] <= start + duration + 0.001, (start, duration, stamps)
    else:
        # tpagent: the board's monotonic clock in nanoseconds, so hits can be timed.
        assert before_ns <= stamps[0] < stamps[1] <= after_ns, (before_ns, stamps, after_ns)
    assert r.value("print $count", 1) == "20"
    assert r.value("print $last") == "63"
