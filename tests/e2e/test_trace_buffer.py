"""A small trace buffer: linear, it fills and stops the trace; circular, it drops the
oldest frames and the trace goes on.

traced.c runs 500 iterations; the tracepoint collects only the global counter (0 at
the first hit, then +1 per hit), so a frame is small and its counter tells which hit it
holds. 4096 bytes hold far fewer than 500 such frames.
"""

import re

from harness import assert_in_order

PROGRAM = "traced"
ITERATIONS = 500
BUFFER_SIZE = 4096


def run_small_buffer(e2e, circular: bool):
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, str(ITERATIONS))
    define = e2e.command_file("trace record_hit", "actions", "collect counter", "end")
    # Every frame's counter, "-" where the frame holds none; Python, because the CLI
    # cannot go on after reading an unavailable value.
    walk = e2e.command_file(
        "python",
        "counters = []",
        'gdb.execute("tfind start", to_string=True)',
        'while int(gdb.parse_and_eval("$trace_frame")) == len(counters):',
        "    try:",
        '        counters.append(str(int(gdb.parse_and_eval("counter"))))',
        "    except gdb.error:",
        '        counters.append("-")',
        '    gdb.execute("tfind", to_string=True)',
        'print("counters:", " ".join(counters))',
        "end",
    )
    r = e2e.gdb(
        server.remote,
        "break main",
        "continue",
        "delete",
        define,
        f"set trace-buffer-size {BUFFER_SIZE}",
        f"set circular-trace-buffer {'on' if circular else 'off'}",
        "break finished",
        "tstart",
        "continue",
        # gdb learns that a trace stopped by itself only when it asks: tstatus first.
        "tstatus",
        "tstop",  # frames can be looked at only once the trace is stopped
        walk,
        program=program,
    )
    counters = re.search(r"^counters: ([-\d ]*)$", r.of(walk), re.M).group(1).split()
    return r, counters


def test_linear_buffer_fills_and_stops(e2e):
    r, counters = run_small_buffer(e2e, circular=False)
    frames = len(counters)
    match = assert_in_order(
        r.of("tstatus"),
        r"^Trace stopped because the buffer was full\.$",
        r"^Collected (\d+) trace frames\.$",
        rf"^Trace buffer has (\d+) bytes of {BUFFER_SIZE} bytes free \(\d+% full\)\.$",
    )
    assert r.of("tstop").strip() == "Trace is not running."
    assert int(match[1].group(1)) == frames
    assert int(match[2].group(1)) < BUFFER_SIZE
    # The first hits are kept, the later ones were never recorded. (gdbserver leaves the
    # frames that did not fit any more in the buffer, without their data.)
    complete = [c for c in counters if c != "-"]
    assert 10 < len(complete) < ITERATIONS
    assert counters[: len(complete)] == [str(i) for i in range(len(complete))], counters
    assert frames - len(complete) <= 2, counters


def test_circular_buffer_keeps_the_newest(e2e):
    r, counters = run_small_buffer(e2e, circular=True)
    frames = len(counters)
    match = assert_in_order(
        r.of("tstatus"),
        r"^Trace is running on the target\.$",
        rf"^Buffer contains (\d+) trace frames \(of {ITERATIONS} created total\)\.$",
        r"^Trace buffer is circular\.$",
    )
    assert int(match[1].group(1)) == frames
    assert 10 < frames < ITERATIONS
    # Frame 0 is the oldest frame left; the last one is the last hit.
    assert counters == [str(i) for i in range(ITERATIONS - frames, ITERATIONS)], counters
