"""Four threads hit one tracepoint at the same time: every hit makes a frame, and each
frame holds the registers of the thread that hit it.

traced_threads.c: threads 0..3, released together, each call work(id, round) for
rounds 0..4; $fs_base (the thread pointer) differs from thread to thread.
"""

import shared
from scenario import Scenario


def test_concurrent_hits(e2e):
    shared.concurrent_hits(Scenario(e2e, "traced_threads"), "$fs_base")
