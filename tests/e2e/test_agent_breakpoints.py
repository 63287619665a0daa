"""Breakpoints evaluated by the stub (RSP `Z0` options, ConditionalBreakpoints+ and
BreakpointCommands+): `set breakpoint condition-evaluation target` conditions, agent-style
`dprintf`, and dprintf commands kept past gdb's `detach` (persist). A condition that does not
hold resumes the thread without gdb seeing the hit. Runs against both stubs."""

import os
import re

import pytest

from debug_registers import why_they_do_not_fire
from harness import assert_in_order
from scenario import TO_MAIN, Scenario, ftrace, trace

PROGRAM = "cond_breaks"
TARGET_EVAL = "set breakpoint condition-evaluation target"
EXITED = r"\[Inferior 1 \(process \d+\) exited normally\]"


def total(calls: int) -> str:
    return rf"^total {calls * (calls - 1) // 2}$"


def test_condition_evaluated_by_the_stub(e2e):
    """gdb hands the condition to the stub ("target evals"), and the one call where it holds
    is the one stop; the other 999 calls go by unseen, the program's total intact."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(*TO_MAIN, TARGET_EVAL, "break hot if n == 700", "continue", "print n",
              "info breakpoints", "delete", "continue")
    # Without the stub's support gdb warns and falls back to evaluating the condition itself.
    assert "does not support" not in r.of(TARGET_EVAL), r.of(TARGET_EVAL)
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=700\)")
    assert_in_order(r.of("print n"), r"= 700")
    assert_in_order(r.of("info breakpoints"), r"stop only if n == 700 \(target evals\)",
                    r"breakpoint already hit 1 time")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(1000))


def test_condition_replaced_when_gdb_sends_it_again(e2e):
    """`condition` while the breakpoint is in: gdb sends it again with the new condition, which
    replaces the old one (an old condition kept would stop at 8 too)."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(*TO_MAIN, TARGET_EVAL, "set breakpoint always-inserted on",
              "break hot if n == 5 || n == 8", "continue", "condition 2 n == 30", "continue",
              "print n", "delete", "continue")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=5\)")
    assert_in_order(r.of("continue", 2), r"Breakpoint 2, hot \(n=30\)")
    assert_in_order(r.of("continue", 3), EXITED)
    s.server.wait_for(total(1000))


def test_condition_in_four_threads(e2e):
    """Four threads share 20000 calls: the one call with n == 15001, in whichever thread makes
    it, is the one stop (no thread passes the breakpoint unseen while another goes by it);
    nothing is lost or doubled in the others."""
    s = Scenario(e2e, PROGRAM, "20000", "4")
    r = s.gdb(*TO_MAIN, TARGET_EVAL, "break hot if n == 15001", "continue", "print n",
              "delete", "continue", timeout=120)
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=15001\)")
    assert_in_order(r.of("print n"), r"= 15001")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(20000))


@pytest.mark.skipif(os.environ.get("TPAGENT_E2E_NO_HW_WATCH") == "1", reason="TPAGENT_E2E_NO_HW_WATCH=1")
@pytest.mark.skipif(why_they_do_not_fire() is not None, reason=str(why_they_do_not_fire()))
def test_condition_on_a_hardware_breakpoint(e2e):
    """`hbreak` with a condition the stub evaluates: one stop, where it holds; the other calls
    pass the debug register's breakpoint unseen."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(*TO_MAIN, TARGET_EVAL, "hbreak hot if n == 300", "continue", "print n",
              "info breakpoints", "delete", "continue")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=300\)")
    assert_in_order(r.of("info breakpoints"), r"hw breakpoint", r"n == 300 \(target evals\)",
                    r"already hit 1 time")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(1000))


def test_condition_beside_a_trap_tracepoint(e2e):
    """A trap tracepoint and a conditional breakpoint at one address: every hit is collected,
    and the thread stops only where the condition holds."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(*TO_MAIN, TARGET_EVAL, s.define(trace("hot", "collect n")), "tstart",
              "break hot if n == 600", "continue", "print n", "tstop", "tstatus")
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, hot \(n=600\)")
    assert_in_order(r.of("tstatus"), r"Collected 601 trace frames")


