"""gdb's conditional breakpoints evaluated inside the program (`set breakpoint
condition-evaluation target`): tpagent replaces the breakpoint's instruction with a jump to a
pad, like a fast tracepoint's, that runs the compiled condition and stops the thread only where
it holds. Everything gdb expects of a breakpoint holds as with a breakpoint instruction (hit
counts, stepping from it, threads, non-stop, detach leaving the program's code as it was);
tpagent's log (--debug) says where a condition ran in the program. Run against both stubs:
gdbserver evaluates the same conditions at each stop."""

import re

import pytest

from harness import assert_in_order, printed_value
from scenario import TO_MAIN, Scenario

PROGRAM = "cond_breaks"
TARGET_EVAL = "set breakpoint condition-evaluation target"
EXITED = r"\[Inferior 1 \(process \d+\) exited normally\]"
IN_PROGRAM = r"breakpoint at 0x([0-9a-f]+): its condition runs in the program"
HELD = r"the condition of the breakpoint at 0x[0-9a-f]+ held in the program"


def total(calls: int) -> str:
    return rf"^total {calls * (calls - 1) // 2}$"


def calls_for(e2e, in_program: int, stopping: int) -> int:
    """As many calls as the stub takes in a few seconds: a false condition costs tpagent no
    stop, gdbserver one per call."""
    return stopping if e2e.is_gdbserver else in_program


def test_condition_runs_in_the_program(e2e):
    """Of 200000 calls (20000 for gdbserver), the one where the condition holds is the one
    stop; tpagent ran the condition in the program (`monitor breakpoints` says so), and
    stopped the thread there once."""
    calls = calls_for(e2e, 200000, 20000)
    k = calls - 1234
    s = Scenario(e2e, PROGRAM, str(calls), options=("--debug",))
    where = [] if e2e.is_gdbserver else ["monitor breakpoints"]
    # (Always inserted: gdb leaves the breakpoint in while the program is stopped, where
    # `monitor breakpoints` sees it.)
    r = s.gdb(*TO_MAIN, TARGET_EVAL, "set breakpoint always-inserted on",
              f"break hot if n == {k}", "continue", "print n", "info breakpoints", *where,
              "delete", "continue", timeout=120)
    assert_in_order(r.of("continue", 1), rf"Breakpoint 2, hot \(n={k}\)")
    assert r.value("print n") == str(k)
    assert_in_order(r.of("info breakpoints"), rf"stop only if n == {k} \(target evals\)",
                    r"breakpoint already hit 1 time")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(calls))
    if not e2e.is_gdbserver:
        assert_in_order(r.of("monitor breakpoints"),
                        r"Breakpoint at 0x[0-9a-f]+: its condition runs in the program")
        assert re.search(IN_PROGRAM, s.server.output), s.server.output[-3000:]
        assert len(re.findall(HELD, s.server.output)) == 1, s.server.output[-3000:]


def test_stepping_from_it_and_hitting_it_again(e2e):
    """Hits one after another, with `next` and `step` from the breakpoint between them: each
    step runs the instruction under the jump once (the total is intact), and each hit is
    counted."""
    calls = calls_for(e2e, 100000, 10000)
    every = calls // 5
    s = Scenario(e2e, PROGRAM, str(calls), options=("--debug",))
    r = s.gdb(*TO_MAIN, TARGET_EVAL, f"break hot if n % {every} == 7", "continue", "next",
              "next", "continue", "step", "bt 1", "finish", "continue", "stepi", "print $pc",
              "continue", "info breakpoints", "delete", "continue", timeout=120)
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=7\)")
    assert_in_order(r.of("next", 0), r"total \+= n")
    assert_in_order(r.of("continue", 2), rf"Breakpoint 2, hot \(n={every + 7}\)")
    assert_in_order(r.of("bt 1"), r"#0 .*pthread_mutex_lock|#0 .*lock")
    assert_in_order(r.of("continue", 3), rf"Breakpoint 2, hot \(n={2 * every + 7}\)")
    assert_in_order(r.of("continue", 4), rf"Breakpoint 2, hot \(n={3 * every + 7}\)")
    assert_in_order(r.of("info breakpoints"), r"already hit 4 times")
    assert_in_order(r.of("continue", 5), EXITED)
    s.server.wait_for(total(calls))


