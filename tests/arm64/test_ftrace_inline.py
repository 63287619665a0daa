"""Fast tracepoints whose pads write their frames themselves (inline collection) on the arm64
board: what gdb sees of such a trace is what it sees when the in-process agent's collector
writes the frames (`monitor set inline-collection off` before the pads are made), with the
agent library preloaded and with the image tpagent places at tstart (its threads' state found
in its table by tpidr_el0). The x86-64 tests' counterpart (tests/e2e/test_ftrace_inline.py).

programs/ftrace_loop.c: traced(i, 3) once per iteration; every collected value follows from
i. Its globals are collected as memory ranges, `$regs` as the register block: both in line.
"""

import re

import pytest

from board import BoardFastTrace, BoardScenario
from scenario import TO_MAIN, ftrace

pytestmark = pytest.mark.tpagent_only("inline collection and its monitor commands are tpagent's")

PROGRAM = "ftrace_loop"
HITS = 6
IN_LINE = "Its pad writes its frames itself."


def run(arm64, in_line: bool, *actions: str, condition: str = "", agent: bool = True):
    s = (BoardFastTrace if agent else BoardScenario)(arm64, PROGRAM, str(HITS))
    location = s.at("traced_entry") + (f" if {condition}" if condition else "")
    define = s.define(ftrace(location, *actions))
    lines = []
    for k in range(HITS):
        lines += [f"tfind {k}", "tdump"]
    return s.gdb(
        *TO_MAIN,
        f"monitor set inline-collection {'on' if in_line else 'off'}",
        define,
        "break finished", "tstart", "monitor tracepoints", "continue", "tstop", "tstatus",
        *lines,
    )


@pytest.mark.parametrize("agent", [True, False], ids=["library", "image"])
def test_frames_are_the_agent_collectors(arm64, agent):
    """$regs and three globals: the same tdump of every frame either way, and the values the
    program had (x0 = the iteration, x1 = 3)."""
    actions = ("collect $regs", "collect hits, current, bytes")
    inline = run(arm64, True, *actions, agent=agent)
    generic = run(arm64, False, *actions, agent=agent)
    assert IN_LINE in inline.of("monitor tracepoints"), inline.of("monitor tracepoints")
    assert "collector collects it: `monitor set inline-collection off`" in generic.of("monitor tracepoints")
    inline.trace_stopped("by a tstop command", HITS)
    generic.trace_stopped("by a tstop command", HITS)
    a = [inline.of("tdump", k) for k in range(HITS)]
    b = [generic.of("tdump", k) for k in range(HITS)]
    assert a == b, (inline.transcript, generic.transcript)
    for k, text in enumerate(a):
        assert re.search(rf"(?m)^x0\s+0x{k:x}\s+{k}$", text), text
        assert re.search(r"(?m)^x1\s+0x3\s+3$", text), text
        assert re.search(rf"(?m)^hits = {k}$", text), text


@pytest.mark.parametrize(
    "condition, said",
    [
        ("$x0 % 2 == 1", IN_LINE),
        ("hits % 2 == 1", "The in-process agent's collector collects it: its condition reads memory or variables."),
    ],
)
def test_conditions(arm64, condition, said):
    """A condition on registers is evaluated by the pad (the compiled arm64 code, called from
    it), one that reads memory by the agent's collector; either way the frames kept are the
    ones whose condition holds (odd iterations), the same as with inline collection off."""
    inline = run(arm64, True, "collect $x0, hits", condition=condition)
    generic = run(arm64, False, "collect $x0, hits", condition=condition)
    assert said in inline.of("monitor tracepoints"), inline.of("monitor tracepoints")
    inline.trace_stopped("by a tstop command", HITS // 2)
    generic.trace_stopped("by a tstop command", HITS // 2)
    frames = [inline.of("tdump", k) for k in range(HITS // 2)]
    assert frames == [generic.of("tdump", k) for k in range(HITS // 2)], (inline.transcript, generic.transcript)
    for k, text in enumerate(frames):
        assert re.search(rf"(?m)^\$x0 = {2 * k + 1}$", text), text
