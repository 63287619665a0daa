"""A trace that stops itself from inside a hit of a trap tracepoint -- its pass count
reached, or a linear buffer full -- removes the tracepoint while the hitting thread is
stopped on it. That thread (and any other one already trapped there) must go on with the
original instruction, exactly once: the program's own results stay right.

passcount.c: main calls traced(i) ITERATIONS times (or THREADS threads do, at once);
traced() counts its calls in `hits`, adds i to `total`, fills the 1024-byte `block` and
returns i * factor; the program prints "hits=H total=T sum=S right" (or "WRONG") and exits
with 0 when every value is right. The tracepoint's instruction loads `factor`: resumed
one byte into it, a thread computes a wrong product. Breakpoint 1 took gdb to main, so
the tracepoint is number 2.
"""

import re

from harness import assert_in_order, printed_value

PROGRAM = "passcount"
TO_MAIN = ("break main", "continue", "delete")


def program_right(server, text: str, iterations: int, threads: int = 1) -> None:
    """The program ran to its end and says its values are right."""
    each = iterations * (iterations - 1) // 2
    hits, total, total_sum = threads * iterations, threads * each, 3 * threads * each
    assert_in_order(text, rf"^\[Inferior 1 \(process {server.inferior_pid}\) exited normally\]$")
    server.wait_for(rf"hits={hits} total={total} sum={total_sum} right")


def test_passcount_stop_leaves_the_program_right(e2e):
    """passcount 5: the fifth hit stops the trace (tracepoint removed during that hit); the
    fifth call and the five after it run as if never traced."""
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, "10")
    define = e2e.command_file("trace traced", "actions", "collect n", "end", "passcount 5 2")
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstatus",
        "print hits",
        "print total",
        "tfind 4",
        "print n",
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, finished \(\)")
    assert_in_order(r.of("tstatus"), r"^Trace stopped by tracepoint 2\.$", r"^Collected 5 trace frames\.$")
    assert printed_value(r.of("print hits")) == "10"
    assert printed_value(r.of("print total")) == "45"
    assert r.of("tfind 4").startswith("Found trace frame 4, tracepoint 2\n"), r.of("tfind 4")
    assert printed_value(r.of("print n")) == "4"
    program_right(server, r.of("continue", 2), 10)


def test_full_buffer_stop_leaves_the_program_right(e2e):
    """A linear buffer of 8 KiB, 1 KiB collected per hit: a hit that finds the buffer full
    stops the trace (tfull) and removes the tracepoint; the program runs on untraced."""
    iterations, buffer_size = 50, 8192
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, str(iterations))
    define = e2e.command_file("trace traced", "actions", "collect n, block", "end")
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        f"set trace-buffer-size {buffer_size}",
        "set circular-trace-buffer off",
        "break finished",
        "tstart",
        "continue",
        "tstatus",
        "print hits",
        "print total",
        "tfind start",
        "print n",
        "print block[1023]",
        "tfind none",
        "delete",
        "continue",
        program=program,
    )
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, finished \(\)")
    match = assert_in_order(
        r.of("tstatus"), r"^Trace stopped because the buffer was full\.$", r"^Collected (\d+) trace frames\.$"
    )
    assert 1 < int(match[1].group(1)) < iterations
    assert printed_value(r.of("print hits")) == str(iterations)
    assert printed_value(r.of("print total")) == str(iterations * (iterations - 1) // 2)
    assert r.of("tfind start").startswith("Found trace frame 0, tracepoint 2\n"), r.of("tfind start")
    assert printed_value(r.of("print n")) == "0"
    assert printed_value(r.of("print block[1023]")) == "0 '\\000'"  # before the first fill
    program_right(server, r.of("continue", 2), iterations)


def test_passcount_stop_with_threads_on_the_tracepoint(e2e):
    """Four threads call traced() 50 times each, together: when the fifth hit stops the
    trace, other threads may already have trapped on the tracepoint, or be on their way
    through its displaced instruction. Every one of them goes on correctly."""
    iterations, threads = 50, 4
    program = e2e.program(PROGRAM)
    server = e2e.serve(program, str(iterations), str(threads))
    define = e2e.command_file("trace traced", "actions", "collect n", "end", "passcount 5 2")
    r = e2e.gdb(
        server.remote,
        *TO_MAIN,
        define,
        "break finished",
        "tstart",
        "continue",
        "tstatus",
        "print hits",
        "delete",
        "continue",
        program=program,
    )
    assert_in_order(r.of("continue", 1), r"Breakpoint 3, finished \(\)")
    match = assert_in_order(
        r.of("tstatus"), r"^Trace stopped by tracepoint 2\.$", r"^Collected (\d+) trace frames\.$"
    )
    assert int(match[1].group(1)) >= 5
    assert printed_value(r.of("print hits")) == str(iterations * threads)
    program_right(server, r.of("continue", 2), iterations, threads)
