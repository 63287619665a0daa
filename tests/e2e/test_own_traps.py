"""Breakpoints and the traps a program raises itself (gdb.base/bp-permanent.exp and
catch-gdb-caused-signals.exp, found running gdb's suites against both stubs). Runs against
both stubs; tests/arm64/test_debug.py runs the same on the board.

own_traps.c: own_trap() holds a trap instruction of the program's own at trap_here (gdb calls
it a permanent breakpoint), run at each call; return_one() is for gdb to call."""

import shared
from scenario import Scenario


def test_a_breakpoint_on_the_programs_own_trap_stops_where_its_condition_holds(e2e):
    shared.own_trap_under_a_conditional_breakpoint(Scenario(e2e, "own_traps", "3"))


def test_a_call_from_gdb_returns_though_gdb_passes_sigsegv(e2e):
    shared.call_returns_though_sigsegv_is_passed(Scenario(e2e, "own_traps", "0"))
