"""Thread create and exit events (`QThreadEvents`): gdb asks for them while it stops every
thread of a program in non-stop mode, so that a thread exiting before its stop reaches gdb
does not leave gdb waiting for that stop for ever. Runs against both stubs.

thread_churn.c: 300 rounds of four threads that spin for a varying while and exit, main
stopping at checkpoint() in each round while some of them still run."""

from harness import assert_in_order
from scenario import Scenario


def test_threads_exit_while_gdb_stops_them(e2e):
    """All-stop gdb over the non-stop protocol: each stop at the breakpoint stops the other
    threads one by one (vCont;t), and some of them exit meanwhile. Without exit events gdb
    waited for ever in the first rounds."""
    s = Scenario(e2e, "thread_churn")
    r = s.gdb(
        "maint set target-non-stop on", s.connect, "break checkpoint",
        e2e.command_file("commands 1", "silent", "continue", "end"), "continue", "info breakpoints",
        connect=False, timeout=180,
    )
    assert_in_order(r.of("continue"), r"\[Inferior 1 \(process \d+\) exited normally\]")
    assert_in_order(r.of("info breakpoints"), r"breakpoint already hit 300 times")
    s.server.wait_for(r"^checks 300 spawned 1200$")
