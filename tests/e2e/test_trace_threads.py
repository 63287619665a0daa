"""Four threads hit one tracepoint at the same time: every hit makes a frame, and each
frame holds the registers of the thread that hit it.

traced_threads.c: threads 0..3, released together, each call work(id, round) for
rounds 0..4; $fs_base (the thread pointer) differs from thread to thread.
"""

import re

from harness import assert_in_order

PROGRAM = "traced_threads"
THREADS = 4
ROUNDS = 5


def test_concurrent_hits(e2e):
    program = e2e.program(PROGRAM)
    server = e2e.serve(program)
    define = e2e.command_file("trace work", "actions", "collect id, round, $fs_base", "end")
    walk = e2e.command_file(
        "tfind start",
        "while $trace_frame != -1",
        '  printf "frame %d: id %d round %d fs_base %#lx\\n", $trace_frame, id, round, $fs_base',
        "  tfind",
        "end",
    )
    r = e2e.gdb(
        server.remote,
        "break main",
        "continue",
        "delete",
        define,
        "break all_done",
        "tstart",
        "continue",
        "tstop",
        "tstatus",
        walk,
        program=program,
    )
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, all_done \(\)")
    assert_in_order(r.of("tstatus"), rf"^Collected {THREADS * ROUNDS} trace frames\.$")
    rows = [
        (int(frame), int(tid), int(rnd), int(fs, 16))
        for frame, tid, rnd, fs in re.findall(
            r"^frame (\d+): id (\d+) round (\d+) fs_base 0x([0-9a-f]+)$", r.of(walk), re.M
        )
    ]
    assert [row[0] for row in rows] == list(range(THREADS * ROUNDS)), r.of(walk)
    # Each thread's rounds appear once each, in order (frames are in hit order).
    for tid in range(THREADS):
        assert [rnd for _, t, rnd, _ in rows if t == tid] == list(range(ROUNDS)), (tid, rows)
    # One thread pointer per thread, a different one for each.
    bases = {tid: {fs for _, t, _, fs in rows if t == tid} for tid in range(THREADS)}
    assert all(len(b) == 1 for b in bases.values()), bases
    assert len(set.union(*bases.values())) == THREADS, bases
