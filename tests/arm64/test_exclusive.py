"""Trap and fast tracepoints at a load-exclusive/store-exclusive loop (a64_exclusive.c's
add_exclusive). On hardware, a trap between the load and its store (an exception return clears
the local monitor: Arm ARM, "Context switch support") or the pad's call (the collector's own
atomics) makes the store fail at every try, and the program loops for ever; qemu compares
values instead of keeping a monitor, so the board cannot show the loop, only the refusal.
tpagent refuses such a tracepoint at tstart, naming the sequence, and the session and the
program go on. Tracepoints on the load-exclusive itself (at every try) and after the store
collect every call.
tpagent only: Debian's gdbserver installs the trap (the program's loop on hardware), and its
in-process agent crashes programs."""

import re

import pytest

from board import BoardFastTrace, BoardScenario
from scenario import TO_MAIN, ftrace, trace, trace_to, tracepoint_address

pytestmark = pytest.mark.tpagent_only("gdbserver installs a trap inside the sequence")

ITERATIONS = 5


@pytest.mark.parametrize("kind", ["trace", "ftrace"])
def test_inside_a_sequence_is_refused_and_around_it_collects(arm64, kind):
    s = (BoardFastTrace if kind == "ftrace" else BoardScenario)(arm64, "a64_exclusive", str(ITERATIONS))
    s.quiet_tstart = False  # the first tstart is refused on purpose
    define = ftrace if kind == "ftrace" else trace
    inside = s.define(define("*at_add", "collect $x1"))
    around = s.define(define("*at_load", "collect $x1"), define("*at_done", "collect $x1, $x2"))
    at_load = s.walk("$x1", "$pc", tracepoint=3)
    at_done = s.walk("$x1", "$x2", "$pc", tracepoint=4)
    r = s.gdb(*TO_MAIN, inside, "tstart", "tstatus", "delete 2", around, *trace_to("finished"), at_load,
              at_done, "tfind none", "delete", "continue")
    assert re.search(
        r"0x[0-9a-f]+ is inside the load-exclusive/store-exclusive sequence from 0x[0-9a-f]+ to 0x[0-9a-f]+",
        r.of("tstart"),
    ), r.of("tstart")
    assert "Trace is running" not in r.of("tstatus"), r.of("tstatus")
    load, done = (tracepoint_address(r.of(around), n, fast=kind == "ftrace") for n in (3, 4))
    calls = range(1, ITERATIONS + 1)
    # A store-exclusive may fail for reasons outside the program (the board's kernel ran
    # between the load and the store, say); the loop then loads again, and the tracepoint on
    # the load collects that try too, with the same x1.
    loads = [f[1:] for f in r.frames(at_load)]
    tries = [t for n, t in enumerate(loads) if n == 0 or t != loads[n - 1]]
    assert tries == [(3, i, load) for i in calls], r.of(at_load)
    assert len(loads) <= 2 * ITERATIONS, r.of(at_load)  # a retry now and then, not a loop
    r.trace_stopped("by a tstop command", len(loads) + ITERATIONS, nth=1)
    # x2: the sum so far, which the store has just written
    assert [f[1:] for f in r.frames(at_done)] == [(4, i, i * (i + 1) // 2, done) for i in calls], r.of(at_done)
    s.ends_as_natively(r.of("continue", 2))
