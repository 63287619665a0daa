"""Trap tracepoints whose instruction cannot run from a pad (here: no free address near the
code to put one) are stepped over in place, the breakpoint lifted for one step: every hit is
still collected, while-stepping works, and the program runs right, in one thread or several.
The scenario is tests/e2e/shared.py's, which the arm64 board suite runs too."""

import shared
from scenario import Scenario
from shared import X86_64


def test_step_over_in_place(e2e):
    shared.step_over_in_place(Scenario(e2e, "no_pad_room", "5", options=("--debug",)), X86_64)


def test_step_over_in_place_in_threads(e2e):
    """Four threads through one pad-less site. A thread reaching it while another steps over
    it passes unseen, so only the program's result and the frame shapes are checked."""
    s = Scenario(e2e, "no_pad_room", "5", "4", options=("--debug",))
    shared.step_over_in_place(s, X86_64, threads=4)
