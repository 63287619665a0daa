"""Threads: gdb sees every thread, can switch between them, and breakpoints fire in each."""

import re

from harness import assert_in_order
from scenario import Scenario

PROGRAM = "threads"
THREAD_ROW = re.compile(r"^\*?\s+(\d+)\s+Thread ", re.MULTILINE)


def test_info_threads_and_switching(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("break all_threads_started", "continue", "info threads", "thread 3", "print $_thread", "bt", "thread 1",
              "bt 1", "kill")
    # main and three workers, all parked at a barrier or in all_threads_started.
    rows = THREAD_ROW.findall(r.of("info threads"))
    assert rows == ["1", "2", "3", "4"], r
    assert re.search(r"^\*\s+1\s+Thread .* all_threads_started \(\)", r.of("info threads"), re.MULTILINE), r

    assert_in_order(r.of("thread 3"), r"\[Switching to thread 3 \(Thread [^)]+\)\]")
    assert r.of("print $_thread").strip() == "$1 = 3"
    # A worker's stack ends in its start function, not in main.
    assert_in_order(r.of("bt"), r"worker_[ab] \(arg=0x[12]\)")
    assert not re.search(r" in main \(|^#\d+  main \(", r.of("bt"), re.MULTILINE), r
    assert_in_order(r.of("bt 1"), r"#0  all_threads_started \(\) at .*threads\.c")
    assert_in_order(r.of("kill"), r"\[Inferior 1 \(process \d+\) killed\]")


def test_breakpoints_in_two_thread_functions(e2e):
    s = Scenario(e2e, PROGRAM)
    r = s.gdb("break work_a", "break work_b", *["continue"] * 4)
    hits = []
    for i in range(3):
        match = re.search(
            r"Thread (\d+) \"threads\" hit Breakpoint ([12]), (work_[ab]) \(id=(\d)\)", r.of("continue", i)
        )
        assert match, r
        hits.append(match.groups())
    # work_a runs in worker 0 only, work_b in workers 1 and 2: each in a thread of its own.
    assert sorted((func, ident) for _, _, func, ident in hits) == [("work_a", "0"), ("work_b", "1"), ("work_b", "2")], r
    assert len({thread for thread, _, _, _ in hits}) == 3, r
    assert all(thread != "1" for thread, _, _, _ in hits), r
    assert_in_order(r.of("continue", 3), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(r"results 0 100 200")


def test_registers_of_each_hit_when_threads_hit_together(e2e):
    """Four threads reach one breakpoint together, round after round: a hit that waited behind
    another is reported at the next `continue`, and the registers gdb then reads (`g`, with no
    Hg: gdb takes the reply's thread as the one addressed) are that thread's. At `hit`'s first
    instruction %rdi is the id the thread passes, its thread-local my_id."""
    rounds = 10
    s = Scenario(e2e, "simultaneous_hits", str(rounds))
    check = "print $rdi == my_id ? 1 : 100 + $rdi"
    hits = ["continue", check] * (4 * rounds)
    r = s.gdb("break *hit", *hits, "delete", "continue", timeout=120)
    seen = [r.value(check, i) for i in range(4 * rounds)]
    assert seen == ["1"] * (4 * rounds), seen
    assert_in_order(r.of("continue", 4 * rounds), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(rf"^rounds {rounds}$")
