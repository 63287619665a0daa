"""`next` over the lines that enter the kernel (a system call, clone, fork, vfork) and
`stepi` over a `syscall` instruction: each step ends on the next line, or the next
instruction, in the same thread, and the program ends as it does natively. Runs against both
stubs."""

import re

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "steps_over"
STEPPED = ["raw", "clone", "join", "fork", "after fork"]
VFORK = ["after vfork"]


def test_next_over_syscall_clone_fork_and_vfork(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        f"break {s.at('syscall')}", "continue", *["next"] * 5, f"tbreak {s.at('vfork')}",
        "continue", "next", "info threads", "continue",
    )
    assert_in_order(r.of("continue"), rf"Breakpoint 1, main \(\) at .*:{s.line('syscall')}")
    for k, mark in enumerate(STEPPED):
        assert re.match(rf"^(\[.*\]\n)*{s.line(mark)}\t", r.of("next", k).lstrip("\n")), (mark, r.of("next", k))
    assert re.search(rf"^{s.line('after vfork')}\t", r.of("next", 5), re.M), r.of("next", 5)
    threads = re.findall(r"^\*?\s+\d+\s+Thread ", r.of("info threads"), re.M)
    assert len(threads) == 1, r.of("info threads")
    s.server.wait_for(r"^done 4$")
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")


def test_stepi_over_a_syscall_instruction(e2e):
    """The step ends after the instruction, with the call's result (the process id) in rax."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("break *raw_syscall", "continue", "x/i $pc", "stepi", "print (long) $pc - (long) raw_syscall", "print $rax", "continue")
    assert_in_order(r.of("x/i $pc"), r"syscall")
    assert r.value("print (long) $pc - (long) raw_syscall") == "2", r.transcript
    assert r.value("print $rax") == str(s.pid), r.transcript
    s.server.wait_for(r"^done 4$")
    assert_in_order(r.of("continue", 1), r"\[Inferior 1 \(process \d+\) exited normally\]")
