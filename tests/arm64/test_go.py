"""A Go program on the arm64 board (programs/ftrace_goroutines.go built for arm64, static
without cgo; skipped without Debian's golang-go on the host): its goroutines' stacks cannot
take a pad and arm64's pads do not switch to agent stacks yet, so a fast tracepoint there is
collected through a trap, tstart says why, and every call is a frame with its arguments.
"""

import re

import pytest

from board import BoardScenario
from scenario import parse_frames

pytestmark = pytest.mark.tpagent_only("tpagent's own trap fallback and its reason")

ROUNDS = 20
GOROUTINES = 4


def test_a_go_program_is_traced_through_traps_with_the_reason(arm64):
    program = arm64.board.payload / "ftrace_goroutines"
    if not program.exists():
        pytest.skip("no Go program in the payload (go is missing on the host: Debian's golang-go)")
    s = BoardScenario(arm64, "ftrace_goroutines", str(ROUNDS), program=program)
    define = s.define("ftrace *main.work", "actions", "collect $regs", "end")  # (its entry)
    walk = s.walk("$x0", "$x1")
    r = s.gdb("break main.main", "continue", "delete", define, "tstart", "break main.finished", "continue",
              "tstop", "tstatus", "set language c", walk, "tfind none", "delete", "continue")
    assert re.search(r"collected through a trap \(trap speed\): a Go program: goroutine stacks cannot take a pad",
                     r.of("tstart")), r.of("tstart")
    r.trace_stopped("by a tstop command", GOROUTINES * ROUNDS)
    # work(n, k): n in x0, k in x1 (Go's register ABI) at its entry.
    calls = sorted((k, n) for _, _, n, k in parse_frames(r.of(walk)))
    assert calls == [(k, n) for k in range(GOROUTINES) for n in range(ROUNDS)], r.of(walk)
    s.ends_as_natively(r.of("continue", 2))
