"""Four threads hit one tracepoint at the same time: every hit makes a frame, and each
frame holds the registers of the thread that hit it.

traced_threads.c: threads 0..3, released together, each call work(id, round) for
rounds 0..4; $fs_base (the thread pointer) differs from thread to thread.
"""

from scenario import TO_MAIN, Scenario, trace, trace_to

PROGRAM = "traced_threads"
THREADS = 4
ROUNDS = 5


def test_concurrent_hits(e2e):
    s = Scenario(e2e, PROGRAM)
    define = s.define(trace("work", "collect id, round, $fs_base"))
    walk = s.walk("id", "round", "$fs_base")
    r = s.gdb(*TO_MAIN, define, *trace_to("all_done"), walk)
    r.stopped_at(1, r"Breakpoint 3, all_done \(\)")
    assert r.status().collected == THREADS * ROUNDS, r.status()
    rows = [(frame, tid, rnd, fs) for frame, _, tid, rnd, fs in r.frames(walk)]
    assert [row[0] for row in rows] == list(range(THREADS * ROUNDS)), r.of(walk)
    # Each thread's rounds appear once each, in order (frames are in hit order).
    for tid in range(THREADS):
        assert [rnd for _, t, rnd, _ in rows if t == tid] == list(range(ROUNDS)), (tid, rows)
    # One thread pointer per thread, a different one for each.
    bases = {tid: {fs for _, t, _, fs in rows if t == tid} for tid in range(THREADS)}
    assert all(len(b) == 1 for b in bases.values()), bases
    assert len(set.union(*bases.values())) == THREADS, bases
