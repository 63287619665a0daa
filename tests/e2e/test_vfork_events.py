"""vfork events (`vfork-events+`): gdb hears of each vfork, `catch vfork` stops there, and gdb
decides what becomes of the child, which runs in its parent's memory until it execs or exits:
detached (detach-on-fork, the default; gdb takes its breakpoints out of the shared memory
until the parent's vfork-done), or followed (follow-fork-mode child), the parent held
stopped until the child is done with its memory and then detached. Runs against both stubs.

vforker.c: the child runs child_work(4) and exits with 5, or execs /bin/true ("exec")."""

import re

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "vforker"


def test_catch_vfork_then_the_child_is_detached(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("break child_work", "break after_vfork", "catch vfork", "continue", "continue", "continue")
    caught = re.search(r"Catchpoint 3 \(vforked process (\d+)\)", r.of("continue"))
    assert caught, r.of("continue")
    child = caught.group(1)
    # The child ran child_work, which has a breakpoint in the shared memory, untroubled; the
    # parent stops at its own breakpoint once the child is done.
    assert_in_order(
        r.of("continue", 1), rf"\[Detaching after vfork from child process {child}\]",
        rf"Breakpoint 2, after_vfork \(pid={child}\)",
    )
    assert "Breakpoint 1," not in r.of("continue", 1), r.of("continue", 1)
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(r"^parent: child exited 5$")


def test_follow_the_vfork_child_to_its_exit(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        "set follow-fork-mode child", "break child_work", "continue", "info inferiors", "bt",
        "continue",
    )
    assert_in_order(
        r.of("continue"), r"\[Attaching after Thread \S+ vfork to child Thread (\d+)\.\1\]",
        r'Thread 2\.1 "vforker" hit Breakpoint 1, child_work \(n=4\)',
    )
    assert_in_order(r.of("info inferiors"), r"is vfork parent of inferior 2", r"is vfork child of inferior 1")
    assert_in_order(r.of("bt"), r"#0  child_work", r"in main \(")
    # The parent, held meanwhile, is let go with gdb's breakpoints out of its memory.
    assert_in_order(
        r.of("continue", 1), r"\[Detaching vfork parent process \d+ after child exit\]",
        r"\[Inferior 2 \(process \d+\) exited with code 05\]",
    )
    s.server.wait_for(r"^parent: child exited 5$")


def test_follow_the_vfork_child_into_exec(e2e):
    s = Scenario(e2e, PROGRAM, "exec")
    r = s.gdb("set follow-fork-mode child", "break after_vfork", "continue")
    assert_in_order(
        r.of("continue"), r"\[Attaching after Thread \S+ vfork to child Thread (\d+)\.\1\]",
        r"\[Detaching vfork parent process \d+ after child exec\]",
        r"process \d+ is executing new program: \S*/true",
        r"\[Inferior 2 \(process \d+\) exited normally\]",
    )
    # The parent's breakpoint at after_vfork, in memory the child shared, did not kill it.
    s.server.wait_for(r"^parent: child exited 0$")
