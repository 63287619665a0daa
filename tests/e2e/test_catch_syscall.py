"""`catch syscall` (QCatchSyscalls): the program stops at the entry and the return of the
system calls gdb names, and at no other; without a catchpoint it runs as before. Runs against
both stubs."""

import re

import pytest

from harness import assert_in_order
from scenario import Scenario, trace

PROGRAM = "syscalls"
CALL = r"Catchpoint {n} \(call to syscall {name}\)"
RETURN = r"Catchpoint {n} \(returned from syscall {name}\)"


def test_catch_syscall_entry_and_return(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        "break main", "continue", "catch syscall close",
        "continue", "continue", "continue", "info breakpoints",
        "delete", "catch syscall write", "continue", "continue", "continue",
    )
    assert_in_order(r.of("continue", 1), CALL.format(n=2, name="close"), r"__GI___close|close")
    assert_in_order(r.of("continue", 2), RETURN.format(n=2, name="close"))
    assert_in_order(r.of("continue", 3), CALL.format(n=2, name="close"))
    assert_in_order(r.of("info breakpoints"), r'syscall "close"', r"catchpoint already hit 3 times")
    # open, the other calls of the loop and the rest of close went by: the next stop is write.
    assert_in_order(r.of("continue", 4), CALL.format(n=3, name="write"))
    assert_in_order(r.of("continue", 5), RETURN.format(n=3, name="write"))
    s.server.wait_for(r"^done$")  # the program's output, on the server's
    assert_in_order(r.of("continue", 6), r"\[Inferior 1 \(process \d+\) exited normally\]")


@pytest.mark.tpagent_only("gdbserver keeps no program running once gdb is gone")
def test_catching_ends_with_gdbs_session(e2e):
    """gdb catches `write`, starts a disconnected trace, resumes the program and is killed
    while it runs: the program goes on without gdb and must not stop at the write, which
    nobody would see. It ends, its trace kept for the next gdb."""
    running = e2e.tmp / "running"
    s = Scenario(e2e, PROGRAM, str(running))
    gdb = s.gdb_start(
        "break main", "continue", "delete", "set disconnected-tracing on",
        *trace(s.at("close"), "collect $regs"), "tstart", "catch syscall write", "continue",
    )
    e2e.wait_for_file(running)  # resumed, catching, half a second from its calls
    gdb.kill()
    s.server.wait_for(r"^Child exited with status 0$")
    s.server.wait_for(r"^Process \d+ ended during a disconnected trace; the trace is kept for gdb$")
    r = s.gdb("tstatus")
    assert_in_order(r.of("tstatus"), r"Collected 3 trace frames")


def test_catch_syscall_in_two_threads(e2e):
    """Two threads make 3 getppid calls each: 12 stops (an entry and a return per call), each
    in one of the two threads, with every call's entry before its return, then the end."""
    s = Scenario(e2e, "syscall_threads")
    r = s.gdb("break main", "continue", "catch syscall getppid", *["continue"] * 13, timeout=120)
    stops = []
    for k in range(1, 13):
        out = r.of("continue", k)
        m = re.search(r"Thread \d+\.(\d+) \"syscall_threads\" hit Catchpoint 2 \((call to|returned from) syscall getppid\)", out)
        if not m:  # the same thread as the stop before: gdb does not name it again
            m = re.search(r"()Catchpoint 2 \((call to|returned from) syscall getppid\)", out)
        assert m, out
        stops.append(m.group(2))
    assert stops.count("call to") == 6 and stops.count("returned from") == 6, stops
    assert_in_order(r.of("continue", 13), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(r"^done$")


def test_catch_syscall_over_a_vfork(e2e):
    """The vfork's return is caught in the parent after gdb lets the child go ("Detaching
    after vfork"), then wait4's call and return and exit_group, in that order: none missed,
    none off by one."""
    s = Scenario(e2e, "vforker")
    r = s.gdb("break main", "continue", "catch syscall vfork wait4 exit_group", *["continue"] * 6)
    assert_in_order(r.of("continue", 1), CALL.format(n=2, name="vfork"))
    assert_in_order(r.of("continue", 2), r"\[Detaching after vfork from child process \d+\]",
                    RETURN.format(n=2, name="vfork"))
    assert_in_order(r.of("continue", 3), CALL.format(n=2, name="wait4"))
    assert_in_order(r.of("continue", 4), RETURN.format(n=2, name="wait4"))
    assert_in_order(r.of("continue", 5), CALL.format(n=2, name="exit_group"))
    assert_in_order(r.of("continue", 6), r"\[Inferior 1 \(process \d+\) exited normally\]")
