"""`next` in two threads that both hit one breakpoint (gdb.threads/pending-step.exp, found
running gdb's suites against both stubs). Runs against both stubs.

All-stop: a thread gdb steps while another thread's hit goes to gdb can finish its step as it
is being stopped. Its step's end then answers a request gdb has replaced with the next one; a
stub that reported it at the next resume had gdb say "Thread N received signal SIGTRAP".

step_races.c: two threads each bump their own counter on one line, the breakpoint's."""

from harness import assert_in_order
from scenario import Scenario

NEXTS = 30


def test_next_in_threads_that_share_a_breakpoint_meets_no_stray_sigtrap(e2e):
    s = Scenario(e2e, "step_races")
    r = s.gdb("set breakpoint pending on", f"break {s.at('bump')}", "continue", *["next"] * NEXTS, "kill")
    assert_in_order(r.of("continue"), r"hit Breakpoint 1, bump")
    assert "SIGTRAP" not in r.transcript, r.transcript
    for i in range(NEXTS):
        # Each stop is a hit of the breakpoint, or the step's end in the loop.
        assert_in_order(r.of("next", i), r"(hit Breakpoint 1, bump|^\d+\s)")
