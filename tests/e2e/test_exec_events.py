"""exec events (`exec-events+`): when the program runs execve, gdb is told (a stop naming the
new program), takes the new program's symbols, puts its breakpoints into it, and stops there
for `catch exec`. Runs against both stubs."""

import re

import pytest

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "execs"
TARGET = "exec_target"


def executing(path) -> str:
    return rf"process \d+ is executing new program: {re.escape(str(path))}"


def exited_with(code: int) -> str:
    return rf"\[Inferior 1 \(process \d+\) exited with code 0?{code:o}\]"


def test_catch_exec_then_a_breakpoint_in_the_new_program(e2e):
    target = e2e.program(TARGET)
    s = Scenario(e2e, PROGRAM, str(target))
    r = s.gdb(
        "catch exec", "continue", "info symbol $pc", "break target_only", "continue", "bt", "continue",
    )
    assert_in_order(r.of("continue"), executing(target), rf"Catchpoint 1 \(exec'd {re.escape(str(target))}\)")
    # Stopped at the new program's first instruction: the dynamic loader's entry.
    assert_in_order(r.of("info symbol $pc"), r"_start in section \.text of .*ld-linux")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, target_only \(n=1\)")
    assert_in_order(r.of("bt"), r"#0  target_only", r"#1  0x[0-9a-f]+ in main \(\)")
    s.server.wait_for(r"^exec_target: 3$")
    assert_in_order(r.of("continue", 2), exited_with(3))


def test_a_breakpoint_hit_in_both_programs(e2e):
    """The program execs itself: gdb puts `break main` into the new image, which stops there
    with the new arguments."""
    s = Scenario(e2e, PROGRAM, str(e2e.program(PROGRAM)))
    r = s.gdb("break main", "continue", "print argc", "continue", "print argc", "continue")
    assert_in_order(r.of("continue"), r"Breakpoint 1, main \(argc=2,")
    assert_in_order(r.of("continue", 1), executing(s.program), r"Breakpoint 1, main \(argc=1,")
    s.server.wait_for(r"^execs: nothing to run$")
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")


def test_exec_from_a_second_thread(e2e):
    """The exec ends every thread but the one that ran it, which takes the process id:
    gdb sees one thread in the new program."""
    target = e2e.program(TARGET)
    s = Scenario(e2e, PROGRAM, "--from-thread", str(target))
    r = s.gdb(
        "break exec_from_thread", "continue", "info threads", "catch exec", "continue",
        "info threads", "break target_only", "continue", "continue",
    )
    assert_in_order(r.of("continue"), r"Thread .* hit Breakpoint 1, exec_from_thread")
    assert len(re.findall(r"^\*?\s+\d+\s+Thread ", r.of("info threads"), re.M)) == 2, r.of("info threads")
    assert_in_order(r.of("continue", 1), executing(target), r"Catchpoint 2 \(exec'd")
    after = r.of("info threads", 1)
    rows = re.findall(rf"^\*?\s+\d+\s+Thread {s.pid}\.{s.pid}\b", after, re.M)
    assert len(re.findall(r"^\*?\s+\d+\s+Thread ", after, re.M)) == 1 and rows, after
    assert_in_order(r.of("continue", 2), r"Breakpoint 3, target_only \(n=1\)")
    assert_in_order(r.of("continue", 3), exited_with(3))


@pytest.mark.tpagent_only("gdbserver stops with a bare SIGTRAP at the exec, and gdb cannot go on")
def test_without_exec_events_the_program_runs_on(e2e):
    """gdb told not to use exec events: no stop at the exec, the new program runs to its end."""
    target = e2e.program(TARGET)
    s = Scenario(e2e, PROGRAM, str(target))
    r = s.gdb("set remote exec-event-feature-packet off", s.connect, "continue", connect=False)
    out = r.of("continue")
    assert "executing new program" not in out, out
    assert_in_order(out, exited_with(3))
    s.server.wait_for(r"^exec_target: 3$")