@pytest.mark.tpagent_only("gdbserver's fast tracepoint pads are out of a PIE program's reach")
def test_condition_beside_a_fast_tracepoint(e2e):
    """A conditional breakpoint, then a fast tracepoint at its address, placed after it: every
    call before the one where the condition holds is collected (a thread going on past the
    breakpoint goes through the jump), and that one stops. (The breakpoint's condition ran in
    the program, from a jump of its own, until the tracepoint took its place.)"""
    s = Scenario(e2e, PROGRAM, agent=True)
    r = s.gdb(*TO_MAIN, TARGET_EVAL, "set breakpoint always-inserted on", "break hot if n == 600",
              s.define(ftrace("hot", "collect n")), "tstart", "continue", "print n", "tstop",
              "tstatus", "delete", "continue")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=600\)")
    assert r.value("print n") == "600"
    assert_in_order(r.of("tstatus"), r"Collected 600 trace frames")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(1000))


def test_agent_dprintf(e2e):
    """`set dprintf-style agent`: the stub prints every call's line itself, and the program
    never stops for them."""
    s = Scenario(e2e, PROGRAM, "300")
    r = s.gdb(*TO_MAIN, "set dprintf-style agent", 'dprintf hot,"hot %ld\\n", n',
              f"break {s.at('end')}", "continue", "info breakpoints")
    assert "cannot run dprintf" not in r.transcript, r.transcript
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, main")
    assert_in_order(r.of("info breakpoints"), r"dprintf", r'agent-printf "hot %ld\\n", n')
    s.server.wait_for_count(r"(?m)^hot \d+$", 300)
    printed = [int(n) for n in re.findall(r"(?m)^hot (\d+)$", s.server.output)]
    assert printed == list(range(300)), printed


@pytest.mark.tpagent_only("gdbserver runs a dprintf's commands whether or not its condition holds")
def test_agent_dprintf_with_a_condition(e2e):
    """A conditional agent dprintf prints only where its condition holds."""
    s = Scenario(e2e, PROGRAM, "300")
    s.gdb(*TO_MAIN, TARGET_EVAL, "set dprintf-style agent", 'dprintf hot,"hot %ld\\n", n',
          "condition 2 n % 100 == 0", f"break {s.at('end')}", "continue")
    printed = [int(n) for n in re.findall(r"(?m)^hot (\d+)$", s.server.output)]
    assert printed == [0, 100, 200], printed


@pytest.mark.parametrize("once", [
    False,
    pytest.param(True, marks=pytest.mark.tpagent_only(
        "gdbserver --once ends when gdb leaves, its program with it, persistent commands or not")),
], ids=["", "once"])
def test_persistent_dprintf_outlives_detach(e2e, once):
    """An agent dprintf (persistent: `set disconnected-dprintf on`, gdb's default) goes on
    printing after gdb detaches: the program runs on to its end with the stub still there,
    --once or not. (Always inserted: gdb inserts breakpoints when it resumes the program,
    else.)"""
    s = Scenario(e2e, PROGRAM, "500", options=("--once",) if once else ())
    r = s.gdb(*TO_MAIN, "set breakpoint always-inserted on", "break hot if n == 200", "continue", "delete",
              "set dprintf-style agent", 'dprintf hot,"hot %ld\\n", n', "detach")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=200\)")
    s.server.wait_for(r"Persistent commands are present, leaving \S+ attached to the process")
    s.server.wait_for(total(500))
    if not e2e.is_gdbserver:  # (no trace was run: none is said to be kept)
        s.server.wait_for(r"^Process \d+ ended while no gdb was connected$")
    printed = [int(n) for n in re.findall(r"(?m)^hot (\d+)$", s.server.output)]
    # The call stopped at when gdb left: printed by tpagent, which runs the thread on into the
    # dprintf's breakpoint; gdbserver steps it over first.
    first = 201 if e2e.is_gdbserver else 200
    assert printed == list(range(first, 500)), printed[:5]
