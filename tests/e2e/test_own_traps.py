"""Breakpoints and the traps a program raises itself (gdb.base/bp-permanent.exp and
catch-gdb-caused-signals.exp, found running gdb's suites against both stubs). Runs against
both stubs.

own_traps.c: own_trap() holds a trap instruction of the program's own at trap_here (gdb calls
it a permanent breakpoint), run at each of its 3 calls."""

from harness import assert_in_order
from scenario import TO_MAIN, Scenario


def test_a_breakpoint_on_the_programs_own_trap_stops_where_its_condition_holds(e2e):
    """gdb's breakpoint on the trap, with a condition evaluated by the stub: where it holds
    (the second call), the stop is that breakpoint's; where it does not, the thread goes past
    the trap as gdb would (gdb steps over a permanent breakpoint by moving the pc past it), and
    the program ends normally. A stub that ran the trap, or reported it, stopped the program
    with SIGTRAP at the first call."""
    s = Scenario(e2e, "own_traps", "3")
    r = s.gdb(*TO_MAIN, "break *trap_here if counter == 1", "continue", "print counter", "continue")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, .*own_trap")
    assert r.value("print counter") == "1"
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")
    assert "SIGTRAP" not in r.transcript, r.transcript


def test_a_call_from_gdb_returns_though_gdb_passes_sigsegv(e2e):
    """gdb's call of return_one() returns to a breakpoint gdb puts on the stack, which is not
    executable: the return stops the thread with SIGSEGV, not SIGTRAP. gdb counts that as its
    breakpoint's hit, so the stub reports it although gdb said to pass SIGSEGV without
    stopping (`handle SIGSEGV nostop noprint`). A stub that passed it killed the program."""
    s = Scenario(e2e, "own_traps", "0")
    r = s.gdb(*TO_MAIN, "handle SIGSEGV nostop noprint", "handle SIGILL nostop noprint", "print return_one()",
              "print return_one() + 1", "continue")
    assert r.value("print return_one()") == "1"
    assert r.value("print return_one() + 1") == "2"
    assert_in_order(r.of("continue", 1), r"\[Inferior 1 \(process \d+\) exited normally\]")
