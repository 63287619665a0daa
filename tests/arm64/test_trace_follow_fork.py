"""A trace that follows forks on the arm64 board (--trace-follow-fork): the x86-64 tests'
counterpart (tests/e2e/test_trace_follow_fork.py), on programs/fork_server.c's pre-fork mode.
Three workers forked during the run keep the fast tracepoint (its pad writes the parent's frames
in line; the workers' go through the agent's collector) and their frames go into the same
trace, each naming its process."""

import pytest

from board import BoardFastTrace
from scenario import TO_MAIN, ftrace, trace_to

pytestmark = pytest.mark.tpagent_only("gdbserver's trace is the one process's")

PROGRAM = "fork_server"


def test_prefork_workers_collect_into_the_trace(arm64):
    """35 calls: 5 the parent's, 10 each worker's from two threads, one the worker's main
    thread; the hit count the same; every worker serves right."""
    s = BoardFastTrace(arm64, PROGRAM, "prefork", "3", "5", program=arm64.board.payload / PROGRAM,
                       options=("--trace-follow-fork",))
    define = s.define(
        "tvariable $trace_pid", "tvariable $trace_thread",
        ftrace(s.at("serve_entry"), "collect $trace_pid, $trace_thread, worker, request"),
    )
    walk = s.walk("$trace_pid", "$trace_thread", "worker", "request")
    r = s.gdb(*TO_MAIN, define, *trace_to("all_served"), walk, "tfind none", "delete", "continue")
    rows = r.frames(walk)
    by = {}
    for _frame, _tp, pid, tid, worker, request in rows:
        by.setdefault(pid, []).append((tid, worker, request))
    assert sorted(len(v) for v in by.values()) == [5, 10, 10, 10], {p: len(v) for p, v in by.items()}
    assert [w for _t, w, _r in by[s.pid]] == [-1] * 5
    for pid, hits in by.items():
        if pid == s.pid:
            continue
        assert sorted(r_ for _t, _w, r_ in hits) == [0, 1, 2, 3, 4, 1000, 1001, 1002, 1003, 1004]
        threads = {t for t, _w, _r in hits}
        assert len(threads) == 2 and pid in threads, (pid, threads)
    assert r.status().collected == 35, r.status()
    s.server.wait_for(r"^served 3 bad 0$")
