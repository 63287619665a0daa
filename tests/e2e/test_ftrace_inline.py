"""Fast tracepoints whose pads write their frames themselves (inline collection): what gdb
sees of such a trace is what it sees when the in-process agent's collector writes the frames
(`monitor set inline-collection off` before the pads are made), and `monitor tracepoints`
says which collects each tracepoint, and why the agent's collector does where it does.

programs/ftrace_loop.c: traced(i, 3) once per iteration; every collected value follows from
i. Its globals are collected as memory ranges, `$regs` as the register block: both in line.
"""

import re
from pathlib import Path

import pytest

from scenario import TO_MAIN, FastTrace, ftrace, trace_to

PROGRAM = "ftrace_loop"
HITS = 6

pytestmark = pytest.mark.tpagent_only("inline collection and its monitor commands are tpagent's")


def run(e2e, in_line: bool, *actions: str, condition: str = "", agent: bool = True):
    s = FastTrace(e2e, PROGRAM, str(HITS), agent=agent)
    location = s.at("traced_entry") + (f" if {condition}" if condition else "")
    define = s.define(ftrace(location, *actions))
    dumps = [f"tfind {k}" for k in range(HITS)]
    lines = []
    for d in dumps:
        lines += [d, "tdump"]
    r = s.gdb(
        *TO_MAIN,
        f"monitor set inline-collection {'on' if in_line else 'off'}",
        define,
        "break finished", "tstart", "monitor tracepoints", "continue", "tstop", "tstatus",
        *lines,
    )
    if "this machine's pads call it" in r.of("monitor tracepoints"):
        pytest.skip("pads here call the agent's collector: " + r.of("monitor tracepoints").strip())
    return r


def dumped(r) -> list[str]:
    """Every frame's tdump, as gdb printed it."""
    return [r.of("tdump", k) for k in range(HITS)]


@pytest.mark.parametrize("agent", [True, False], ids=["library", "image"])
def test_frames_are_the_agent_collectors(e2e, agent):
    """$regs and three globals: the same tdump of every frame either way, and the values
    the program had (rdi = the iteration). With the agent library preloaded, or with the
    self-mapped image tpagent places at tstart (its threads' state found in its table)."""
    actions = ("collect $regs", "collect hits, current, bytes")
    inline = run(e2e, True, *actions, agent=agent)
    generic = run(e2e, False, *actions, agent=agent)
    said = inline.of("monitor tracepoints")
    assert "Its pad writes its frames itself." in said, said
    assert "collector collects it: `monitor set inline-collection off`" in generic.of("monitor tracepoints")
    inline.trace_stopped("by a tstop command", HITS)
    generic.trace_stopped("by a tstop command", HITS)
    a, b = dumped(inline), dumped(generic)
    assert a == b, (inline.transcript, generic.transcript)
    for k, text in enumerate(a):
        assert re.search(rf"(?m)^rdi\s+0x{k:x}\s+{k}$", text), text
        assert re.search(rf"(?m)^hits = {k}$", text), text
        assert re.search(r"(?m)^eflags\s+0x[0-9a-f]+\s+\[.*IF.*\]$", text), text


@pytest.mark.parametrize(
    "condition, said",
    [
        ("$rdi % 2 == 1", "Its pad writes its frames itself."),
        ("hits % 2 == 1", "The in-process agent's collector collects it: its condition reads memory or variables."),
    ],
)
def test_conditions(e2e, condition, said):
    """A condition on registers is evaluated by the pad, one that reads memory by the agent's
    collector, which `monitor tracepoints` says; either way the frames kept are the ones whose
    condition holds (odd iterations), the same as with inline collection off."""
    inline = run(e2e, True, "collect $rdi, hits", condition=condition)
    generic = run(e2e, False, "collect $rdi, hits", condition=condition)
    assert said in inline.of("monitor tracepoints"), inline.of("monitor tracepoints")
    inline.trace_stopped("by a tstop command", HITS // 2)
    generic.trace_stopped("by a tstop command", HITS // 2)
    frames = [inline.of("tdump", k) for k in range(HITS // 2)]
    assert frames == [generic.of("tdump", k) for k in range(HITS // 2)], (inline.transcript, generic.transcript)
    for k, text in enumerate(frames):
        assert re.search(rf"(?m)^\$rdi = {2 * k + 1}$", text), text


def test_a_variable_in_a_register(e2e):
    """bench/programs/hits.c built with -O1: traced_function's `i` lives in rdi, and gdb sends
    for `collect i` the register in the tracepoint's mask and an expression that is only `end`:
    nothing to run at a hit, so the pad still writes the frame itself, and each frame's `i` is
    the call's."""
    from harness import compile_program

    source = Path(__file__).resolve().parents[2] / "bench" / "programs" / "hits.c"
    program = compile_program(source, e2e.tmp / "hits_o1", "-O1", "-no-pie")
    calls = 5
    s = FastTrace(e2e, "hits", str(calls), program=program)
    define = s.define(ftrace("traced_function", "collect i"))
    lines = []
    for k in range(calls):
        lines += [f"tfind {k}", "print i"]
    r = s.gdb(*TO_MAIN, define, "tstart", "monitor tracepoints", "break exit", "continue", "tstop", *lines)
    assert "Its pad writes its frames itself." in r.of("monitor tracepoints"), r.of("monitor tracepoints")
    assert [r.value("print i", k) for k in range(calls)] == [str(k) for k in range(calls)], r.transcript
