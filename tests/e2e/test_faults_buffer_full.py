"""Faults: a small trace buffer filled by eight threads hitting one tracepoint at once.

faults_threads.c ROUNDS: eight threads, released together, each call work(id, round) for
round = 0 .. ROUNDS - 1 and count their calls in counts[id] (== round at the tracepoint, work's
first line). A frame collects id, round and counts: which call of which thread it holds.

- Linear: the buffer fills, the trace stops by itself, and tstatus says so in gdb's words for
  tfull ("Trace stopped because the buffer was full."). The frames are exactly what tstatus
  counts, every one whole and consistent (counts[id] == round), and each thread's frames are
  its first calls, with no gap and no repeat. The program is never held up by the full buffer:
  it does all its work, prints what it prints natively and exits as natively.
- Circular: the trace goes on; the buffer holds the newest frames, whole ("Buffer contains N
  trace frames (of M created total)", M the number of calls, 8 x ROUNDS), and each thread's
  frames are its last calls.

Both with trap tracepoints and with fast ones (FastTrace, the in-process agent).
"""

import os
import re

import pytest

from scenario import TO_MAIN, TO_THE_END, FastTrace, Scenario, ftrace, record_reliability, trace, trace_to

PROGRAM = "faults_threads"
THREADS = 8
# A trap tracepoint's frame holds gdb's whole register block (id and round are found from the
# frame base), the CPU's size: 0.6 KiB (no AVX) to 2.5 KiB (AVX-512), so from a dozen frames
# to some fifty, more than THREADS either way; a fast one's about 500 bytes: some sixty.
BUFFER_SIZE = 32768
FULL = os.environ.get("TPAGENT_FAULTS_FULL") == "1"
FULL_BUFFER = "Trace buffer full under 8 threads (linear and circular; trap and fast tracepoints)"
KINDS = pytest.mark.parametrize("fast", [False, True], ids=["trap", "fast"])
# "Trace buffer has FREE bytes of SIZE bytes free (P% full)."
BUFFER_LINE = re.compile(r"^Trace buffer has (\d+) bytes of (\d+) bytes free \((-?\d+)% full\)\.$", re.M)

pytestmark = pytest.mark.tpagent_only(
    "gdbserver keeps frames that no longer fit in the buffer without their data (tfind finds them, their values "
    "are not available)"
)


def rounds(fast: bool) -> int:
    """Calls per thread, many more with TPAGENT_FAULTS_FULL=1: a trap hit stops the program,
    a fast one costs it little."""
    if fast:
        return 200000 if FULL else 5000
    return 20000 if FULL else 1000


def run(e2e, fast: bool, circular: bool):
    """The trace run to all_done() (every thread done), its tstatus; tstop, tstatus again,
    a walk over every frame (id, round, counts[id]); then the program run to its end."""
    n = rounds(fast)
    s = (FastTrace if fast else Scenario)(e2e, PROGRAM, str(n))
    define = s.define((ftrace if fast else trace)(s.at("work_entry"), "collect id, round, counts"))
    walk = s.walk("id", "round", "counts[id]")
    buffer = (f"set trace-buffer-size {BUFFER_SIZE}", f"set circular-trace-buffer {'on' if circular else 'off'}")
    # gdb learns that a trace stopped by itself only when it asks: tstatus first.
    r = s.gdb(*TO_MAIN, define, *buffer, *trace_to("all_done", tstop=False), "tstop", "tstatus", walk, *TO_THE_END)
    r.stopped_at(1, r"^Breakpoint 3, all_done \(\)")
    # Never held up by the buffer: every call made, what it prints natively, its exit status.
    s.ends_as_natively(r.of("continue", 2))
    return s, r, walk, n


def buffer_figures_agree(status) -> None:
    """tstatus's buffer line: the size set, and no more free than that (0..100% full)."""
    line = BUFFER_LINE.search(status.text)
    assert line, status.text
    free, size, percent = map(int, line.groups())
    assert size == BUFFER_SIZE and 0 <= free <= size and 0 <= percent <= 100, line.group(0)


def rows_by_thread(rows) -> dict[int, list[int]]:
    """Each frame holds a call of its thread (counts[id] == round there), in frame order;
    the rounds of each thread's frames, in frame order."""
    assert [row[:2] for row in rows] == [(k, 2) for k in range(len(rows))], rows
    assert all(count == rnd and 0 <= tid < THREADS for _, _, tid, rnd, count in rows), rows
    return {tid: [rnd for _, _, t, rnd, _ in rows if t == tid] for tid in range(THREADS)}


@KINDS
def test_a_full_linear_buffer_stops_the_trace_not_the_program(e2e, fast):
    """The buffer fills: the trace stops by itself (tfull), every frame it counts is there and
    whole, each thread's frames are its first calls, and the program runs on to its end."""
    s, r, walk, n = run(e2e, fast, circular=False)
    full = r.trace_stopped("because the buffer was full", r.status().collected)
    assert not full.running
    buffer_figures_agree(full)
    assert r.of("tstop").strip() == "Trace is not running."
    # tstop changed nothing: still full, the same frames.
    assert (r.status(1).stopped, r.status(1).collected) == (full.stopped, full.collected), r.status(1)
    rows = r.frames(walk)
    # Exact: as many frames as tstatus counts, each whole (a value missing would end the walk).
    assert len(rows) == full.collected, (full, r.of(walk))
    assert THREADS < len(rows) < THREADS * n
    for tid, seen in rows_by_thread(rows).items():
        # Each thread's first calls, none missing, none twice: then nothing more of it.
        assert seen == list(range(len(seen))), (tid, seen)
    record_reliability(FULL_BUFFER, 1, len(rows))


@KINDS
def test_a_circular_buffer_keeps_the_newest_frames(e2e, fast):
    """The buffer wraps: the trace runs on, frames created count every call, the frames kept
    are the newest, whole, and each thread's are its last calls."""
    s, r, walk, n = run(e2e, fast, circular=True)
    running, stopped = r.status(0), r.status(1)
    assert (running.running, running.circular) == (True, True), running
    assert running.created == THREADS * n, running
    expected = ("by a tstop command", running.buffered, THREADS * n)
    assert (stopped.stopped, stopped.buffered, stopped.created) == expected, stopped
    buffer_figures_agree(running)
    buffer_figures_agree(stopped)
    rows = r.frames(walk)
    assert len(rows) == running.buffered, (running, r.of(walk))
    assert THREADS <= len(rows) < THREADS * n
    for tid, seen in rows_by_thread(rows).items():
        # A suffix of the thread's calls, up to its last (none kept if it ended early on).
        assert seen == list(range(n - len(seen), n)), (tid, seen)
    record_reliability(FULL_BUFFER, 1, len(rows))
