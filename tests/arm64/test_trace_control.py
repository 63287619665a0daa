"""What decides whether a tracepoint collects, on the arm64 board, against each stub:
conditions, pass counts (the trace stopped by tracepoint N, the program still right),
a full linear buffer, disable/enable and a tracepoint added during the run, trace state
variables with teval and $trace_timestamp.

traced.c runs 10 iterations of record_hit(iteration) then other_hit(iteration); halfway()
runs after record_hit(5). passcount.c calls traced(i) ITERATIONS times (in THREADS threads
at once when asked) and says "right" when every value came out right. Tracepoints are
numbered from 2 (breakpoint 1 took gdb to main). The scenarios shared with tests/e2e are
tests/e2e/shared.py's.
"""

import pytest

import shared
from scenario import TO_MAIN, trace, trace_to
from board import BoardFastTrace, BoardScenario

PROGRAM = "traced"


def test_conditions(arm64):
    """condition N expr and trace ... if expr: only hits where it holds make frames."""
    shared.conditions(BoardScenario(arm64, PROGRAM))


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
    shared.conditions_counted(r, r"^\s+tracepoint already hit 10 times$")


def test_passcount_stops_the_trace(arm64):
    """passcount 3: the third hit of tracepoint 2 is collected, then the trace stops."""
    shared.passcount_stops_the_trace(BoardScenario(arm64, PROGRAM))


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
    """A linear buffer of 16 KiB, 1 KiB collected per hit (and the registers: 2.5 KiB with
    SVE): a hit that finds the buffer full stops the trace; the program runs on untraced, and
    right."""
    iterations, buffer_size = 30, 16384
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
    assert 2 < r.status().collected < 10, r.status()
    assert r.value("print hits") == str(iterations)
    assert r.found("tfind start") == (0, 2)
    assert r.value("print n") == "0"
    assert r.value("print block[1023]") == "0 '\\000'"  # before the first fill
    assert r.value("print n", 1) == "1"
    assert r.value("print block[5]") == "5 '\\005'"  # filled by traced(0): 0 + 5
    program_right(s, r.of("continue", 2), iterations)


def test_disable_enable_and_add_during_the_run(arm64):
    """disable/enable act at once; a tracepoint set during the run is installed at once."""
    shared.disable_enable_and_add_during_the_run(BoardScenario(arm64, PROGRAM))


@pytest.mark.tpagent_only("Debian's arm64 in-process agent crashes the programs it is loaded into")
def test_fast_disable_enable_and_add_during_the_run(arm64):
    """The same with fast tracepoints: QTDisable/QTEnable reach the in-process agent, and a
    fast tracepoint set during the run gets its pad and jump at once."""
    shared.disable_enable_and_add_during_the_run(BoardFastTrace(arm64, PROGRAM), fast=True)


def test_trace_state_variables(arm64):
    """teval, tstatus/info tvariables, collected values; $trace_timestamp (wall-clock
    microseconds, as gdbserver's)."""
    shared.trace_state_variables(BoardScenario(arm64, PROGRAM))
