"""fork events (`fork-events+`): gdb hears of each fork, `catch fork` stops there, and gdb
decides what becomes of the child: detached (detach-on-fork, the default), its breakpoints
gone from the child's copy, or followed (follow-fork-mode child), the parent detached.
Runs against both stubs."""

import os
import re
import signal

import pytest

from harness import assert_in_order, wait_until
from scenario import Scenario

PROGRAM = "forker"


def test_catch_fork_then_the_child_is_detached(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("break child_work", "catch fork", "continue", "continue")
    caught = re.search(r"Catchpoint 2 \(forked process (\d+)\)", r.of("continue"))
    assert caught, r.of("continue")
    child = caught.group(1)
    # The child ran child_work, which has a breakpoint in the parent, untroubled.
    assert_in_order(
        r.of("continue", 1), rf"\[Detaching after fork from child process {child}\]",
        r"\[Inferior 1 \(process \d+\) exited normally\]",
    )
    assert "Breakpoint 1," not in r.of("continue", 1), r.of("continue", 1)
    s.server.wait_for(r"^child 5$")
    s.server.wait_for(r"^parent: child exited 5$")


def test_follow_the_child(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("set follow-fork-mode child", "break child_work", "continue", "bt", "continue")
    assert_in_order(
        r.of("continue"), r"\[Attaching after Thread \S+ fork to child Thread (\d+)\.\1\]",
        r"\[Detaching after fork from parent process \d+\]",
        r'Thread 2\.1 "forker" hit Breakpoint 1, child_work \(n=4\)',
    )
    assert_in_order(r.of("bt"), r"#0  child_work", r"#1  0x[0-9a-f]+ in main \(")
    assert_in_order(r.of("continue", 1), r"\[Inferior 2 \(process \d+\) exited with code 05\]")
    s.server.wait_for(r"^child 5$")
    # The parent, detached, goes on by itself.
    s.server.wait_for(r"^parent: child exited 5$")


@pytest.mark.tpagent_only("gdbserver reports forks only with multiprocess ids too; checked on ours")
def test_without_multiprocess_ids_children_are_let_go(e2e):
    """A fork event must name the child's process: a gdb without multiprocess thread ids
    gets none, and tpagent lets each child go by itself, its breakpoints gone, as before."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("set remote multiprocess-feature-packet off", s.connect, "break child_work", "continue", connect=False)
    out = r.of("continue")
    assert "Detaching after fork" not in out and "Breakpoint 1," not in out, out
    assert_in_order(out, r"\[Inferior 1 \(.*\) exited normally\]")
    s.server.wait_for(r"^child 5$")


def test_kill_at_a_fork_catchpoint(e2e):
    """gdb's kill first kills the child it was told of (vKill;CHILD), then the parent."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("catch fork", "continue", "kill", "info inferiors")
    caught = re.search(r"Catchpoint 1 \(forked process (\d+)\)", r.of("continue"))
    assert caught, r.of("continue")
    assert "Can't kill" not in r.of("kill"), r.of("kill")
    assert_in_order(r.of("kill"), r"\[Inferior 1 \(process \d+\) killed\]")
    child = int(caught.group(1))
    assert wait_until(lambda: not os.path.exists(f"/proc/{child}")), f"child {child} still there"


def test_two_threads_fork_at_once(e2e):
    """Both forks reach gdb, one after the other, and each child is detached by gdb (none let
    go while its event still waited behind the other's)."""
    s = Scenario(e2e, "fork_threads")
    r = s.gdb("catch fork", "continue", "continue", "continue")
    caught = [re.search(r"Catchpoint 1 \(forked process (\d+)\)", r.of("continue", k)) for k in (0, 1)]
    assert all(caught), r.transcript
    children = {m.group(1) for m in caught}
    assert len(children) == 2, r.transcript
    detached = re.findall(r"\[Detaching after fork from child process (\d+)\]", r.transcript)
    assert sorted(detached) == sorted(children), r.transcript
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(r"^done$")
    assert len(re.findall(r"^child exited 7$", s.server.output, re.M)) == 2, s.server.output


def test_interrupt_a_followed_child(e2e):
    """Ctrl-C (SIGINT to gdb) stops the child gdb followed, which shares its parent's process
    group; the child then goes on to its end."""
    ready = e2e.tmp / "ready"
    s = Scenario(e2e, PROGRAM, str(ready))
    gdb = s.gdb_start("set follow-fork-mode child", "continue", "set var waiting = 0", "continue")
    e2e.wait_for_file(ready)
    gdb.proc.send_signal(signal.SIGINT)
    r = s.wait(gdb)
    assert_in_order(r.of("continue"), r"\[Attaching after Thread \S+ fork to child", r"received signal SIGINT")
    assert_in_order(r.of("continue", 1), r"\[Inferior 2 \(process \d+\) exited with code 05\]")


def test_detach_on_fork_off_keeps_both_processes(e2e):
    """detach-on-fork off: gdb keeps the child, stopped, as inferior 2 while the parent runs;
    switched to, the child runs to its own breakpoint and its end, and then the parent,
    resumed again, to its end."""
    s = Scenario(e2e, PROGRAM)
    r = s.gdb(
        "set detach-on-fork off", "break child_work", f"break {s.at('parent waits')}", "continue",
        "info inferiors", "inferior 2", "continue", "bt", "continue", "inferior 1", "continue",
    )
    assert_in_order(
        r.of("continue"), r"\[New inferior 2 \(process (\d+)\)\]",
        r'Thread 1\.1 "forker" hit Breakpoint 2(\.1)?, main \(',
    )
    assert_in_order(r.of("info inferiors"), r"\* 1\s+process \d+", r"  2\s+process \d+")
    assert_in_order(r.of("continue", 1), r'Thread 2\.1 "forker" hit Breakpoint 1(\.2)?, child_work \(n=4\)')
    assert_in_order(r.of("bt"), r"#0  child_work", r"in main \(")
    assert_in_order(r.of("continue", 2), r"\[Inferior 2 \(process \d+\) exited with code 05\]")
    s.server.wait_for(r"^child 5$")
    assert_in_order(r.of("continue", 3), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(r"^parent: child exited 5$")


def test_forks_in_many_threads_under_a_non_stop_target(e2e):
    """Eight threads fork 25 times each while gdb stops them at a breakpoint whose condition
    gdb evaluates, over a non-stop target with displaced stepping (as gdb's own
    forking-threads-plus-breakpoint.exp): gdb may resume every thread before it takes a fork's
    stop, and that fork's child must wait for gdb's detach, not run to its end first (gdb then
    said "Can't detach process")."""
    threads, forks = 8, 25
    s = Scenario(e2e, "fork_storm", str(threads), str(forks))
    r = s.gdb("maint set target-non-stop on", "set displaced-stepping on", s.connect,
              "set breakpoint condition-evaluation host", "break round_done if zero == 1",
              "continue", connect=False, timeout=240)
    out = r.of("continue")
    assert "Can't detach" not in out and "Breakpoint 1," not in out, out
    detached = re.findall(r"\[Detaching after fork from child process (\d+)\]", out)
    assert len(set(detached)) == threads * forks, out
    assert_in_order(out, r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(rf"^forks {threads * forks}$")
