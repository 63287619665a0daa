"""A small trace buffer: linear, it fills and stops the trace; circular, it drops the
oldest frames and the trace goes on.

traced.c runs 500 iterations; the tracepoint collects only the global counter (0 at
the first hit, then +1 per hit), so a frame is small and its counter tells which hit it
holds. 4096 bytes hold far fewer than 500 such frames.
"""

from scenario import TO_MAIN, Scenario, trace, trace_to

PROGRAM = "traced"
ITERATIONS = 500
BUFFER_SIZE = 4096


def run_small_buffer(e2e, circular: bool):
    s = Scenario(e2e, PROGRAM, str(ITERATIONS))
    define = s.define(trace("record_hit", "collect counter"))
    # Every frame's counter, "-" where the frame holds none.
    walk = s.walk_available("counter")
    buffer = (f"set trace-buffer-size {BUFFER_SIZE}", f"set circular-trace-buffer {'on' if circular else 'off'}")
    r = s.gdb(
        *TO_MAIN, define, *buffer,
        # gdb learns that a trace stopped by itself only when it asks: tstatus first.
        *trace_to("finished", tstop=False),
        "tstop",  # frames can be looked at only once the trace is stopped
        walk,
    )
    return r, r.available(walk)


def test_linear_buffer_fills_and_stops(e2e):
    r, counters = run_small_buffer(e2e, circular=False)
    frames = len(counters)
    status = r.status()
    assert status.stopped == "because the buffer was full", status
    assert (status.collected, status.size) == (frames, BUFFER_SIZE), status
    assert r.of("tstop").strip() == "Trace is not running."
    assert status.free < BUFFER_SIZE
    # The first hits are kept, the later ones were never recorded. (gdbserver leaves the
    # frames that did not fit any more in the buffer, without their data.)
    complete = [c for c in counters if c != "-"]
    assert 10 < len(complete) < ITERATIONS
    assert counters[: len(complete)] == [str(i) for i in range(len(complete))], counters
    assert frames - len(complete) <= 2, counters


def test_circular_buffer_keeps_the_newest(e2e):
    r, counters = run_small_buffer(e2e, circular=True)
    frames = len(counters)
    status = r.status()
    assert status.running and status.circular, status
    assert (status.buffered, status.created) == (frames, ITERATIONS), status
    assert 10 < frames < ITERATIONS
    # Frame 0 is the oldest frame left; the last one is the last hit.
    assert counters == [str(i) for i in range(ITERATIONS - frames, ITERATIONS)], counters