def test_in_four_threads(e2e):
    """Four threads share the calls; every call where the condition holds stops, whichever
    thread makes it, and nothing is lost or doubled."""
    calls = calls_for(e2e, 80000, 8000)
    every = calls // 4
    s = Scenario(e2e, PROGRAM, str(calls), "4")
    r = s.gdb(*TO_MAIN, TARGET_EVAL, f"break hot if n % {every} == 3", "continue", "print n",
              "continue", "print n", "continue", "print n", "continue", "print n",
              "info breakpoints", "delete", "continue", timeout=120)
    seen = sorted(int(r.value("print n", i)) for i in range(4))
    assert seen == [3, every + 3, 2 * every + 3, 3 * every + 3], seen
    assert_in_order(r.of("info breakpoints"), r"already hit 4 times")
    assert_in_order(r.of("continue", 5), EXITED)
    s.server.wait_for(total(calls))


def test_every_hit_of_four_threads_is_seen(e2e):
    """Four threads, the condition true at one call in 500 (100 for gdbserver), 80 hits: each
    `continue` stops at one of them, none is lost or seen twice (a thread stopped while its
    condition held inside the pad stops at the breakpoint at the next resume), and the
    program's total is intact."""
    every = 100 if e2e.is_gdbserver else 500
    calls = 80 * every
    s = Scenario(e2e, PROGRAM, str(calls), "4")
    hits = ["continue", "print n"] * 80
    r = s.gdb(*TO_MAIN, TARGET_EVAL, f"break hot if n % {every} == 1", *hits,
              "info breakpoints", "delete", "continue", timeout=300)
    seen = sorted(int(r.value("print n", i)) for i in range(80))
    assert seen == [k * every + 1 for k in range(80)], seen
    assert_in_order(r.of("info breakpoints"), r"already hit 80 times")
    assert_in_order(r.of("continue", 81), EXITED)
    s.server.wait_for(total(calls))


def test_over_the_non_stop_protocol(e2e):
    """`maint set target-non-stop on`: the stub stops only the thread where the condition
    holds (gdb stops the others itself), and all go on to the end."""
    calls = calls_for(e2e, 80000, 8000)
    k = calls // 2 + 1
    s = Scenario(e2e, PROGRAM, str(calls), "2")
    r = e2e.gdb("maint set target-non-stop on", s.connect, *TO_MAIN, TARGET_EVAL,
                f"break hot if n == {k}", "continue", "print n", "info threads", "delete",
                "continue", program=s.program, timeout=120)
    assert_in_order(r.of("continue", 1), rf"Breakpoint 2, hot \(n={k}\)")
    assert printed_value(r.of("print n")) == str(k)
    assert "(running)" not in r.of("info threads"), r.of("info threads")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(calls))


def test_code_is_the_programs_again(e2e):
    """While the breakpoint is in, something of the stub's is at its address (read around the
    stub: a jump, or a breakpoint instruction); deleted, the program's code there is its own
    again; detached, the program runs to its end."""
    calls = calls_for(e2e, 50000, 5000)
    s = Scenario(e2e, PROGRAM, str(calls))
    read = s.read_code("hot", 16)
    r = s.gdb(*TO_MAIN, read, TARGET_EVAL, "set breakpoint always-inserted on",
              "break hot if n == 4000", "continue", read, "delete", read, "detach")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=4000\)")
    original, patched, restored = (r.of(read, i).split() for i in range(3))
    assert len(original) == 16, r.of(read)
    assert patched != original
    assert restored == original
    s.server.wait_for(total(calls))


@pytest.mark.tpagent_only("`monitor breakpoints` and `monitor set inproc-breakpoints` are tpagent's")
def test_inproc_breakpoints_off(e2e):
    """`monitor set inproc-breakpoints off`: the next breakpoint stays an instruction whose
    condition tpagent evaluates at each stop, and `monitor breakpoints` says why; it stops
    where the condition holds all the same. Without a conditional breakpoint, `monitor
    breakpoints` says there is none."""
    s = Scenario(e2e, PROGRAM, "3000")
    r = s.gdb(*TO_MAIN, "monitor breakpoints", "monitor set inproc-breakpoints off", TARGET_EVAL,
              "set breakpoint always-inserted on", "break hot if n == 2500", "continue",
              "monitor breakpoints", "monitor set inproc-breakpoints on", "delete", "continue")
    assert_in_order(r.of("monitor breakpoints", 0), r"No breakpoint has a condition for tpagent")
    assert_in_order(r.of("monitor set inproc-breakpoints off"),
                    r"tpagent evaluates every breakpoint condition at each stop")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, hot \(n=2500\)")
    assert_in_order(r.of("monitor breakpoints", 1),
                    r"Breakpoint at 0x[0-9a-f]+: tpagent evaluates its condition at each stop: "
                    r"`monitor set inproc-breakpoints off`\.")
    assert_in_order(r.of("monitor set inproc-breakpoints on"),
                    r"Conditions run in the program where they can")
    assert_in_order(r.of("continue", 2), EXITED)
    s.server.wait_for(total(3000))


