"""Tracepoints collect data while the program runs; tfind/tdump/print read it back.

traced.c's record_hit(iteration, 3) runs once per iteration, then other_hit(iteration):
every collected value follows from the iteration number, so each frame can be checked.
gdb runs the program to main first (tracepoints need the program's final addresses), so
breakpoint 1 is gone and tracepoints are numbered from 2. The scenarios are shared.py's,
which tests/arm64 runs too.
"""

import shared
from scenario import Scenario
from shared import PROGRAM, X86_64


def test_collect_and_find_frames(e2e):
    """$regs, $args, $locals, globals, a struct, an array slice, *pointer, a string and an
    expression; then every tfind form walks the 12 frames of 4 iterations."""
    shared.collect_and_find_frames(Scenario(e2e, PROGRAM, "4"), X86_64)


def test_while_stepping(e2e):
    """while-stepping 3 adds three frames per hit, at the next three instructions."""
    shared.while_stepping_frames(Scenario(e2e, PROGRAM, "2"), X86_64)


def test_tsave_and_tfile(e2e):
    """tsave pulls the buffer into a trace file; a new gdb reads it with target tfile."""
    shared.tsave_and_tfile(Scenario(e2e, PROGRAM, "6"), e2e.tmp / "run.tf")
