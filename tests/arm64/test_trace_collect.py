"""Trap tracepoints on the arm64 board, against each stub: what they collect ($regs, $args,
$locals, globals, a struct, memory ranges, *pointer, a string, an expression), checked value
by value in each frame; every tfind form and tdump; while-stepping; tsave (gdb writes the
file) and target tfile; four threads hitting one tracepoint.

The scenarios are tests/e2e/shared.py's, which tests/e2e runs too (see there for traced.c);
here on AArch64, with its registers.
"""

import re

import shared
from board import BoardScenario
from shared import AARCH64, PROGRAM


def test_collect_and_find_frames(arm64):
    """$regs, $args, $locals, globals, a struct, an array slice, *pointer, a string and an
    expression; then every tfind form walks the 12 frames of 4 iterations."""
    r = shared.collect_and_find_frames(BoardScenario(arm64, PROGRAM, "4"), AARCH64, "print $x1", "print/x $v0.d.u[0]")
    assert r.value("print $x1") == "3"
    # $regs holds the SIMD registers too.
    assert re.fullmatch(r"0x[0-9a-f]+", r.value("print/x $v0.d.u[0]")), r.of("print/x $v0.d.u[0]")


def test_while_stepping(arm64):
    """while-stepping 3 adds three frames per hit, at the next three instructions."""
    shared.while_stepping_frames(BoardScenario(arm64, PROGRAM, "2"), AARCH64)


def test_tsave_and_tfile(arm64):
    """tsave pulls the buffer into a trace file on the host; a new gdb reads it with target
    tfile (the symbols loaded at the run's load offset)."""
    shared.tsave_and_tfile(BoardScenario(arm64, PROGRAM, "6"), arm64.tmp / "run.tf", registers=AARCH64)


def test_concurrent_hits_in_threads(arm64):
    """Four threads hit one tracepoint at the same time: every hit makes a frame, and each
    frame holds the registers of the thread that hit it (its own stack pointer)."""
    shared.concurrent_hits(BoardScenario(arm64, "traced_threads"), "$sp")
