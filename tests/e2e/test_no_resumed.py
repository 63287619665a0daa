"""The `N` stop reply (no-resumed): gdb resumes one thread only (`set scheduler-locking on`)
and that thread exits while the others stay stopped. gdb must hear that nothing is left
running ("No unwaited-for children left.") instead of waiting for ever, and the program goes
on when the other threads are resumed. Runs against both stubs."""

import re

from harness import assert_in_order
from scenario import Scenario


def test_the_only_resumed_thread_exits(e2e):
    s = Scenario(e2e, "thread_exits")
    r = s.gdb(
        "break worker", "continue", "set scheduler-locking on", "continue", "info threads",
        "thread 1", "set scheduler-locking off", "continue", timeout=60,
    )
    assert_in_order(r.of("continue"), r'Thread 2 "thread_exits" hit Breakpoint 1, worker')
    assert_in_order(r.of("continue", 1), r"No unwaited-for children left\.")
    s.server.wait_for(r"^worker ends$")
    threads = re.findall(r"^\*?\s+\d+\s+Thread \S+", r.of("info threads"), re.M)
    assert len(threads) == 1 and re.match(rf"^\s+1\s+Thread {s.pid}\.{s.pid}$", threads[0]), r.of("info threads")
    assert_in_order(r.of("continue", 2), r"\[Inferior 1 \(process \d+\) exited normally\]")
    s.server.wait_for(r"^main ends$")