@pytest.mark.tpagent_only("`monitor breakpoints` is tpagent's")
def test_a_program_run_again(e2e):
    """Extended-remote: the program killed, `monitor breakpoints` lists nothing (gdb does not
    remove a killed program's breakpoints); run again, the breakpoint's condition runs in the
    new process, which stops where it holds, once."""
    s = Scenario.multi(e2e, PROGRAM)
    r = s.gdb(s.exec_file, TARGET_EVAL, "set breakpoint always-inserted on", "break main", "run",
              "break hot if n == 500", "continue", "monitor breakpoints", "kill",
              "monitor breakpoints", "run", "continue", "monitor breakpoints", "delete", "continue",
              timeout=120)
    for i in range(2):
        assert_in_order(r.of("continue", i), r"Breakpoint 2, hot \(n=500\)")
        assert_in_order(r.of("monitor breakpoints", 2 * i),
                        r"Breakpoint at 0x[0-9a-f]+: its condition runs in the program")
    assert_in_order(r.of("monitor breakpoints", 1), r"No breakpoint has a condition for tpagent")
    assert_in_order(r.of("continue", 2), EXITED)


@pytest.mark.tpagent_only("`monitor breakpoints` is tpagent's")
def test_a_program_that_execs(e2e):
    """A breakpoint whose condition runs in the program (never true), then the program execs
    another, where that breakpoint has no place: `monitor breakpoints` lists nothing of the
    old image. A conditional breakpoint in the new program runs its condition there, through
    an agent of the new image, and stops where it holds; the program ends as it would."""
    target = e2e.program("exec_target")
    s = Scenario(e2e, "execs", str(target))
    r = s.gdb(TARGET_EVAL, "set breakpoint always-inserted on", "catch exec", "break main",
              "break run_it if to_run == 0", "continue", "monitor breakpoints", "continue",
              "monitor breakpoints", "break target_only if n == 1", "continue",
              "monitor breakpoints", "continue", "continue")
    assert_in_order(r.of("continue"), r"Breakpoint 2, main")
    assert_in_order(r.of("monitor breakpoints"),
                    r"Breakpoint at 0x[0-9a-f]+: its condition runs in the program")
    assert_in_order(r.of("continue", 1), r"Catchpoint 1 \(exec'd")
    assert_in_order(r.of("monitor breakpoints", 1), r"No breakpoint has a condition for tpagent")
    assert_in_order(r.of("continue", 2), r"Breakpoint 2, main \(\)")
    assert_in_order(r.of("monitor breakpoints", 2),
                    r"Breakpoint at 0x[0-9a-f]+: its condition runs in the program")
    assert len(r.of("monitor breakpoints", 2).strip().splitlines()) == 1, r.of("monitor breakpoints", 2)
    assert_in_order(r.of("continue", 3), r"Breakpoint 4, target_only \(n=1\)")
    s.server.wait_for(r"^exec_target: 3$")
    assert_in_order(r.of("continue", 4), r"exited with code 03")


def test_following_the_forked_child(e2e):
    """`set follow-fork-mode child`: the breakpoint's condition holds in the parent, then in
    the child gdb follows (the child's copy of the code is the child's to run); the parent,
    detached, runs to its end with its forked and vforked children exiting with 0."""
    s = Scenario(e2e, "forks")
    r = s.gdb(*TO_MAIN, TARGET_EVAL, "set follow-fork-mode child", "break work if x == 2",
              "continue", "continue", "info inferiors", "continue")
    assert_in_order(r.of("continue", 1), r"Breakpoint 2, work \(x=2\)")
    assert_in_order(r.of("continue", 2), r"Detaching after fork from parent process \d+",
                    r"hit Breakpoint 2, work \(x=2\)")
    assert_in_order(r.of("info inferiors"), r"\* 2 +process \d+")
    assert_in_order(r.of("continue", 3), r"\[Inferior 2 \(process \d+\) exited normally\]")
    s.server.wait_for(r"children: fork 0 vfork 0 parent 30")
